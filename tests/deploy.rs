//! The deployment files (issue 24): the Kubernetes manifests under deploy/kubernetes pass the
//! API's own schemas, strictly and offline (kubernetes-validate, pinned in
//! tests/otg/requirements.txt, carries them), and hold what an agent and a controller need; the
//! Dockerfile's runtime stage installs every shared library the binary links; the manifests'
//! flags are ones the binary has. The virtualenv is scripts/setup.sh's: without it these tests
//! skip, and fail under CI=true.

use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

/// What an agent must hold beyond the default set, and nothing broader (the Dockerfile's header
/// says why each).
const AGENT_CAPABILITIES: [&str; 5] = ["NET_ADMIN", "NET_RAW", "BPF", "PERFMON", "IPC_LOCK"];
const NAMESPACE: &str = "linerate";
const AGENT_LABEL: (&str, &str) = ("linerate.io/agent", "true");
const API_PORT: u64 = 8443;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn manifests() -> Vec<PathBuf> {
    let dir = root().join("deploy/kubernetes");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml" || e == "yml"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no manifests in {}", dir.display());
    files
}

/// A program of the project's virtualenv, or None (skip) where there is none outside CI.
fn venv_program(name: &str) -> Option<PathBuf> {
    let program = root().join(".venv/bin").join(name);
    if program.exists() {
        return Some(program);
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "no {} in the virtualenv: scripts/setup.sh installs tests/otg/requirements.txt",
        program.display()
    );
    eprintln!("SKIPPED: no {} (run scripts/setup.sh)", program.display());
    None
}

/// Every YAML document of the manifests, as (file name, document), read by PyYAML (which
/// kubernetes-validate brings): no YAML crate in the workspace for a test.
fn documents() -> Option<Vec<(String, Value)>> {
    let python = venv_program("python")?;
    let script = "import json, sys, yaml\n\
        docs = [{'file': f, 'doc': d} for f in sys.argv[1:]\n\
                for d in yaml.safe_load_all(open(f)) if d is not None]\n\
        json.dump(docs, sys.stdout)";
    let out = Command::new(python)
        .arg("-c")
        .arg(script)
        .args(manifests())
        .output()
        .expect("run the virtualenv's python");
    assert!(
        out.status.success(),
        "the manifests are not YAML: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let docs: Vec<Value> = serde_json::from_slice(&out.stdout).expect("JSON from python");
    Some(
        docs.into_iter()
            .map(|d| {
                (
                    d["file"].as_str().unwrap_or_default().to_owned(),
                    d["doc"].clone(),
                )
            })
            .collect(),
    )
}

fn one_of_kind<'a>(docs: &'a [(String, Value)], kind: &str) -> &'a Value {
    let found: Vec<&Value> = docs
        .iter()
        .map(|(_, d)| d)
        .filter(|d| d["kind"] == kind)
        .collect();
    assert_eq!(
        found.len(),
        1,
        "want exactly one {kind}, have {}",
        found.len()
    );
    found[0]
}

fn strings(v: &Value) -> Vec<&str> {
    v.as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// Every `privileged` key anywhere below `v`, with its value.
fn privileged_values(v: &Value, found: &mut Vec<Value>) {
    match v {
        Value::Object(map) => {
            for (key, value) in map {
                if key == "privileged" {
                    found.push(value.clone());
                }
                privileged_values(value, found);
            }
        }
        Value::Array(items) => items.iter().for_each(|i| privileged_values(i, found)),
        _ => {}
    }
}

/// The value after `flag` in a container's args.
fn flag_value<'a>(args: &[&'a str], flag: &str) -> &'a str {
    let at = args
        .iter()
        .position(|a| *a == flag)
        .unwrap_or_else(|| panic!("no {flag} in {args:?}"));
    args.get(at + 1)
        .unwrap_or_else(|| panic!("{flag} has no value in {args:?}"))
}

/// The Secret whose volume is mounted where `file` lies, in `pod` (a pod spec).
fn secret_behind<'a>(pod: &'a Value, container: &Value, file: &str) -> &'a str {
    let mount = container["volumeMounts"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|m| {
            m["mountPath"]
                .as_str()
                .is_some_and(|p| file.starts_with(&format!("{}/", p.trim_end_matches('/'))))
        })
        .unwrap_or_else(|| panic!("no volume mounted above {file}"));
    assert_eq!(mount["readOnly"], true, "{file}'s mount is writable");
    let volume = pod["volumes"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|v| v["name"] == mount["name"])
        .unwrap_or_else(|| panic!("no volume {} in the pod", mount["name"]));
    volume["secret"]["secretName"]
        .as_str()
        .unwrap_or_else(|| panic!("{file} is not from a Secret: {volume}"))
}

/// The workload's pod spec, after checking that its selector picks its own template.
fn pod_spec(workload: &Value) -> &Value {
    let selector = workload["spec"]["selector"]["matchLabels"]
        .as_object()
        .expect("a matchLabels selector");
    let labels = &workload["spec"]["template"]["metadata"]["labels"];
    for (key, value) in selector {
        assert_eq!(
            &labels[key], value,
            "the selector does not pick the template"
        );
    }
    &workload["spec"]["template"]["spec"]
}

#[test]
fn manifests_pass_the_kubernetes_schemas_strictly_and_offline() {
    let Some(validator) = venv_program("kubernetes-validate") else {
        return;
    };
    let files = manifests();
    let out = Command::new(validator)
        .arg("--strict")
        .args(&files)
        .output()
        .expect("run kubernetes-validate");
    let report = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "kubernetes-validate failed:\n{report}"
    );
    // Each document was checked against a schema (an unknown kind only warns).
    let Some(docs) = documents() else { return };
    let passed = report.matches(" passed for resource ").count();
    assert_eq!(
        passed,
        docs.len(),
        "not every document validated:\n{report}"
    );
}

#[test]
fn agents_run_on_labelled_nodes_with_the_host_network_and_listed_capabilities() {
    let Some(docs) = documents() else { return };
    for (file, doc) in &docs {
        let mut privileged = Vec::new();
        privileged_values(doc, &mut privileged);
        assert!(
            privileged.iter().all(|v| *v == false),
            "{file}: privileged: true"
        );
        if doc["kind"] != "Namespace" {
            assert_eq!(doc["metadata"]["namespace"], NAMESPACE, "{file}");
        }
    }
    let agents = one_of_kind(&docs, "DaemonSet");
    let pod = pod_spec(agents);
    assert_eq!(pod["hostNetwork"], true);
    assert_eq!(pod["dnsPolicy"], "ClusterFirstWithHostNet");
    assert_eq!(pod["nodeSelector"][AGENT_LABEL.0], AGENT_LABEL.1);
    let container = &pod["containers"][0];
    let security = &container["securityContext"];
    assert_eq!(strings(&security["capabilities"]["drop"]), ["ALL"]);
    let added: BTreeSet<&str> = strings(&security["capabilities"]["add"])
        .into_iter()
        .collect();
    assert_eq!(added, BTreeSet::from(AGENT_CAPABILITIES));
    assert_eq!(security["allowPrivilegeEscalation"], false);

    let args = strings(&container["args"]);
    assert_eq!(args.first(), Some(&"agent"), "{args:?}");
    let listen = flag_value(&args, "--listen");
    assert!(listen.ends_with(&format!(":{API_PORT}")), "{listen}");
    let secret = secret_behind(pod, container, flag_value(&args, "--token-file"));
    assert!(defined_secret(&docs, secret), "no Secret {secret} defined");
    let ready = &container["readinessProbe"]["tcpSocket"]["port"];
    assert_eq!(container_port(container, ready), Some(API_PORT), "{ready}");
}

#[test]
fn the_controller_is_one_unprivileged_replica_behind_a_service() {
    let Some(docs) = documents() else { return };
    let controller = one_of_kind(&docs, "Deployment");
    assert_eq!(controller["spec"]["replicas"], 1);
    let pod = pod_spec(controller);
    assert_eq!(pod["securityContext"]["runAsNonRoot"], true);
    let container = &pod["containers"][0];
    let capabilities = &container["securityContext"]["capabilities"];
    assert_eq!(strings(&capabilities["drop"]), ["ALL"]);
    assert!(strings(&capabilities["add"]).is_empty(), "{capabilities}");
    let args = strings(&container["args"]);
    assert_eq!(args.first(), Some(&"serve"), "{args:?}");
    for flag in ["--token-file", "--agent-token-file"] {
        let secret = secret_behind(pod, container, flag_value(&args, flag));
        assert!(defined_secret(&docs, secret), "no Secret {secret} defined");
    }
    // The controller presents the token the agents expect.
    let agents = pod_spec(one_of_kind(&docs, "DaemonSet"));
    let agent_args = strings(&agents["containers"][0]["args"]);
    assert_eq!(
        secret_behind(
            agents,
            &agents["containers"][0],
            flag_value(&agent_args, "--token-file")
        ),
        secret_behind(pod, container, flag_value(&args, "--agent-token-file"))
    );

    let ready = &container["readinessProbe"]["tcpSocket"]["port"];
    assert_eq!(container_port(container, ready), Some(API_PORT), "{ready}");

    let service = one_of_kind(&docs, "Service");
    assert_eq!(service["spec"]["type"], "ClusterIP");
    let port = &service["spec"]["ports"][0];
    assert_eq!(port["port"], API_PORT);
    assert_eq!(
        container_port(container, &port["targetPort"]),
        Some(API_PORT)
    );
    let labels = &controller["spec"]["template"]["metadata"]["labels"];
    let selector = service["spec"]["selector"].as_object().expect("a selector");
    for (key, value) in selector {
        assert_eq!(
            &labels[key], value,
            "the Service does not select the controller"
        );
    }
    let agent_labels = &one_of_kind(&docs, "DaemonSet")["spec"]["template"]["metadata"]["labels"];
    assert!(
        selector.iter().any(|(k, v)| &agent_labels[k] != v),
        "the Service selects the agents too"
    );
}

fn defined_secret(docs: &[(String, Value)], name: &str) -> bool {
    docs.iter()
        .any(|(_, d)| d["kind"] == "Secret" && d["metadata"]["name"] == name)
}

/// A container port named or numbered `port`.
fn container_port(container: &Value, port: &Value) -> Option<u64> {
    container["ports"]
        .as_array()?
        .iter()
        .find(|p| p["name"] == *port || p["containerPort"] == *port)
        .and_then(|p| p["containerPort"].as_u64())
}

/// The shared libraries the binary links, besides the C runtime's, and the Debian package of
/// each that the Dockerfile's runtime stage must install.
#[cfg(target_os = "linux")]
const RUNTIME_PACKAGES: [(&str, &str); 2] = [("libelf.so", "libelf1"), ("libz.so", "zlib1g")];
#[cfg(target_os = "linux")]
const C_RUNTIME: [&str; 8] = [
    "linux-vdso",
    "ld-linux",
    "libc.so",
    "libm.so",
    "libgcc_s.so",
    "libpthread.so",
    "libdl.so",
    "librt.so",
];

#[test]
fn the_image_builds_in_two_stages_and_ships_every_library_the_binary_links() {
    let dockerfile = std::fs::read_to_string(root().join("Dockerfile")).expect("Dockerfile");
    let instructions: Vec<&str> = dockerfile
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .collect();
    let stages: Vec<&str> = instructions
        .iter()
        .filter(|l| l.starts_with("FROM "))
        .copied()
        .collect();
    assert_eq!(stages.len(), 2, "{stages:?}");
    assert!(stages[0].ends_with(" AS build") && stages[1].ends_with(" AS runtime"));
    let runtime_stage = dockerfile
        .split_once(stages[1])
        .expect("the runtime stage")
        .1;
    assert!(dockerfile.contains("cargo build --release --locked"));
    assert!(runtime_stage.contains("COPY --from=build "));
    assert!(
        instructions.iter().all(|l| !l.contains("--privileged")),
        "the Dockerfile asks for --privileged"
    );
    for capability in AGENT_CAPABILITIES {
        assert!(
            dockerfile.contains(&format!("--cap-add {capability}")),
            "the Dockerfile's run line lacks {capability}"
        );
    }
    #[cfg(target_os = "linux")]
    for library in linked_libraries(Path::new(env!("CARGO_BIN_EXE_linerate"))) {
        if C_RUNTIME.iter().any(|c| library.starts_with(c)) {
            continue;
        }
        let package = RUNTIME_PACKAGES
            .iter()
            .find(|(prefix, _)| library.starts_with(prefix))
            .map(|(_, package)| *package)
            .unwrap_or_else(|| {
                panic!("linerate links {library}: install its package in the Dockerfile's runtime stage and name it here")
            });
        assert!(
            runtime_stage.contains(package),
            "the runtime stage does not install {package} ({library})"
        );
    }
}

/// The sonames `ldd` lists for `binary`.
#[cfg(target_os = "linux")]
fn linked_libraries(binary: &Path) -> Vec<String> {
    let out = Command::new("ldd").arg(binary).output().expect("run ldd");
    assert!(out.status.success(), "ldd {}", binary.display());
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .map(|name| name.rsplit('/').next().unwrap_or(name).to_owned())
        .collect()
}

/// Every flag the manifests pass is one the binary's subcommand has. A binary without `agent`
/// predates the distributed mode whose flags the manifests use: skipped, a failure under CI.
#[test]
fn the_manifests_flags_are_the_binarys() {
    let Some(docs) = documents() else { return };
    let binary = env!("CARGO_BIN_EXE_linerate");
    let has_agent = Command::new(binary)
        .args(["agent", "--help"])
        .output()
        .expect("run linerate")
        .status
        .success();
    if !has_agent {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "this linerate has no agent command, which deploy/kubernetes runs"
        );
        eprintln!("SKIPPED: this linerate has no agent command yet");
        return;
    }
    for kind in ["DaemonSet", "Deployment"] {
        let container = &pod_spec(one_of_kind(&docs, kind))["containers"][0];
        let args = strings(&container["args"]);
        let help = Command::new(binary)
            .arg(args[0])
            .arg("--help")
            .output()
            .expect("run linerate --help");
        assert!(help.status.success(), "linerate {} --help", args[0]);
        let help = String::from_utf8_lossy(&help.stdout);
        for flag in args.iter().filter(|a| a.starts_with("--")) {
            let known = help.match_indices(flag).any(|(at, _)| {
                !help[at + flag.len()..]
                    .starts_with(|c: char| c.is_ascii_alphanumeric() || c == '-')
            });
            assert!(known, "linerate {} has no {flag}", args[0]);
        }
    }
}
