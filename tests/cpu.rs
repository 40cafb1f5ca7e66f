//! The report says where the time went: each worker's CPU time and core, each core's load.
#![cfg(target_os = "linux")]

mod common;

#[test]
fn a_worker_reports_its_cpu_time_core_and_the_cores_load() {
    let out = common::json(&common::linerate_ok(&[
        "tx", "--null", "-d", "500ms", "--cores", "0", "--json",
    ]));
    let cpu = &out["workers"][0]["cpu"];
    let busy = cpu["user_s"].as_f64().unwrap() + cpu["system_s"].as_f64().unwrap();
    // The null port never waits: its worker spins for the whole half second.
    assert!(busy > 0.1, "{cpu}");
    assert_eq!(cpu["last_core"], 0, "pinned to core 0: {cpu}");
    let cores = out["cores"].as_array().expect("per-core load");
    let core0 = cores.iter().find(|c| c["core"] == 0).expect("core 0");
    assert!(core0["busy_pct"].as_f64().unwrap() > 50.0, "{core0}");
    let text = common::linerate_ok(&["tx", "--null", "-d", "200ms", "--cores", "0"]);
    assert!(text.contains("worker 0 cpu: user"), "{text}");
    assert!(text.contains("busy over the run"), "{text}");
}
