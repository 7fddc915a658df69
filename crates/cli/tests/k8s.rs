//! `volley k8s render` (docs/distributed.md): manifests from a real archive, validated against
//! the official Kubernetes schemas with the `kubernetes-validate` PyPI package when it is
//! installed (.ci/run installs it; the schema checks skip with a message otherwise), and the
//! errors bad input gets.

mod common;

use base64::Engine;
use common::{scratch, stderr, stdout, volley};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const SCRIPT: &str = r#"
import http from 'k6/http';
const data = open('./data.bin', 'b');
export const options = { vus: 2, duration: '5s', thresholds: { http_req_failed: ['rate<0.01'] } };
export default function () { http.post(`${__ENV.BASE_URL}/post`, data); }
"#;

/// An archive of a script that opens a `data_len`-byte file (incompressible-ish bytes).
fn archive(dir: &Path, data_len: usize) -> PathBuf {
    std::fs::write(dir.join("load.js"), SCRIPT).unwrap();
    let mut x: u32 = 0x9e37_79b9;
    let data: Vec<u8> = (0..data_len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x as u8
        })
        .collect();
    std::fs::write(dir.join("data.bin"), data).unwrap();
    let out = dir.join("load.tar");
    let o = volley()
        .arg("archive")
        .arg(dir.join("load.js"))
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "archive: {}", stderr(&o));
    out
}

fn render(tar: &Path, out: &Path, extra: &[&str]) -> Output {
    volley()
        .args(["k8s", "render"])
        .arg(tar)
        .arg("-o")
        .arg(out)
        .args(extra)
        .output()
        .unwrap()
}

/// `kubernetes-validate --strict` on `files` against Kubernetes `version`; None when the tool
/// is absent.
fn validate(files: &[PathBuf], version: &str) -> Option<Output> {
    let o = Command::new("kubernetes-validate")
        .args(["--strict", "--quiet", "-k", version])
        .args(files)
        .output();
    match o {
        Ok(o) => Some(o),
        Err(_) => {
            eprintln!("SKIP schema validation: kubernetes-validate is not installed (pip install kubernetes-validate)");
            None
        }
    }
}

/// The one `key: value` line's value (unquoted) in a rendered file.
fn field(text: &str, key: &str) -> String {
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with(&format!("{key}: ")))
        .unwrap_or_else(|| panic!("no {key} in\n{text}"));
    let v = line.split_once(": ").unwrap().1;
    v.trim_matches('"').to_string()
}

#[test]
fn rendered_manifests_validate_and_carry_the_archive_and_parallelism() {
    let dir = scratch("k8s-render");
    let tar = archive(&dir, 50_000);
    let out = dir.join("manifests");
    let o = render(
        &tar,
        &out,
        &[
            "--parallelism",
            "5",
            "-n",
            "load",
            "-e",
            "BASE_URL=http://checkout:8080",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("kubectl apply"), "{}", stderr(&o));
    let files: Vec<PathBuf> = ["configmap", "secret", "coordinator", "agents"]
        .iter()
        .map(|f| out.join(format!("{f}.yaml")))
        .collect();

    let cm = std::fs::read_to_string(&files[0]).unwrap();
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(field(&cm, "test.tar"))
        .unwrap();
    assert_eq!(
        bytes,
        std::fs::read(&tar).unwrap(),
        "the ConfigMap's archive"
    );

    let agents = std::fs::read_to_string(&files[3]).unwrap();
    assert_eq!(field(&agents, "completionMode"), "Indexed");
    assert_eq!(field(&agents, "completions"), "5");
    assert_eq!(field(&agents, "parallelism"), "5");
    assert!(
        agents.contains("- \"agent-$(JOB_COMPLETION_INDEX)\""),
        "{agents}"
    );
    assert!(agents.contains("- \"load-coordinator:6570\""), "{agents}");
    let coord = std::fs::read_to_string(&files[2]).unwrap();
    assert!(
        coord.contains("- \"--instances\"\n        - \"5\"\n"),
        "{coord}"
    );

    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&files[1]).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "the token's file is private");
    }

    // The oldest and newest schemas the package ships.
    for version in ["1.25", "1.37"] {
        let Some(v) = validate(&files, version) else {
            return;
        };
        assert!(
            v.status.success(),
            "Kubernetes {version}: {}{}",
            stdout(&v),
            stderr(&v)
        );
    }
    // The validator does reject what Kubernetes would (so the pass above means something).
    let broken = dir.join("broken.yaml");
    std::fs::write(
        &broken,
        agents.replace("completions: 5", "completions: \"5\""),
    )
    .unwrap();
    let v = validate(&[broken], "1.37").unwrap();
    assert!(
        !v.status.success(),
        "a string completions passed validation"
    );
}

#[test]
fn stdout_rendering_and_existing_secret() {
    let dir = scratch("k8s-stdout");
    let tar = archive(&dir, 100);
    let o = render(
        &tar,
        Path::new("-"),
        &[
            "--parallelism",
            "2",
            "--token-secret",
            "shared",
            "--name",
            "nightly",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert_eq!(text.matches("\nkind: ").count(), 4, "{text}"); // ConfigMap, Service, 2 Jobs
    assert!(!text.contains("kind: Secret"), "{text}");
    assert!(text.contains("name: shared\n"), "{text}");
    assert!(text.contains("name: nightly-agents\n"), "{text}");
}

#[test]
fn archive_over_a_configmaps_limit_is_refused_unless_in_the_image() {
    let dir = scratch("k8s-big");
    let tar = archive(&dir, 1_100_000);
    let o = render(&tar, &dir.join("m"), &["--parallelism", "2"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(e.contains("at most 1048576"), "{e}");
    assert!(e.contains("--archive-in-image"), "{e}");
    assert!(!dir.join("m").exists(), "nothing written");

    let o = render(
        &tar,
        &dir.join("m"),
        &[
            "--parallelism",
            "2",
            "--archive-in-image",
            "/volley/load.tar",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!dir.join("m/configmap.yaml").exists());
    let coord = std::fs::read_to_string(dir.join("m/coordinator.yaml")).unwrap();
    assert!(coord.contains("- /volley/load.tar\n"), "{coord}");
}

#[test]
fn bad_input_is_refused_with_the_flag_and_a_hint() {
    let dir = scratch("k8s-bad");
    let tar = archive(&dir, 100);
    let out = dir.join("m");
    let cases: &[(&[&str], &str)] = &[
        (&["--parallelism", "0"], "--parallelism"),
        (&["--parallelism", "2", "--name", "Load_Test"], "--name"),
        (
            &["--parallelism", "2", "--namespace", "Load"],
            "--namespace",
        ),
        (&["--parallelism", "1001"], "1 to 1000"),
        (
            &["--parallelism", "2", "--agent-cpu", "lots"],
            "--agent-cpu",
        ),
        (
            &["--parallelism", "2", "--agent-memory", "2Gi:1Gi"],
            "above the limit",
        ),
        (
            &["--parallelism", "2", "--node-selector", "pool"],
            "--node-selector",
        ),
        (&["--parallelism", "2", "-e", "NOVALUE"], "KEY=VALUE"),
        (&["--parallelism", "2", "--start-timeout", "soon"], "soon"),
    ];
    for (args, says) in cases {
        let o = render(&tar, &out, args);
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {e}");
        assert!(e.contains(says), "{args:?}: {e}");
    }
    assert!(!out.exists(), "nothing written on bad input");

    // Not an archive: exit 1 and how to make one.
    let o = render(&dir.join("load.js"), &out, &["--parallelism", "2"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("volley archive"), "{}", stderr(&o));
    let o = render(&dir.join("missing.tar"), &out, &["--parallelism", "2"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
}

#[test]
fn dockerfile_runs_volley_as_the_user_and_port_the_manifests_expect() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let df = std::fs::read_to_string(root.join("Dockerfile")).unwrap();
    assert!(
        df.contains("cargo build --release --locked -p volley"),
        "{df}"
    );
    assert!(df.contains("\nUSER 65532:65532\n"), "{df}");
    assert!(df.contains("\nEXPOSE 6570\n"), "{df}");
    assert!(
        df.contains("\nENTRYPOINT [\"/usr/local/bin/volley\"]\n"),
        "{df}"
    );
    let dir = scratch("k8s-dockerfile");
    let tar = archive(&dir, 10);
    let o = render(&tar, Path::new("-"), &["--parallelism", "1"]);
    let text = stdout(&o);
    assert!(text.contains("runAsUser: 65532\n"), "{text}");
    assert!(text.contains("containerPort: 6570\n"), "{text}");
}
