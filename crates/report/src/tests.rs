//! Tests across modules on hand-built results whose numbers are easy to check by hand.

use std::path::Path;

use crate::*;

fn context(link_speed_mbps: Option<u64>) -> Context {
    Context {
        linerate_version: "0.1.0".into(),
        backend: "afxdp".into(),
        mode: "copy".into(),
        interface: "lr0".into(),
        driver: None,
        link_speed_mbps,
        os: "Debian GNU/Linux 13 (trixie)".into(),
        kernel: "6.12.0".into(),
        cpu_model: "Test CPU @ 3.0GHz".into(),
        cores: vec![0, 1],
        queues: vec![0, 1],
        date: "2025-06-01T12:00:00Z".into(),
        hostname: "bench".into(),
        duration_s: 5.0,
        repeat: 3,
        warmup_s: 1.0,
        backend_choice: None,
    }
}

/// Each repetition lasts 5 s, so `kpps` thousand frames per second means `kpps · 5000` frames.
fn sweep(link: Option<u64>, measured_at: MeasuredAt, points: &[(usize, &[f64])]) -> SweepResult {
    SweepResult {
        context: context(link),
        measured_at,
        interrupted: false,
        points: points
            .iter()
            .map(|&(size, rates)| SizePoint {
                size,
                repetitions: rates
                    .iter()
                    .map(|kpps| {
                        let frames = (kpps * 5000.0).round() as u64;
                        let sink = measured_at == MeasuredAt::Sink;
                        Repetition {
                            tx_frames: frames + 10,
                            tx_bytes: (frames + 10) * (size as u64 - 4),
                            rx_frames: sink.then_some(frames),
                            rx_bytes: sink.then_some(frames * (size as u64 - 4)),
                            elapsed_s: 5.0,
                        }
                    })
                    .collect(),
            })
            .collect(),
    }
}

fn lab_sweep() -> SweepResult {
    sweep(
        None,
        MeasuredAt::Sink,
        &[(64, &[1000.0, 1020.0, 980.0]), (1518, &[80.0, 82.0])],
    )
}

#[test]
fn summary_uses_rx_at_the_sink_and_the_median() {
    let r = lab_sweep();
    let p64 = r.point(64).unwrap();
    assert_eq!(p64.kpps_median(), 1000.0);
    assert_eq!(p64.kpps_min(), 980.0);
    assert_eq!(p64.kpps_max(), 1020.0);
    assert_eq!(p64.mbps_median(), 672.0);
    assert_eq!(p64.pct_of_line(None), None);
    // An even count takes the mean of the middle two.
    assert_eq!(r.point(1518).unwrap().kpps_median(), 81.0);
    // Without a sink the tx completions count, and they include the 10 extra frames.
    let tx = sweep(None, MeasuredAt::TxCompletions, &[(64, &[1000.0])]);
    assert_eq!(tx.points[0].kpps_median(), 1000.002);
    let pct = sweep(Some(1_000), MeasuredAt::Sink, &[(64, &[1000.0])]).points[0]
        .pct_of_line(Some(1_000))
        .unwrap();
    assert!((pct - 67.2).abs() < 1e-9, "{pct}");
}

#[test]
fn json_round_trips_and_carries_a_summary() {
    let r = sweep(
        Some(1_000),
        MeasuredAt::Sink,
        &[(64, &[1000.0]), (1518, &[81.0])],
    );
    let text = r.to_json();
    let back = SweepResult::from_json(&text, Path::new("x.json")).unwrap();
    assert_eq!(back, r);
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(value["format"], FORMAT);
    assert_eq!(value["measured_at"], "sink");
    assert_eq!(value["points"][0]["summary"]["kpps_median"], 1000.0);
    assert_eq!(value["points"][0]["summary"]["mbps"], 672.0);
    assert_eq!(value["points"][0]["repetitions"][0]["rx_frames"], 5_000_000);
    assert_eq!(value["context"]["cores"], serde_json::json!([0, 1]));
    let lab = lab_sweep().to_json();
    let value: serde_json::Value = serde_json::from_str(&lab).unwrap();
    assert!(value["points"][0]["summary"]["pct_of_line"].is_null());
}

#[test]
fn table_has_the_classic_columns_and_exact_rows() {
    let table = render_table(&lab_sweep());
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(
        lines[0],
        "| Size | Max Rate (Kpps) | Max Rate (Mbps) | % of line | min..max Kpps   | cores | mode |"
    );
    assert_eq!(
        lines[1],
        "| ---: | --------------: | --------------: | --------: | :-------------- | :---- | :--- |"
    );
    assert_eq!(
        lines[2],
        "|   64 |         1000.00 |          672.00 |       n/a | 980.00..1020.00 | 0,1   | copy |"
    );
    // 1538 B on the wire · 81 Kpps · 8 = 996.624 Mbps.
    assert_eq!(
        lines[3],
        "| 1518 |           81.00 |          996.62 |       n/a | 80.00..82.00    | 0,1   | copy |"
    );
    assert!(lines[4].contains("afxdp copy on lr0"), "{}", lines[4]);
    assert!(lines[4].contains("measured at the sink"), "{}", lines[4]);

    let with_link = render_table(&sweep(
        Some(1_000),
        MeasuredAt::Sink,
        &[(64, &[1000.0]), (1518, &[81.0])],
    ));
    // 1000 / 1488.095 = 67.2 %; 81 / 81.274 = 99.66 %.
    assert!(
        with_link.lines().nth(2).unwrap().contains(" 67.2 % |"),
        "{with_link}"
    );
    assert!(
        with_link.lines().nth(3).unwrap().contains(" 99.7 % |"),
        "{with_link}"
    );
}

#[test]
fn cores_are_written_as_ranges() {
    assert_eq!(format_cores(&[]), "-");
    assert_eq!(format_cores(&[3]), "3");
    assert_eq!(format_cores(&[0, 1]), "0,1");
    assert_eq!(format_cores(&[3, 0, 1, 2, 8, 10, 11, 12]), "0-3,8,10-12");
}

#[test]
fn csv_has_a_summary_row_per_size_and_a_raw_row_per_repetition() {
    let r = sweep(
        Some(1_000),
        MeasuredAt::Sink,
        &[(64, &[1000.0, 1020.0, 980.0]), (1518, &[81.0])],
    );
    assert_eq!(
        csv_summary(&r),
        "size,kpps_median,kpps_min,kpps_max,mbps,pct_of_line,line_rate_kpps,repetitions,measured_at,backend,mode,interface,cores\n\
         64,1000.000,980.000,1020.000,672.000,67.200,1488.095,3,sink,afxdp,copy,lr0,\"0,1\"\n\
         1518,81.000,81.000,81.000,996.624,99.662,81.274,1,sink,afxdp,copy,lr0,\"0,1\"\n"
    );
    let raw = csv_repetitions(&r);
    let lines: Vec<&str> = raw.lines().collect();
    assert_eq!(
        lines[0],
        "size,repetition,tx_frames,tx_bytes,rx_frames,rx_bytes,elapsed_s,kpps"
    );
    assert_eq!(
        lines[1],
        "64,1,5000010,300000600,5000000,300000000,5,1000.000"
    );
    assert_eq!(lines.len(), 5);
    let tx = csv_repetitions(&sweep(None, MeasuredAt::TxCompletions, &[(64, &[1.0])]));
    assert_eq!(tx.lines().nth(1).unwrap(), "64,1,5010,300600,,,5,1.002");

    let dir = tempfile::tempdir().unwrap();
    let [summary, reps] = write_csv(&r, &dir.path().join("s.csv")).unwrap();
    assert_eq!(reps, dir.path().join("s.repetitions.csv"));
    assert_eq!(std::fs::read_to_string(summary).unwrap(), csv_summary(&r));
    assert_eq!(std::fs::read_to_string(reps).unwrap(), raw);
}

#[test]
fn plots_are_written_as_svg_and_png() {
    let dir = tempfile::tempdir().unwrap();
    let linked = sweep(
        Some(10_000),
        MeasuredAt::Sink,
        &[(64, &[1000.0, 1100.0]), (512, &[900.0]), (1518, &[700.0])],
    );
    for (name, result) in [("lab", lab_sweep()), ("nic", linked.clone())] {
        let svg = dir.path().join(format!("{name}.svg"));
        plot_sweep(&result, &svg).unwrap();
        let text = std::fs::read_to_string(&svg).unwrap();
        assert!(text.contains("<svg"), "{name}");
        assert!(text.contains("Kpps"), "{name}");
        let png = dir.path().join(format!("{name}.PNG"));
        plot_sweep(&result, &png).unwrap();
        let bytes = std::fs::read(&png).unwrap();
        assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"), "{name}");
    }
    assert!(
        std::fs::read_to_string(dir.path().join("nic.svg"))
            .unwrap()
            .contains("line rate 10G")
    );
    // The legend names what was measured, not the lab's generated interface name.
    let lab_svg = std::fs::read_to_string(dir.path().join("lab.svg")).unwrap();
    assert!(
        lab_svg.contains("afxdp copy · bench · driver n/a"),
        "{lab_svg}"
    );

    let names = vec!["linux".to_string(), "macos".to_string()];
    let both = [lab_sweep(), linked];
    for ext in ["svg", "png"] {
        let path = dir.path().join(format!("cmp.{ext}"));
        plot_compare(&both, &names, &path).unwrap();
        assert!(std::fs::metadata(&path).unwrap().len() > 0);
    }

    let err = plot_sweep(&lab_sweep(), &dir.path().join("plot.pdf")).unwrap_err();
    assert!(err.to_string().contains("plot.pdf") && err.to_string().contains(".svg or .png"));
    let err = plot_sweep(&lab_sweep(), Path::new("/nonexistent-dir/p.svg")).unwrap_err();
    assert!(err.to_string().contains("/nonexistent-dir/p.svg"), "{err}");
}

fn a_and_b() -> [SweepResult; 2] {
    let a = sweep(
        None,
        MeasuredAt::Sink,
        &[
            (64, &[850.0]),
            (128, &[900.0]),
            (512, &[200.0]),
            (1518, &[81.0]),
        ],
    );
    // 1 GbE line rate: 1488.095 Kpps at 64 B (B is at 97.1 %), 234.962 at 512 B, 81.274 at 1518 B.
    let b = sweep(
        Some(1_000),
        MeasuredAt::Sink,
        &[(64, &[1445.0]), (512, &[234.9]), (1518, &[81.2])],
    );
    [a, b]
}

#[test]
fn compare_ratios_and_verdicts_match_the_numbers() {
    let results = a_and_b();
    let cmp = compare(&results, &[]).unwrap();
    assert_eq!(cmp.names, ["A", "B"]);
    assert_eq!(cmp.skipped_sizes, [128]);
    let sizes: Vec<usize> = cmp.rows.iter().map(|r| r.size).collect();
    assert_eq!(sizes, [64, 512, 1518]);
    let ratios: Vec<f64> = cmp.rows.iter().map(|r| r.ratios[0]).collect();
    for (got, want) in ratios.iter().zip([1.7, 234.9 / 200.0, 81.2 / 81.0]) {
        assert!((got - want).abs() < 1e-9, "{got} != {want}");
    }
    assert_eq!(cmp.rows[0].verdict, "B is 1.7× A at 64 B");
    assert_eq!(
        cmp.rows[1].verdict,
        "B reaches line rate from 512 B; B is 1.17× A at 512 B"
    );
    assert_eq!(cmp.rows[2].verdict, "equal within 2 %");
    assert_eq!(cmp.rows[0].pct_of_line[0], None);

    let table = cmp.render();
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(
        lines[0],
        "| Size | A Kpps | A % of line |  B Kpps | B % of line |   B/A | verdict                                               |"
    );
    assert_eq!(
        lines[2],
        "|   64 | 850.00 |         n/a | 1445.00 |      97.1 % |  1.7× | B is 1.7× A at 64 B                                   |"
    );
    assert!(table.contains("left out: 128 B"));
    let legend = cmp.render_with(&results);
    assert!(legend.contains("\nA: afxdp copy on lr0"), "{legend}");

    // With names and the slower one first, the verdict names the faster.
    let names = vec!["linux".to_string(), "macos".to_string()];
    let swapped = [results[1].clone(), results[0].clone()];
    let cmp = compare(&swapped, &names).unwrap();
    assert_eq!(cmp.rows[0].verdict, "linux is 1.7× macos at 64 B");
    assert!((cmp.rows[0].ratios[0] - 1.0 / 1.7).abs() < 1e-9);
}

#[test]
fn compare_refuses_what_cannot_be_compared() {
    let a = sweep(None, MeasuredAt::Sink, &[(64, &[1.0]), (128, &[1.0])]);
    let b = sweep(None, MeasuredAt::Sink, &[(256, &[1.0])]);
    let err = compare(&[a.clone(), b], &[]).unwrap_err().to_string();
    assert!(err.contains("share no frame size"), "{err}");
    assert!(
        err.contains("A has 64,128 B") && err.contains("B has 256 B"),
        "{err}"
    );
    assert!(compare(std::slice::from_ref(&a), &[]).is_err());
    assert!(compare(&[a.clone(), a], &["one".into()]).is_err());
}

#[test]
fn names_come_from_file_stems_unless_they_collide() {
    let paths = |p: &[&str]| p.iter().map(std::path::PathBuf::from).collect::<Vec<_>>();
    assert_eq!(
        names_from_paths(&paths(&["r/linux.json", "r/macos.json"])),
        ["linux", "macos"]
    );
    assert_eq!(
        names_from_paths(&paths(&["a/s.json", "b/s.json"])),
        ["A", "B"]
    );
}

#[test]
fn bad_files_are_refused_with_their_name() {
    let dir = tempfile::tempdir().unwrap();
    let cases: &[(&str, &str, &str)] = &[
        ("empty.json", "", "is empty"),
        ("blank.json", "  \n", "is empty"),
        ("corrupt.json", "{\"context\": ", "not valid JSON"),
        ("text.json", "hello", "not valid JSON"),
        ("array.json", "[1,2]", "not a sweep result"),
        ("other.json", "{\"submitted\": 5}", "missing field"),
        (
            "format.json",
            "{\"format\": \"linerate-run/1\"}",
            "linerate-run/1",
        ),
    ];
    for &(name, text, what) in cases {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        let err = SweepResult::load(&path).unwrap_err().to_string();
        assert!(err.contains(name), "{err}");
        assert!(err.contains(what), "{name}: {err}");
        assert!(err.contains("it must hold a sweep result"), "{name}: {err}");
    }
    let err = SweepResult::load(&dir.path().join("missing.json")).unwrap_err();
    assert!(err.to_string().contains("missing.json"));
    assert!(
        err.is_usage(),
        "a file named that is not there is the user's to fix"
    );

    // Valid shape but inconsistent: measured at the sink without rx counts.
    let mut r = lab_sweep();
    r.points[0].repetitions[1].rx_frames = None;
    let path = dir.path().join("norx.json");
    r.save(&path).unwrap();
    let err = SweepResult::load(&path).unwrap_err().to_string();
    assert!(
        err.contains("norx.json") && err.contains("64 B, repetition 2"),
        "{err}"
    );
}

#[test]
fn an_interrupted_sweep_says_so_in_the_file_and_the_table() {
    let mut r = lab_sweep();
    assert!(!render_table(&r).contains("INTERRUPTED"));
    assert!(!r.to_json().contains("interrupted"), "absent when false");
    r.interrupted = true;
    assert!(render_table(&r).contains("INTERRUPTED"));
    let back = SweepResult::from_json(&r.to_json(), Path::new("x.json")).unwrap();
    assert!(back.interrupted);
}

/// Live and AF_XDP copy swept together; live stopped (cut) before 1518 B.
fn two_backends() -> BackendSweeps {
    let mut live = sweep(
        None,
        MeasuredAt::Sink,
        &[(64, &[2000.0, 2200.0]), (1518, &[400.0])],
    );
    live.context.backend = "live".into();
    live.context.mode = "live (redirect)".into();
    let copy = sweep(None, MeasuredAt::Sink, &[(64, &[250.0, 250.0])]);
    BackendSweeps {
        sweeps: vec![live, copy],
        skipped: vec![Skipped {
            backend: "afpacket".into(),
            why: "no CAP_NET_RAW".into(),
        }],
    }
}

#[test]
fn a_backends_sweep_has_a_column_per_backend_everywhere() {
    let b = two_backends();
    assert_eq!(b.labels(), ["live", "afxdp copy"]);

    let table = b.render();
    let lines: Vec<&str> = table.lines().collect();
    assert!(lines[0].contains("| live Kpps |"), "{table}");
    assert!(lines[0].contains("| afxdp copy Kpps |"), "{table}");
    assert!(lines[0].contains("| afxdp copy/live |"), "{table}");
    // 2100 against 250 Kpps: the median of each, and their ratio.
    let row = lines.iter().find(|l| l.starts_with("|   64 |")).unwrap();
    assert!(row.contains("2100.00") && row.contains("250.00"), "{row}");
    assert!(
        row.contains("0.12×") && row.contains("live is 8.4× afxdp copy"),
        "{row}"
    );
    assert!(
        table.contains("not in every sweep, left out: 1518 B"),
        "{table}"
    );
    assert!(
        table.contains("afpacket: skipped, no CAP_NET_RAW"),
        "{table}"
    );
    assert!(table.contains(INTERLEAVED), "{table}");

    let json: serde_json::Value = serde_json::from_str(&b.to_json()).unwrap();
    assert_eq!(json["format"], BACKENDS_FORMAT);
    assert_eq!(json["backends"][1]["label"], "afxdp copy");
    assert_eq!(json["skipped"][0]["backend"], "afpacket");
    let at_64 = &json["points"][0];
    assert_eq!(at_64["size"], 64);
    assert_eq!(at_64["backends"]["live"]["summary"]["kpps_median"], 2100.0);
    assert_eq!(
        at_64["backends"]["afxdp"]["repetitions"][0]["rx_frames"],
        1_250_000
    );
    // At 1518 B only live measured: the other key is absent, not zero.
    assert_eq!(json["points"][1]["size"], 1518);
    assert!(json["points"][1]["backends"].get("afxdp").is_none());

    let csv = b.csv_summary();
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    for column in ["live_kpps_median", "afxdp_kpps_median", "afxdp_mode"] {
        assert!(header.contains(&column), "{header:?}");
    }
    let at = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let row_1518: Vec<&str> = lines.nth(1).unwrap().split(',').collect();
    assert_eq!(row_1518[at("live_kpps_median")], "400.000");
    assert_eq!(row_1518[at("afxdp_kpps_median")], "");
    let raw = b.csv_repetitions();
    assert!(raw.starts_with("backend,size,repetition,"), "{raw}");
    // 2 + 1 live runs and 2 AF_XDP runs, under a header.
    assert_eq!(raw.lines().count(), 6, "{raw}");
    assert!(raw.contains("\nafxdp,64,2,"), "{raw}");

    let dir = tempfile::tempdir().unwrap();
    let svg = dir.path().join("b.svg");
    plot_backends(&b, &svg).unwrap();
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(
        text.contains("live (redirect) · bench") && !text.contains("live live"),
        "legend of live"
    );
    assert!(text.contains("afxdp copy · bench"), "legend of afxdp");
}

#[test]
fn a_backends_sweep_of_one_backend_or_cut_short_still_reads() {
    let mut b = two_backends();
    for s in &mut b.sweeps {
        s.interrupted = true;
    }
    let table = b.render();
    assert_eq!(table.matches("INTERRUPTED").count(), 1, "{table}");
    // Only live left (the others skipped): its own table, headed by its name.
    b.sweeps.truncate(1);
    let table = b.render();
    assert!(
        table.starts_with("live:\n| Size | Max Rate (Kpps)"),
        "{table}"
    );
    assert_eq!(table.matches("INTERRUPTED").count(), 1, "{table}");
    assert!(
        table.contains("afpacket: skipped, no CAP_NET_RAW"),
        "{table}"
    );
}
