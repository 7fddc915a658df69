//! `volley suite`: real suites of real processes on loopback — the smoke path end to end,
//! readiness that never comes, Ctrl-C/SIGTERM mid-step, a failing seed, interpolation and
//! dependency order, bad files. Every service is checked gone afterwards by its process group.

mod common;

use common::{output_within, scratch, stderr, stdout, volley};
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

fn write_suite(dir: &Path, text: &str) -> PathBuf {
    let p = dir.join("volley.toml");
    std::fs::write(&p, text).unwrap();
    p
}

/// `volley suite run DIR -p PROFILE --results DIR/results`, bounded by `limit`.
fn suite_run(dir: &Path, profile: &str, limit: Duration) -> Output {
    output_within(
        volley().args(["suite", "run", dir.to_str().unwrap(), "-p", profile]),
        limit,
    )
}

/// A profile whose step leaves a mark: a test asserts it never ran.
const TOUCH_RAN: &str =
    "[profiles.smoke]\n[[profiles.smoke.steps]]\ncommand = \"touch '${suite.dir}/ran'\"\n";

/// Runs the smoke profile, which must fail with exit code 1; its stderr.
fn fails_with_1(dir: &Path) -> String {
    let o = suite_run(dir, "smoke", Duration::from_secs(30));
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    err
}

/// The one results directory a run made: DIR/results/SUITE/PROFILE/TIMESTAMP (the suite's
/// name is its directory's unless it names itself).
fn results_dir(dir: &Path, profile: &str) -> PathBuf {
    find_results(dir, profile).unwrap_or_else(|| panic!("no results under {}", dir.display()))
}

fn find_results(dir: &Path, profile: &str) -> Option<PathBuf> {
    let suite = std::fs::read_dir(dir.join("results"))
        .ok()?
        .next()?
        .ok()?
        .path();
    let mut all: Vec<PathBuf> = std::fs::read_dir(suite.join(profile))
        .ok()?
        .map(|e| e.unwrap().path())
        .collect();
    assert!(all.len() <= 1, "{all:?}");
    all.pop()
}

fn suite_json(results: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(results.join("suite.json")).unwrap()).unwrap()
}

/// Live processes in process group `pgid`.
fn group_alive(pgid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let Some(close) = stat.rfind(')') else {
            continue;
        };
        let f: Vec<&str> = stat[close + 1..].split_whitespace().collect();
        if f.first() != Some(&"Z") && f.get(2).and_then(|p| p.parse().ok()) == Some(pgid) {
            out.push(pid);
        }
    }
    out
}

fn service_pids(j: &serde_json::Value) -> Vec<u32> {
    j["services"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["pid"].as_u64().unwrap() as u32)
        .collect()
}

const SCRIPT: &str = r#"
import http from 'k6/http';
import { check } from 'k6';
export default function () {
  const r = http.get(`${__ENV.BASE_URL}/health`);
  check(r, { 'health is 200': (x) => x.status === 200 });
}
"#;

#[test]
fn smoke_profile_runs_end_to_end_and_tears_down() {
    let dir = scratch("suite-smoke");
    std::fs::write(dir.join("health.js"), SCRIPT).unwrap();
    write_suite(
        &dir,
        r#"
name = "smoke-test"

[services.api]
command = ["${volley}", "demo", "serve", "--listen", "127.0.0.1:${port}", "--data", "${results}/api-data"]
ready.http = "http://127.0.0.1:${port}/health"
timeout = "30s"

[services.target]
command = ["${volley}", "target", "--listen", "127.0.0.1:${port}"]
ready.log = "listening on"

[[seed]]
name = "seed"
command = ["${volley}", "demo", "seed", "--url", "${services.api.url}", "--small"]

[profiles.smoke]
env = { BASE_URL = "${services.api.url}" }
thresholds = { checks = "rate==1" }

[[profiles.smoke.steps]]
run = "health.js"
vus = 2
iterations = 20

[[profiles.smoke.steps]]
name = "blast"
http = "${services.target.url}/"
requests = 300
connections = 4
thresholds = { http_req_failed = "rate<0.01" }
"#,
    );
    let o = suite_run(&dir, "smoke", Duration::from_secs(90));
    assert_eq!(o.status.code(), Some(0), "{}\n{}", stdout(&o), stderr(&o));
    let res = results_dir(&dir, "smoke");
    for f in [
        "suite.json",
        "suite.md",
        "health.json",
        "health.summary.json",
        "health.html",
        "blast.json",
        "blast.summary.json",
        "blast.html",
        "logs/api.log",
        "logs/target.log",
        "logs/step-seed.log",
    ] {
        assert!(res.join(f).is_file(), "missing {f} in {}", res.display());
    }
    let j = suite_json(&res);
    assert_eq!(j["exit_code"], 0);
    let steps = j["steps"].as_array().unwrap();
    let names: Vec<&str> = steps.iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["seed", "health", "blast"]);
    assert_eq!(steps[1]["checks"]["passed"], 20, "{j}");
    assert_eq!(steps[1]["thresholds"]["passed"], 1);
    assert!(steps[2]["http_reqs_per_s"].as_f64().unwrap() > 0.0);
    // The services were monitored on the load steps' timeline.
    let health = std::fs::read_to_string(res.join("health.json")).unwrap();
    assert!(health.contains("monitor_rss_bytes") && health.contains("\"api\""));
    let md = std::fs::read_to_string(res.join("suite.md")).unwrap();
    assert!(
        md.contains("| health (run) |") && md.contains("| blast (http) |"),
        "{md}"
    );
    for pid in service_pids(&j) {
        assert!(group_alive(pid).is_empty(), "service group {pid} survived");
    }
}

#[test]
fn readiness_that_never_comes_names_the_probe_and_the_log_and_leaves_nothing() {
    let dir = scratch("suite-ready");
    write_suite(
        &dir,
        &(r#"
[services.slow]
command = "echo booting; echo the-last-words >&2; sleep 31 & echo $$ > '${results}/pid'; exec sleep 30"
ready.http = "http://127.0.0.1:${port}/health"
timeout = "1500ms"

"#
        .to_string()
            + TOUCH_RAN),
    );
    let err = fails_with_1(&dir);
    assert!(
        err.contains("service 'slow' was not ready after 1500ms"),
        "{err}"
    );
    assert!(err.contains("ready.http http://127.0.0.1:"), "{err}");
    assert!(
        err.contains("connection refused") || err.contains("Connection refused"),
        "{err}"
    );
    assert!(
        err.contains("the-last-words") && err.contains("slow.log"),
        "{err}"
    );
    assert!(
        !dir.join("ran").exists(),
        "no step runs without the services"
    );
    let res = results_dir(&dir, "smoke");
    let pid: u32 = std::fs::read_to_string(res.join("pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(group_alive(pid).is_empty(), "the service's group survived");
    let j = suite_json(&res);
    assert_eq!(j["exit_code"], 1);
    assert!(j["notes"][0].as_str().unwrap().contains("not ready"), "{j}");
}

#[test]
fn ctrl_c_and_sigterm_mid_step_tear_down_and_keep_the_results_so_far() {
    for (sig, name) in [(libc_sig::SIGINT, "int"), (libc_sig::SIGTERM, "term")] {
        let dir = scratch(&format!("suite-signal-{name}"));
        write_suite(
            &dir,
            r#"
[services.target]
command = ["${volley}", "target", "--listen", "127.0.0.1:${port}"]
ready.tcp = "127.0.0.1:${port}"

[services.family]
command = "sleep 41 & sleep 42 & echo up; wait"
ready.log = "^up$"

[profiles.smoke]
[[profiles.smoke.steps]]
name = "quick"
http = "${services.target.url}/"
requests = 100
connections = 2

[[profiles.smoke.steps]]
name = "long"
http = "${services.target.url}/"
duration = "40s"
connections = 2

[[profiles.smoke.steps]]
command = "touch '${suite.dir}/ran'"
"#,
        );
        let mut child = volley()
            .args(["suite", "run", dir.to_str().unwrap(), "-p", "smoke"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Wait until the long step is under way.
        let start = Instant::now();
        let res = loop {
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "the long step never started"
            );
            if let Some(res) = find_results(&dir, "smoke") {
                let j: serde_json::Value = std::fs::read_to_string(res.join("suite.json"))
                    .ok()
                    .and_then(|t| serde_json::from_str(&t).ok())
                    .unwrap_or_default();
                if j["steps"].as_array().is_some_and(|s| s.len() == 1) {
                    break res;
                }
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        std::thread::sleep(Duration::from_millis(500));
        // SAFETY: a plain syscall to our own child.
        unsafe { libc_sig::kill(child.id() as i32, sig) };
        let t = Instant::now();
        while child.try_wait().unwrap().is_none() {
            if t.elapsed() > Duration::from_secs(20) {
                let _ = child.kill();
                panic!("SIG{name} did not stop the suite");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let o = child.wait_with_output().unwrap();
        assert_eq!(o.status.code(), Some(105), "{}", stderr(&o));
        let j = suite_json(&res);
        assert_eq!(j["exit_code"], 105, "{j}");
        assert_eq!(j["interrupted"], true);
        let steps = j["steps"].as_array().unwrap();
        assert_eq!(steps[0]["name"], "quick");
        assert_eq!(steps[0]["exit_code"], 0);
        assert!(res.join("quick.json").is_file());
        // The interrupted step still wrote what it had.
        assert_eq!(steps[1]["exit_code"], 105, "{j}");
        assert!(res.join("long.json").is_file());
        assert!(!dir.join("ran").exists(), "no step after the interruption");
        for pid in service_pids(&j) {
            assert!(
                group_alive(pid).is_empty(),
                "service group {pid} survived SIG{name}"
            );
        }
    }
}

#[test]
fn a_failing_seed_stops_before_load_and_names_the_step() {
    let dir = scratch("suite-seed");
    write_suite(
        &dir,
        &(r#"
[[seed]]
name = "migrate"
command = "echo migration-broke >&2; exit 3"

[[seed]]
name = "never"
command = "touch '${suite.dir}/seed2'"

"#
        .to_string()
            + TOUCH_RAN),
    );
    let err = fails_with_1(&dir);
    assert!(
        err.contains("seed step 'migrate' failed; no load was run"),
        "{err}"
    );
    assert!(
        err.contains("exit status: 3") && err.contains("migration-broke"),
        "{err}"
    );
    assert!(!dir.join("ran").exists() && !dir.join("seed2").exists());
    let j = suite_json(&results_dir(&dir, "smoke"));
    assert_eq!(j["steps"].as_array().unwrap().len(), 1);
    assert_eq!(j["steps"][0]["name"], "migrate");
}

#[test]
fn services_start_in_dependency_order_with_interpolated_ports_and_env() {
    let dir = scratch("suite-order");
    // Declared out of order: c needs b, b needs a.
    write_suite(
        &dir,
        r#"
[services.c]
command = "echo \"c $PORT ${services.b.port} $GREETING\" >> '${results}/order'; echo up; exec sleep 30"
env = { GREETING = "${env.VOLLEY_SUITE_TEST_GREETING}" }
depends_on = ["b"]
ready.log = "up"

[services.a]
command = "echo \"a ${port}\" >> '${results}/order'; echo up; exec sleep 30"
ready.log = "up"

[services.b]
command = ["sh", "-c", "echo \"b ${port} ${services.a.port} ${services.c.url}\" >> '${results}/order'; echo up; exec sleep 30"]
depends_on = ["a"]
ready.log = "up"

[profiles.smoke]
[[profiles.smoke.steps]]
command = "echo \"step ${services.a.port} $X\" >> '${results}/order'"
env = { X = "${profile}" }
"#,
    );
    let o = volley()
        .args(["suite", "run", dir.to_str().unwrap(), "-p", "smoke"])
        .env("VOLLEY_SUITE_TEST_GREETING", "hello")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let res = results_dir(&dir, "smoke");
    let j = suite_json(&res);
    let port = |n: &str| {
        j["services"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == n)
            .unwrap()["url"]
            .as_str()
            .unwrap()
            .rsplit(':')
            .next()
            .unwrap()
            .to_string()
    };
    let (a, b, c) = (port("a"), port("b"), port("c"));
    let order = std::fs::read_to_string(res.join("order")).unwrap();
    assert_eq!(
        order,
        format!("a {a}\nb {b} {a} http://127.0.0.1:{c}\nc {c} {b} hello\nstep {a} smoke\n")
    );
    assert!(a != b && b != c && a != c);
    for pid in service_pids(&j) {
        assert!(group_alive(pid).is_empty());
    }
}

#[test]
fn bad_files_get_file_line_column_a_hint_and_exit_104() {
    let dir = scratch("suite-bad");
    let cases: [(&str, &str, &str); 5] = [
        (
            "[services.api]\ncommand = \"x\"\nready.htp = \"http://127.0.0.1:1/\"\n\n[profiles.smoke]\nsteps = [{ command = \"true\" }]\n",
            ":3:7: unknown field `htp`",
            "hint: check the spelling",
        ),
        (
            "[services.api]\ncommand = \"x\"\ntimeout = \"30 parsecs\"\n\n[profiles.smoke]\nsteps = [{ command = \"true\" }]\n",
            ":3:11: services.api.timeout: invalid duration",
            "hint: e.g. \"30s\"",
        ),
        (
            "[services.a]\ncommand = \"x\"\ndepends_on = [\"b\"]\n[services.b]\ncommand = \"x\"\ndepends_on = [\"a\"]\n\n[profiles.smoke]\nsteps = [{ command = \"true\" }]\n",
            ":1:1: services depend on each other in a cycle: a → b → a",
            "hint: remove one of these depends_on",
        ),
        (
            "[profiles.smoke]\nsteps = [{ http = \"${services.nope.url}/\" }]\n",
            ":2:10: profiles.smoke step 1: ${services.nope.url}: no service 'nope'",
            "hint: see docs/suite.md",
        ),
        (
            "[profiles.load]\nextends = \"smoke\"\n",
            ":2:11: profiles.load: extends 'smoke', which does not exist",
            "hint: the suite has: load",
        ),
    ];
    for (text, want, hint) in cases {
        let p = write_suite(&dir, text);
        for args in [
            vec!["suite", "check", p.to_str().unwrap()],
            vec!["suite", "run", p.to_str().unwrap(), "-p", "smoke"],
        ] {
            let o = volley().args(&args).output().unwrap();
            let err = stderr(&o);
            assert_eq!(o.status.code(), Some(104), "{args:?}\n{err}");
            assert!(
                err.contains(&format!("{}{want}", p.display())),
                "want {want}:\n{err}"
            );
            assert!(err.contains(hint), "want {hint}:\n{err}");
        }
    }
    // A profile that does not exist is a usage error naming the ones that do.
    let p = write_suite(&dir, "[profiles.smoke]\nsteps = [{ command = \"true\" }]\n");
    let o = volley()
        .args(["suite", "run", p.to_str().unwrap(), "-p", "lod"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("no profile 'lod'; the suite has: smoke"));
}

/// The two signals the tests send, without a libc dependency in the tests.
mod libc_sig {
    pub const SIGINT: i32 = 2;
    pub const SIGTERM: i32 = 15;
    extern "C" {
        pub fn kill(pid: i32, sig: i32) -> i32;
    }
}

#[test]
fn suite_services_holds_the_environment_until_ctrl_c() {
    use std::io::{BufRead, BufReader};
    let dir = scratch("suite-services");
    write_suite(
        &dir,
        r#"
[services.target]
command = ["${volley}", "target", "--listen", "127.0.0.1:${port}"]
ready.http = "http://127.0.0.1:${port}/"

[[seed]]
command = "touch '${suite.dir}/seeded'"

[profiles.smoke]
[[profiles.smoke.steps]]
command = "true"
"#,
    );
    let mut child = volley()
        .args(["suite", "services", dir.to_str().unwrap(), "--seed"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    // `NAME<TAB>URL<TAB>port N`: the service answers while held.
    let url = line
        .split('\t')
        .nth(1)
        .unwrap_or_else(|| panic!("{line}"))
        .to_string();
    assert!(url.starts_with("http://127.0.0.1:"), "{line}");
    assert!(dir.join("seeded").exists(), "--seed ran the seed steps");
    let port: u16 = url.rsplit(':').next().unwrap().parse().unwrap();
    std::thread::sleep(Duration::from_millis(300));
    assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_ok());
    // SAFETY: a plain syscall to our own child.
    unsafe { libc_sig::kill(child.id() as i32, libc_sig::SIGINT) };
    let t = Instant::now();
    while child.try_wait().unwrap().is_none() {
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "Ctrl-C did not stop it"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains("stopped every service"));
    assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_err());
}

#[test]
fn baselines_from_the_history_or_an_earlier_results_dir_fill_the_verdict() {
    let dir = scratch("suite-baseline");
    write_suite(
        &dir,
        r#"
[services.target]
command = ["${volley}", "target", "--listen", "127.0.0.1:${port}"]
ready.tcp = "127.0.0.1:${port}"

[profiles.smoke]
[[profiles.smoke.steps]]
name = "blast"
http = "${services.target.url}/"
duration = "1s"
connections = 2
"#,
    );
    let db = dir.join("history.db");
    let n = std::cell::Cell::new(0);
    let run = |extra: &[&str]| {
        n.set(n.get() + 1);
        // Each run its own results root: ROOT/SUITE/smoke/TIMESTAMP.
        let root = dir.join(format!("r{}", n.get()));
        let o = volley()
            .args(["suite", "run", dir.to_str().unwrap(), "-p", "smoke"])
            .args(["--history", db.to_str().unwrap(), "--results"])
            .arg(&root)
            .args(extra)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let suite = std::fs::read_dir(&root)
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path();
        let res = std::fs::read_dir(suite.join("smoke"))
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path();
        (suite_json(&res), res)
    };
    let (first, first_dir) = run(&[]);
    assert!(
        first["steps"][0]["verdict"].is_null(),
        "no --baseline, no verdict"
    );
    let (second, _) = run(&["--baseline", "last"]);
    let v = second["steps"][0]["verdict"].as_str().unwrap().to_string();
    assert!(v == "no regression" || v.starts_with("regressed: "), "{v}");
    let (third, _) = run(&["--baseline", first_dir.to_str().unwrap()]);
    let v = third["steps"][0]["verdict"].as_str().unwrap();
    assert!(v == "no regression" || v.starts_with("regressed: "), "{v}");
    // An unknown label has no baseline, and says so.
    let (fourth, _) = run(&["--baseline", "no-such-label", "--keep-going"]);
    assert_eq!(fourth["steps"][0]["verdict"], "no baseline");
}
