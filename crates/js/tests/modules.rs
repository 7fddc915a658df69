//! k6 conformance for the modules beyond the core — `k6/encoding`, `k6/crypto`,
//! `k6/execution`, `k6/data`, the jslib.k6.io built-ins, CommonJS — and the `k6/http`
//! extras (cookies, batch, multipart, expected statuses). Each script under `tests/k6/` runs
//! against the built-in target; outcomes are asserted from the run result.

mod common;
use common::*;

use std::collections::{BTreeMap, BTreeSet};
use volley_engine::RunControl;
use volley_js::{CliOptions, RunOutput};
use volley_metrics::{RunResult, TotalValue};

fn run(name: &str, t: &volley_testserver::RunningTarget) -> RunOutput {
    let mut env = BTreeMap::new();
    env.insert("BASE".to_string(), format!("http://{}", t.local_addr()));
    volley_js::run(
        &script(name),
        env,
        &CliOptions::default(),
        2,
        vec![],
        &RunControl::new(),
    )
    .unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// Every check passed, `total` of them; otherwise name the failed ones.
fn all_checks_pass(r: &RunResult, total: u64) {
    let failed: Vec<_> = r
        .metrics_named("checks")
        .filter(|m| !matches!(m.value, TotalValue::Rate { trues, total } if trues == total))
        .filter_map(|m| m.tags.get("check").cloned())
        .collect();
    assert!(failed.is_empty(), "failed checks: {failed:?}");
    assert_eq!(rate(r, "checks", &[]).1, total);
}

fn tag_values(r: &RunResult, name: &str, tag: &str) -> BTreeSet<String> {
    r.metrics_named(name)
        .filter_map(|m| m.tags.get(tag).cloned())
        .collect()
}

#[test]
fn encoding_and_crypto_match_known_vectors() {
    let t = target();
    let out = run("encoding_crypto.js", &t);
    all_checks_pass(&out.result, 20);
}

#[test]
fn execution_ids_are_unique_per_vu_and_iterations_per_test() {
    let t = target();
    let out = run("execution.js", &t);
    let r = &out.result;
    all_checks_pass(r, 30 * 7);
    assert_eq!(counter(r, "exec_seen", &[]), 30.0);
    let ids = tag_values(r, "exec_seen", "vu_id");
    assert!(
        ids.iter().all(|i| ["1", "2", "3"].contains(&i.as_str())) && ids.len() >= 2,
        "{ids:?}"
    );
    let iters = tag_values(r, "exec_seen", "iter");
    assert_eq!(iters.len(), 30, "iterationInTest is unique: {iters:?}");
    // exec.vu.tags land on the VU's samples.
    for m in r.metrics_named("exec_seen") {
        let id = m.tags.get("vu_id").unwrap();
        assert_eq!(m.tags.get("vu_label"), Some(&format!("vu-{id}")));
    }
}

#[test]
fn test_abort_stops_the_run() {
    let t = target();
    let out = run("abort.js", &t);
    assert_eq!(out.aborted.as_deref(), Some("enough"));
    assert!(
        out.result.meta.duration_s < 5.0,
        "{}",
        out.result.meta.duration_s
    );
}

#[test]
fn shared_array_is_built_once_and_read_by_every_vu() {
    let t = target();
    let out = run("shared_array.js", &t);
    let r = &out.result;
    all_checks_pass(r, 8 * 6);
    let m = r.metrics_named("shared_array_token").next().unwrap();
    match m.value {
        TotalValue::Trend {
            count, min, max, ..
        } => {
            assert_eq!(count, 8);
            assert_eq!(min, max, "every VU saw the one copy made in init");
        }
        _ => panic!("not a trend"),
    }
}

#[test]
fn jslib_built_ins_and_commonjs() {
    let t = target();
    let out = run("jslib_commonjs.js", &t);
    all_checks_pass(&out.result, 14);
}

#[test]
fn other_remote_modules_name_the_url_and_how_to_vendor_it() {
    let dir = volley_testkit::scratch("volley-remote", "t");
    let s = dir.join("remote.js");
    std::fs::write(
        &s,
        "import papa from 'https://jslib.k6.io/papaparse/5.1.1/index.js';\nexport default function () {}\n",
    )
    .unwrap();
    let err = match volley_js::run(
        &s,
        BTreeMap::new(),
        &CliOptions::default(),
        1,
        vec![],
        &RunControl::new(),
    ) {
        Err(e) => e.to_string(),
        Ok(_) => panic!("a remote import must not run"),
    };
    assert!(
        err.contains("https://jslib.k6.io/papaparse/5.1.1/index.js"),
        "{err}"
    );
    assert!(err.contains("relative path"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn http_extras_cookies_multipart_batch_expected_statuses() {
    let t = target();
    let out = run("http_extras.js", &t);
    let r = &out.result;
    all_checks_pass(r, 2 * 23);
    // expectedStatuses: 404 expected for one request, 418 for the VU, 302 not any more.
    assert_eq!(rate(r, "http_req_failed", &[("name", "exp404")]), (0, 2));
    assert_eq!(
        counter(
            r,
            "http_reqs",
            &[("name", "exp404"), ("expected_response", "true")]
        ),
        2.0
    );
    assert_eq!(rate(r, "http_req_failed", &[("name", "teapot")]), (0, 2));
    assert_eq!(rate(r, "http_req_failed", &[("name", "no302")]), (2, 2));
    // The url template names the request (as k6: every interpolation becomes `${}`).
    assert_eq!(counter(r, "http_reqs", &[("name", "${}/status/${}")]), 2.0);
    assert_eq!(counter(r, "http_reqs", &[("name", "batchpost")]), 2.0);
}

#[test]
fn test_abort_in_setup_is_an_abort_not_a_script_error() {
    let dir = volley_testkit::scratch("volley-abort", "setup");
    let s = dir.join("abort_setup.js");
    std::fs::write(
        &s,
        "import exec from 'k6/execution';\nexport function setup() { exec.test.abort('no data'); }\nexport default function () {}\n",
    )
    .unwrap();
    let out = volley_js::run(
        &s,
        BTreeMap::new(),
        &CliOptions::default(),
        1,
        vec![],
        &RunControl::new(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(out.aborted.as_deref(), Some("no data"));
    assert_eq!(counter(&out.result, "iterations", &[]), 0.0);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn batch_per_host_limits_requests_in_flight() {
    let t = target();
    let out = run("batch_limits.js", &t);
    all_checks_pass(&out.result, 2);
    assert_eq!(t.stats().requests, 4);
}

#[test]
fn jslib_stage_helpers_tag_samples_with_the_current_stage() {
    let t = target();
    let out = run("jslib_stages.js", &t);
    let r = &out.result;
    let (ok, total) = rate(r, "checks", &[("check", "index in range")]);
    assert!(total > 0 && ok == total, "{ok}/{total}");
    let (ok, total) = rate(r, "checks", &[("check", "throws without stages")]);
    assert!(total > 0 && ok == total, "{ok}/{total}");
    let pairs: BTreeSet<(String, String)> = r
        .metrics_named(volley_metrics::names::HTTP_REQS)
        .filter_map(|m| {
            Some((
                m.tags.get("stage")?.clone(),
                m.tags.get("stage_profile")?.clone(),
            ))
        })
        .collect();
    for (stage, profile) in [("0", "ramp-up"), ("1", "steady"), ("2", "ramp-down")] {
        assert!(
            pairs.contains(&(stage.to_string(), profile.to_string())),
            "stage {stage} / {profile} missing: {pairs:?}"
        );
    }
    for (stage, profile) in &pairs {
        assert!(["0", "1", "2"].contains(&stage.as_str()), "{pairs:?}");
        assert!(
            ["ramp-up", "steady", "ramp-down"].contains(&profile.as_str()),
            "{pairs:?}"
        );
    }
    // Every request of the ramping scenario is tagged (the constant one makes none).
    let untagged = r
        .metrics_named(volley_metrics::names::HTTP_REQS)
        .filter(|m| !m.tags.contains_key("stage"))
        .count();
    assert_eq!(untagged, 0);
}

#[test]
fn jslib_stage_helpers_read_top_level_stages_as_the_default_scenario() {
    // k6 turns top-level `stages` into a `default` ramping-vus scenario whose `startVUs` is
    // `vus` (null when unset: the first stage is then a ramp-up from 0, as k6-utils reports).
    let dir = volley_testkit::scratch("volley-stages", "t");
    let s = dir.join("top_stages.js");
    std::fs::write(
        &s,
        "import exec from 'k6/execution';\nimport { check, sleep } from 'k6';\n\
         import { getCurrentStageIndex, tagWithCurrentStageProfile } from \
         'https://jslib.k6.io/k6-utils/1.2.0/index.js';\n\
         export const options = { stages: [{ duration: '1s', target: 1 }] };\n\
         export default function () {\n  tagWithCurrentStageProfile();\n  \
         check(null, { 'stage 0': () => getCurrentStageIndex() === 0, \
         'ramp-up from vus unset': () => exec.vu.tags.stage_profile === 'ramp-up' });\n  sleep(0.2);\n}\n",
    )
    .unwrap();
    let out = volley_js::run(
        &s,
        BTreeMap::new(),
        &CliOptions::default(),
        1,
        vec![],
        &RunControl::new(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let (ok, total) = rate(&out.result, "checks", &[]);
    assert!(total >= 2 && ok == total, "{ok}/{total}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A VU installs only the natives of the modules its script imports: a script of `k6` and
/// `k6/http` gets no WebSocket, gRPC, data, execution, fs, csv or ledger natives (each
/// native is two objects per VU).
#[test]
fn a_vu_gets_the_natives_of_the_modules_it_imports_only() {
    let t = target();
    let out = run("natives_on_import.js", &t);
    let r = &out.result;
    // Two VUs, two iterations, two checks each.
    all_checks_pass(r, 4);
    assert_eq!(tag_values(r, "checks", "check").len(), 2);
}
