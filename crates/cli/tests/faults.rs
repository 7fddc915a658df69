//! Fault injection end to end (#18): the built-in proxy's latency, reset and black hole seen
//! by `volley http`'s metrics, a service killed and restarted mid-load, the ledger and
//! `volley verify`. Loopback only; every run is bounded by -n or -z.

mod common;
use common::*;

fn proxy_flag(upstream: std::net::SocketAddr) -> String {
    format!("api=127.0.0.1:0->{upstream}")
}

/// `volley http` through a proxy named `api` in front of `t`, with `args` (and `--fault`s).
fn via_proxy(t: &volley_testserver::RunningTarget, args: &[&str]) -> std::process::Output {
    let proxy = proxy_flag(t.local_addr());
    let mut all = vec!["http", "http://${VOLLEY_PROXY_API}/", "--proxy", &proxy];
    all.extend_from_slice(args);
    run(&all)
}

fn p50(o: &std::process::Output) -> f64 {
    json(o)["latency_ms"]["p50"].as_f64().unwrap()
}

fn saved(path: &std::path::Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn proxy_latency_shows_in_p50_by_the_configured_amount() {
    let t = target();
    let base = via_proxy(&t, &["-n", "60", "-c", "2", "--json"]);
    assert_eq!(base.status.code(), Some(0), "{}", stderr(&base));
    let fault = ["--fault", "at=0s,proxy=api,latency=40ms"];
    let slow = via_proxy(&t, &["-n", "60", "-c", "2", "--json", fault[0], fault[1]]);
    assert_eq!(slow.status.code(), Some(0), "{}", stderr(&slow));
    // Measured against the no-fault p50 of the same test: the added latency, ±15 ms.
    let added = p50(&slow) - p50(&base);
    assert!(
        (25.0..=55.0).contains(&added),
        "p50 rose by {added} ms, configured 40 ms"
    );
}

#[test]
fn a_reset_fault_shows_as_the_reset_error_class() {
    let t = target();
    let o = via_proxy(
        &t,
        &[
            "-n",
            "20",
            "-c",
            "2",
            "--json",
            "--fault",
            "at=0s,proxy=api,reset",
        ],
    );
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let errors = &json(&o)["errors"];
    assert!(errors["reset"].as_u64().unwrap_or(0) > 0, "{errors}");
    assert!(errors.get("timeout").is_none(), "{errors}");
}

#[test]
fn a_black_hole_shows_as_the_timeout_error_class() {
    let t = target();
    let dir = scratch("blackhole");
    let save = dir.join("r.json");
    let o = via_proxy(
        &t,
        &[
            "-n",
            "4",
            "-c",
            "2",
            "--timeout",
            "300ms",
            "--json",
            "--fault",
            "at=0s,proxy=api,blackhole",
            "--save",
            save.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let errors = &json(&o)["errors"];
    assert!(errors["timeout"].as_u64().unwrap_or(0) > 0, "{errors}");
    // The fault is on the result's timeline, with the connections it held.
    let r = saved(&save);
    let ev = &r["events"][0];
    assert_eq!(ev["kind"], "blackhole", "{r}");
    assert!(ev["affected"].as_u64().unwrap() >= 2, "{ev}");
}

#[test]
fn an_after_n_trigger_fires_once_that_many_requests_completed() {
    let t = target();
    let dir = scratch("after-n");
    let save = dir.join("r.json");
    let o = via_proxy(
        &t,
        &[
            "-z",
            "3s",
            "-c",
            "1",
            "--quiet",
            "--fault",
            "after=20,for=500ms,proxy=api,latency=1ms",
            "--fault",
            "after=100000000,proxy=api,reset",
            "--save",
            save.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let r = saved(&save);
    let ev = r["events"].as_array().unwrap();
    // The first fired (at the first per-second merge), the second never did.
    assert_eq!(ev.len(), 1, "{r}");
    assert_eq!(ev[0]["kind"], "latency");
    assert!(ev[0]["at_s"].as_f64().unwrap() >= 0.9, "{}", ev[0]);
}

#[test]
fn a_script_reaches_the_proxy_through_its_env_and_the_fault_is_summarised() {
    let t = target();
    let dir = scratch("script-proxy");
    let script = dir.join("p.js");
    std::fs::write(
        &script,
        r#"import http from 'k6/http';
export const options = { iterations: 3, vus: 1 };
export default function () { http.get(`http://${__ENV.VOLLEY_PROXY_API}/get`); }"#,
    )
    .unwrap();
    let save = dir.join("r.json");
    let o = run(&[
        "run",
        script.to_str().unwrap(),
        "--proxy",
        &proxy_flag(t.local_addr()),
        "--fault",
        "at=0s,proxy=api,latency=1ms",
        "--save",
        save.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains("volley: proxy api listening on 127.0.0.1:"));
    assert!(
        stdout(&o).contains("fault: latency=1ms on api 0s–"),
        "{}",
        stdout(&o)
    );
    let r = saved(&save);
    let reqs = r["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["name"] == "http_reqs")
        .map(|m| m["sum"].as_f64().unwrap())
        .sum::<f64>();
    assert_eq!(reqs, 3.0, "{}", r["metrics"]);
    assert_eq!(r["events"][0]["affected"], 1, "{}", r["events"]);
}

#[test]
fn a_service_killed_and_restarted_mid_load_fails_in_the_window_and_recovers() {
    let port = closed_port();
    let exe = env!("CARGO_BIN_EXE_volley");
    let dir = scratch("kill-restart");
    let save = dir.join("r.json");
    let o = run(&[
        "http",
        &format!("http://127.0.0.1:{port}/"),
        "-z",
        "5s",
        "-c",
        "2",
        "--connect-timeout",
        "500ms",
        "--timeout",
        "1s",
        "--fault-target",
        &format!("svc=exec {exe} target --listen 127.0.0.1:{port} --threads 1"),
        "--fault",
        "at=2s,for=1s,kill=svc",
        "--save",
        save.to_str().unwrap(),
        "--quiet",
    ]);
    // Requests failed while the service was down: exit 3.
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let r = saved(&save);
    let ev = &r["events"][0];
    assert_eq!(ev["kind"], "kill", "{r}");
    assert!(ev["error"].is_null(), "{ev}");
    let secs = per_second(&r);
    assert!(secs.len() >= 5, "{secs:?}");
    // Second 1 (before the kill) is clean; the window (seconds 2-3) has failures; the last
    // second, after the restart, is clean again and serves requests.
    assert!(secs[1].0 > 0 && secs[1].1 == 0, "{secs:?}");
    assert!(secs[2].1 + secs[3].1 > 0, "{secs:?}");
    let last = secs[secs.len() - 1];
    assert!(last.0 > 0 && last.1 == 0, "{secs:?}");
}

#[test]
fn bad_fault_words_are_usage_errors_naming_the_token() {
    for (flag, value, says) in [
        (
            "--fault",
            "at=1s,proxy=api,latncy=5ms",
            "'latncy=5ms': unknown key",
        ),
        ("--fault", "at=1s,proxy=api,reset", "--proxy api="),
        ("--proxy", "api=127.0.0.1:0", "'->'"),
    ] {
        let o = run(&["http", "http://127.0.0.1:9/", "-n", "1", flag, value]);
        assert_eq!(o.status.code(), Some(2), "{flag} {value}");
        let e = stderr(&o);
        assert!(
            e.contains(says) && e.contains("hint:"),
            "{flag} {value}: {e}"
        );
    }
}

const ACK_SCRIPT: &str = r#"
import { ledger } from 'volley/ledger';
export const options = { iterations: 5, vus: 1 };
export default function () {
  ledger.ack('put', `k${__ITER}`, { size: __ITER });
}
"#;

/// A verifier: every id verified except those listed in $LOSE.
const VERIFIER: &str = r#"
while IFS= read -r line; do
  id=$(printf '%s' "$line" | sed -n 's/.*"id":"\([^"]*\)".*/\1/p')
  [ -z "$id" ] && continue
  case " $LOSE " in *" $id "*) echo "verify: lost $id";; *) echo "verify: verified $id";; esac
done
"#;

#[test]
fn the_ledger_records_acks_and_verify_fails_on_a_loss() {
    let dir = scratch("ledger");
    let script = dir.join("acks.js");
    std::fs::write(&script, ACK_SCRIPT).unwrap();
    let ledger = dir.join("ledger.ndjson");
    let o = run(&[
        "run",
        script.to_str().unwrap(),
        "--ledger",
        ledger.to_str().unwrap(),
        "-q",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = std::fs::read_to_string(&ledger).unwrap();
    assert_eq!(text.lines().count(), 5, "{text}");
    assert!(text.contains(r#""id":"k4""#), "{text}");
    let verify = |lose: &str| {
        volley()
            .args([
                "verify",
                "--ledger",
                ledger.to_str().unwrap(),
                "--",
                "sh",
                "-c",
                VERIFIER,
            ])
            .env("LOSE", lose)
            .output()
            .unwrap()
    };
    let ok = verify("");
    assert_eq!(ok.status.code(), Some(0), "{}{}", stdout(&ok), stderr(&ok));
    assert!(
        stdout(&ok).contains("acknowledged: 5, verified: 5, lost: 0"),
        "{}",
        stdout(&ok)
    );
    let bad = verify("k1 k3");
    assert_eq!(
        bad.status.code(),
        Some(6),
        "{}{}",
        stdout(&bad),
        stderr(&bad)
    );
    assert!(stdout(&bad).contains("lost: 2"), "{}", stdout(&bad));
    assert!(stdout(&bad).contains("lost: k1, k3"), "{}", stdout(&bad));
    // A verifier that says nothing proves nothing: everything counts as lost.
    let silent = volley()
        .args(["verify", "--ledger", ledger.to_str().unwrap(), "--", "true"])
        .output()
        .unwrap();
    assert_eq!(silent.status.code(), Some(6));
    assert!(stdout(&silent).contains("lost: 5"), "{}", stdout(&silent));
}

#[test]
fn ledger_ack_without_a_ledger_is_a_script_error_with_a_hint() {
    let dir = scratch("no-ledger");
    let script = dir.join("acks.js");
    std::fs::write(&script, ACK_SCRIPT).unwrap();
    let o = run(&["run", script.to_str().unwrap(), "-q"]);
    assert!(
        stderr(&o).contains("give --ledger FILE or options.ledger"),
        "{}",
        stderr(&o)
    );
}

const VERIFY_SCRIPT: &str = r#"
import { ledger } from 'volley/ledger';
export const options = { iterations: 4, vus: 1 };
export default function () {
  ledger.ack('put', `k${__ITER}`, { size: __ITER });
}
export function verify(entries) {
  for (const e of entries) {
    if (e.id === __ENV.LOSE) ledger.lost(e.id);
    else if (typeof e.size === 'number') ledger.verified(e.id); // the ack's fields arrive
  }
}
"#;

#[test]
fn run_verify_calls_the_scripts_verify_with_the_ledger_entries() {
    let dir = scratch("run-verify");
    let script = dir.join("v.js");
    std::fs::write(&script, VERIFY_SCRIPT).unwrap();
    let go = |lose: &str, ledger: &str| {
        let l = dir.join(ledger);
        let o = volley()
            .args([
                "run",
                script.to_str().unwrap(),
                "-q",
                "--verify",
                "--ledger",
            ])
            .arg(&l)
            .args(["-e", &format!("LOSE={lose}")])
            .output()
            .unwrap();
        (o.status.code(), stdout(&o) + &stderr(&o))
    };
    let (code, text) = go("", "a.ndjson");
    assert_eq!(code, Some(0), "{text}");
    assert!(
        text.contains("acknowledged: 4, verified: 4, lost: 0"),
        "{text}"
    );
    let (code, text) = go("k2", "b.ndjson");
    assert_eq!(code, Some(6), "{text}");
    assert!(
        text.contains("verified: 3, lost: 1") && text.contains("lost: k2"),
        "{text}"
    );
    // volley http has no script to call.
    let o = run(&["http", "http://127.0.0.1:9/", "-n", "1", "--verify"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

/// One ledger per process: a script's own `options.ledger` under `--ledger` elsewhere is
/// named in a warning (its acknowledgements go to the flag's file), never dropped silently.
#[test]
fn options_ledger_under_another_ledger_flag_is_named_in_a_warning() {
    let dir = scratch("ledger-both");
    let script = dir.join("acks.js");
    let own = dir.join("own.ndjson");
    std::fs::write(
        &script,
        format!(
            "import {{ ledger }} from 'volley/ledger';\n\
             export const options = {{ iterations: 2, vus: 1, ledger: {:?} }};\n\
             export default function () {{ ledger.ack('put', `k${{__ITER}}`); }}\n",
            own.to_str().unwrap()
        ),
    )
    .unwrap();
    let flag = dir.join("flag.ndjson");
    let o = run(&[
        "run",
        script.to_str().unwrap(),
        "-q",
        "--ledger",
        flag.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("options.ledger") && stderr(&o).contains("ignored"),
        "{}",
        stderr(&o)
    );
    let acks = std::fs::read_to_string(&flag).unwrap();
    assert_eq!(
        acks.lines().filter(|l| l.contains("\"put\"")).count(),
        2,
        "{acks}"
    );
    assert!(!own.exists(), "the script's own file is not created");
}

/// Regression: `volley summary FILE` printed the summary without the run's fault lines,
/// though the file holds the events (script and quick-mode results).
#[test]
fn volley_summary_prints_the_fault_lines_of_a_saved_run() {
    let t = target();
    let dir = scratch("summary-faults");
    let script = dir.join("p.js");
    std::fs::write(
        &script,
        r#"import http from 'k6/http';
export const options = { iterations: 2, vus: 1 };
export default function () { http.get(`http://${__ENV.VOLLEY_PROXY_API}/get`); }"#,
    )
    .unwrap();
    let (run_save, http_save) = (dir.join("run.json"), dir.join("http.json"));
    let fault = "at=0s,proxy=api,latency=1ms";
    let o = run(&[
        "run",
        script.to_str().unwrap(),
        "-q",
        "--proxy",
        &proxy_flag(t.local_addr()),
        "--fault",
        fault,
        "--save",
        run_save.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = via_proxy(
        &t,
        &[
            "-n",
            "2",
            "-c",
            "1",
            "--fault",
            fault,
            "--save",
            http_save.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    for save in [&run_save, &http_save] {
        let o = run(&["summary", save.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        assert!(
            stdout(&o).contains("fault: latency=1ms on api 0s–"),
            "{}: {}",
            save.display(),
            stdout(&o)
        );
    }
}
