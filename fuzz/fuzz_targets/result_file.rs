//! The result-file reader (`summary`, `report`, `compare`, `merge` read what `--save`
//! wrote): never panics; an accepted file written and read again is the same file; each
//! metric's aggregate survives encode → decode; merging a run with itself works or errors;
//! the summaries render.
#![no_main]

use libfuzzer_sys::fuzz_target;
use volley_metrics::recorder::MetricDesc;
use volley_metrics::result::MetricTotal;
use volley_metrics::RunResult;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(r) = RunResult::from_json(text) else {
        return;
    };
    // Written and read again: the same file.
    let written = serde_json::to_string(&r).expect("a result serialises");
    let again = RunResult::from_json(&written)
        .unwrap_or_else(|e| panic!("a written result file does not read back: {e}\n{written}"));
    assert_eq!(serde_json::to_string(&again).unwrap(), written);

    // Every aggregate: decode → encode → decode is a fixed point.
    for m in &r.metrics {
        let Ok(a) = m.to_agg() else { continue };
        let d = MetricDesc {
            key: m.key(),
            kind: a.kind(),
            unit: m.unit,
        };
        let once = MetricTotal::from_agg(&d, &a);
        let a2 = once
            .to_agg()
            .unwrap_or_else(|e| panic!("re-encoded metric {} does not decode: {e}", m.name));
        let twice = MetricTotal::from_agg(&d, &a2);
        assert_eq!(
            once, twice,
            "metric {} is not stable through encode/decode",
            m.name
        );
    }

    if let Ok(m) = r.merge(&r) {
        let _ = serde_json::to_string(&m).unwrap();
    }
    if r.meta.mode == "run" {
        if let Ok(s) = volley_run::Summary::from_result(&r) {
            let _ = s.render_text();
        }
    } else if let Ok(s) = volley_engine::QuickSummary::from_result(&r) {
        let _ = s.render_text(false);
    }
});
