//! Quick mode through the run layer's path: `plan` + `run_vus_with` + `QuickFactory::result`,
//! against the built-in target.

use super::plan::split;
use super::*;
use crate::vus::run_vus_with;
use volley_http::TlsOptions;

fn config(url: String) -> QuickConfig {
    QuickConfig {
        url,
        method: "GET".into(),
        headers: Vec::new(),
        body: Body::Empty,
        connections: 3,
        duration: None,
        requests: None,
        timeout: Duration::from_secs(5),
        connect_timeout: Duration::from_secs(5),
        keepalive: true,
        tls: TlsOptions::default(),
        threads: 2,
        pipeline: 1,
        rate: None,
        max_connections: 0,
        http2: false,
        h2_streams: 1,
        command: vec!["volley".into(), "http".into()],
    }
}

fn target() -> volley_testserver::RunningTarget {
    volley_testserver::spawn(volley_testserver::TargetConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        threads: 1,
        tls: None,
        delay_all: None,
    })
    .expect("target starts")
}

#[test]
fn split_shares_exactly() {
    for total in [0u64, 1, 7, 10_000, 10_001] {
        for parts in 1..5 {
            let sum: u64 = (0..parts).map(|i| split(total, parts, i)).sum();
            assert_eq!(sum, total);
        }
    }
}

#[test]
fn a_run_layer_runs_quick_mode_as_a_plan_and_a_factory() {
    let t = target();
    let mut cfg = config(format!("{}/", t.url()));
    cfg.requests = Some(1001);
    let (plan, factory) = plan(&cfg, &MonitorPlan::default()).unwrap();
    // A VU per connection, one iteration each, on a self-paced scenario.
    assert_eq!(plan.scenarios.len(), 1);
    assert!(plan.scenarios[0].self_paced);
    assert_eq!(plan.max_vus(), 3);
    let r = run_vus_with(&plan, factory.clone(), &RunControl::new(), None).unwrap();
    let result = factory.result(r).unwrap();
    assert_eq!(result.meta.mode, RUN_KIND);
    assert_eq!(result.meta.name, cfg.url);
    assert_eq!(result.options["connections"], 3);
    assert_eq!(result.options["threads"], 2);
    // -n is exact across workers and VUs, and the target saw every request.
    assert_eq!(result.counter_sum(names::HTTP_REQS), 1001.0);
    assert_eq!(t.stats().requests, 1001);
    for m in &result.metrics {
        assert!(
            !matches!(
                m.name.as_str(),
                names::ITERATIONS | names::ITERATION_DURATION | names::VUS | names::VUS_MAX
            ),
            "{} recorded for a self-paced body",
            m.name
        );
    }
    t.shutdown();
}

#[test]
fn run_quick_reports_progress_each_second_and_keeps_the_deadline() {
    let t = target();
    let mut cfg = config(format!("{}/delay/5", t.url()));
    cfg.duration = Some(Duration::from_millis(2200));
    let mut ticks = Vec::new();
    let result = run_quick(&cfg, &RunControl::new(), |p| ticks.push(p.clone())).unwrap();
    assert!(ticks.len() >= 2, "{ticks:?}");
    assert!(ticks.windows(2).all(|w| w[0].requests <= w[1].requests));
    assert!(ticks.iter().all(|p| p.remaining.is_some()));
    let total = result.counter_sum(names::HTTP_REQS);
    assert_eq!(total as u64, t.stats().requests);
    assert!(ticks.last().unwrap().requests as f64 <= total);
    let d = result.meta.duration_s;
    assert!(
        (2.2..2.7).contains(&d),
        "rates over -z plus the last landing: {d}"
    );
    t.shutdown();
}
