//! The run layer runs any body: a fake one (no JavaScript, no network) records k6's request
//! metrics, and `execute` judges thresholds, streams the per-sample outputs through the plan,
//! tells observers, and maps the ending to k6's exit code.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use volley_engine::executor::{Executor, Scenario, SharedIterations};
use volley_engine::vus::{Outcome as Step, Phase, VuBody, VuFactory, VuPlan, WorkerEnv};
use volley_engine::RunControl;
use volley_metrics::{MetricKey, MetricKind, RunMeta, Unit};
use volley_run::outputs::{OutSpec, Outputs};
use volley_run::{execute, Observer, Outcome, RunSpec};

/// One "request" of 50 ms per iteration; setup fails when asked to.
struct Body {
    env: WorkerEnv,
    setup_fails: bool,
    paced: bool,
}

impl Body {
    fn record(&self) {
        let mut rec = self.env.recorder.borrow_mut();
        let reqs = rec.handle(
            MetricKey::new(volley_metrics::names::HTTP_REQS),
            MetricKind::Counter,
            Unit::Default,
        );
        let dur = rec.handle(
            MetricKey::new(volley_metrics::names::HTTP_REQ_DURATION),
            MetricKind::Trend,
            Unit::Time,
        );
        rec.add(reqs, 1.0);
        rec.trend_us(dur, 50_000);
    }
}

impl VuBody for Body {
    async fn run(&mut self, phase: Phase) -> Step {
        match phase {
            Phase::Setup if self.setup_fails => Step::Abort("setup says no".into()),
            Phase::Iteration(_) => {
                self.record();
                // Waits as a request would: the worker's ticker runs meanwhile.
                if self.paced {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                Step::Ok
            }
            _ => Step::Ok,
        }
    }
}

struct Factory {
    setup_fails: bool,
    /// What `exec.test.abort()` would report.
    aborted: AtomicBool,
}

impl VuFactory for Factory {
    type Body = Body;
    fn create(&self, env: &WorkerEnv, _: u64, _: Option<usize>) -> Result<Body, String> {
        Ok(Body {
            env: env.clone(),
            setup_fails: self.setup_fails,
            paced: true,
        })
    }
    fn aborted_by_body(&self) -> bool {
        self.aborted.load(Ordering::Relaxed)
    }
}

#[derive(Default)]
struct Seen {
    ended: AtomicUsize,
    finished: AtomicUsize,
}

struct Watch(Arc<Seen>);

impl Observer for Watch {
    fn ended(&mut self, _: &volley_engine::vus::VuRunResult, _: &VuPlan) {
        self.0.ended.fetch_add(1, Ordering::Relaxed);
    }
    fn finish(&mut self, r: &volley_metrics::RunResult) {
        assert!(!r.thresholds.is_empty(), "observers see the judged result");
        self.0.finished.fetch_add(1, Ordering::Relaxed);
    }
}

fn spec(factory: Factory, outs: &[OutSpec], seen: &Arc<Seen>) -> RunSpec<Factory> {
    let plan = VuPlan {
        scenarios: vec![Scenario::new(
            "default",
            Executor::SharedIterations(SharedIterations {
                vus: 2,
                iterations: 20,
                max_duration: Duration::from_secs(30),
            }),
        )],
        threads: 2,
        ..Default::default()
    };
    let ths = volley_run::thresholds::parse(
        &serde_json::json!({
            "http_reqs": ["count==20"],
            "http_req_duration": ["p(95)<10"],
        }),
        volley_metrics::names::builtin_kind,
    )
    .unwrap();
    RunSpec {
        plan,
        factory: Arc::new(factory),
        thresholds: ths,
        outputs: Outputs::start(outs).unwrap(),
        json_out: None,
        observers: vec![Box::new(Watch(seen.clone()))],
        meta: RunMeta::new("fake", "fake body", vec![]),
        options: Default::default(),
        late_options: Some(Box::new(|o| {
            o.insert("late".into(), true.into());
        })),
        result_of: None,
    }
}

#[test]
fn a_js_free_body_runs_to_a_judged_result_with_k6s_exit_code() {
    let dir = volley_testkit::scratch("volley-run", "exec");
    let csv = dir.join("samples.csv");
    let seen = Arc::new(Seen::default());
    let f = Factory {
        setup_fails: false,
        aborted: AtomicBool::new(false),
    };
    let fin = execute(
        spec(f, &[OutSpec::Csv(csv.clone())], &seen),
        &RunControl::new(),
    )
    .unwrap();
    let r = &fin.result;
    assert_eq!(r.counter_sum("http_reqs"), 20.0);
    assert_eq!(r.meta.mode, "fake");
    assert_eq!(r.options["executor"], "shared-iterations");
    assert_eq!(r.options["scenarios"][0]["completed_iterations"], 20);
    assert_eq!(r.options["late"], true);
    let verdict = |m: &str| r.thresholds.iter().find(|t| t.metric == m).unwrap().ok;
    assert!(verdict("http_reqs"));
    assert!(!verdict("http_req_duration"));
    assert_eq!(
        fin.outcome,
        Outcome::ThresholdsFailed(
            "thresholds on metrics 'http_req_duration' have been crossed".into()
        )
    );
    assert_eq!(fin.outcome.exit_code(), 99);
    assert_eq!(seen.ended.load(Ordering::Relaxed), 1);
    assert_eq!(seen.finished.load(Ordering::Relaxed), 1);
    // The plan's sample sink fed the CSV from every worker, whatever the body.
    let text = std::fs::read_to_string(&csv).unwrap();
    let rows = text.lines().filter(|l| l.starts_with("http_reqs,")).count();
    assert_eq!(rows, 20, "{text}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_failed_setup_is_a_script_error_unless_the_body_aborted_the_test() {
    let seen = Arc::new(Seen::default());
    let failing = Factory {
        setup_fails: true,
        aborted: AtomicBool::new(false),
    };
    let e = execute(spec(failing, &[], &seen), &RunControl::new()).unwrap_err();
    assert_eq!(e, Outcome::ScriptError("setup says no".into()));
    assert_eq!(e.exit_code(), 107);
    let aborting = Factory {
        setup_fails: true,
        aborted: AtomicBool::new(true),
    };
    let fin = execute(spec(aborting, &[], &seen), &RunControl::new()).unwrap();
    assert_eq!(fin.outcome, Outcome::Aborted("setup says no".into()));
    assert_eq!(fin.outcome.exit_code(), 108);
}

#[test]
fn abort_on_fail_thresholds_stop_the_run_from_the_per_second_hook() {
    let seen = Arc::new(Seen::default());
    let f = Factory {
        setup_fails: false,
        aborted: AtomicBool::new(false),
    };
    let mut s = spec(f, &[], &seen);
    s.plan.scenarios = vec![Scenario::new(
        "long",
        Executor::ConstantVus(volley_engine::executor::ConstantVus {
            vus: 1,
            duration: Duration::from_secs(60),
        }),
    )];
    s.plan.threads = 1;
    s.thresholds = volley_run::thresholds::parse(
        &serde_json::json!({
            "http_req_duration": [{"threshold": "p(95)<10", "abortOnFail": true}],
        }),
        volley_metrics::names::builtin_kind,
    )
    .unwrap();
    let fin = execute(s, &RunControl::new()).unwrap();
    assert_eq!(
        fin.outcome,
        Outcome::ThresholdsAborted(
            "thresholds on metrics 'http_req_duration' have been crossed".into()
        )
    );
    assert_eq!(fin.outcome.exit_code(), 99);
    let m = fin.threshold_abort.expect("k6's abort message");
    assert!(
        m.contains("abortOnFail enabled, stopping test prematurely"),
        "{m}"
    );
    assert!(fin.result.thresholds[0].aborted && !fin.result.thresholds[0].ok);
    // Stopped by the hook, not by the 60 s duration.
    assert!(
        fin.result.meta.duration_s < 30.0,
        "{}",
        fin.result.meta.duration_s
    );
}
