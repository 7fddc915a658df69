//! Script options without running JS: `export const options` as JSON → `options::resolve`
//! (shortcuts, `scenarios` with every executor, run-wide settings) → the plan the engine and
//! the progress header read, and `options.thresholds` against the built-in metrics. Never
//! panics; a resolved plan is usable (at least one scenario, sane VU counts).
#![no_main]

use libfuzzer_sys::fuzz_target;
use volley_js::{options, CliOptions};
use volley_run::thresholds;

fuzz_target!(|data: &[u8]| {
    let Ok(v) = serde_json::from_slice::<serde_json::Value>(data) else {
        return;
    };
    let Ok(r) = options::resolve(&v, &CliOptions::default()) else {
        return;
    };
    assert!(!r.scenarios.is_empty(), "no scenario from {v}");
    for sc in &r.scenarios {
        let e = &sc.executor;
        // VUs created up front never exceed the most the executor may use.
        assert!(e.initial_vus() <= e.max_vus(), "{}: {e:?}", sc.name);
        let _ = e.duration();
        let _ = e.total_iterations();
        let _ = e.arrivals();
        let _ = e.describe();
        let _ = sc.max_end();
        let _ = sc.describe();
    }
    let _ = volley_run::progress::header("script.js", &r.scenarios);
    if let Some(t) = &r.thresholds {
        let _ = thresholds::parse(t, |name| {
            volley_metrics::names::BUILTIN
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, k)| *k)
        });
    }
});
