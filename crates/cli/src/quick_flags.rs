//! Flags the quick modes share (`volley http`, `volley ws`, `volley grpc`): clap `Args`
//! structs each command flattens — [`LoadFlags`] (how long, the open model, threads),
//! [`TlsFlags`] (trust) and [`QuickOutputFlags`] (result file, exports, history, outputs,
//! thresholds, monitor, A/B) — and [`Chain`], the before/after-run plumbing of the output
//! flags, so each command only adds its own request and summary. Wording and defaults are
//! `volley http`'s. `-c`, `-n` and the timeout stay in each command: they mean connections,
//! requests or messages, and a request, echo or call deadline there.

use crate::exit;
use clap::Args;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use volley_run::checks::{ModeMetrics, MonitorCheck};
use volley_run::outputs::OutSpec;
use volley_run::Outcome;

/// How long and how fast.
#[derive(Args, Debug)]
pub struct LoadFlags {
    /// How long to run, e.g. 10s, 1m30s, 500ms (default 10s unless -n is given)
    #[arg(short = 'z', long, value_parser = volley_engine::parse_duration)]
    pub duration: Option<Duration>,

    /// Open model: send R requests/s in total, on schedule however slow the server is
    #[arg(short = 'q', long, value_name = "R")]
    pub rate: Option<f64>,

    /// Open model with linear ramps, e.g. 100:10s,2000:30s,0:10s (starts from -q, default 0)
    #[arg(long, value_name = "RATE:DUR,...")]
    pub rate_stages: Option<String>,

    /// Worker threads (default: one per available core)
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
}

/// TLS trust.
#[derive(Args, Debug)]
pub struct TlsFlags {
    /// Skip TLS certificate verification
    #[arg(long)]
    pub insecure: bool,

    /// Trust the PEM certificate(s) in FILE in addition to the built-in roots
    #[arg(long, value_name = "FILE")]
    pub cacert: Option<PathBuf>,
}

impl TlsFlags {
    /// `--cacert` must name a file (checked before the run, as a usage error).
    pub fn check(&self) -> Result<(), String> {
        if let Some(p) = &self.cacert {
            if p.is_dir() {
                return Err(format!(
                    "--cacert {}: is a directory; give a PEM file of certificates",
                    p.display()
                ));
            }
            if !p.is_file() {
                return Err(format!("--cacert {}: no such file", p.display()));
            }
        }
        Ok(())
    }

    pub fn options(&self) -> volley_http::TlsOptions {
        volley_http::TlsOptions {
            insecure: self.insecure,
            cacert: self.cacert.clone(),
        }
    }
}

/// What a run leaves behind and how it is judged.
#[derive(Args, Debug)]
pub struct QuickOutputFlags {
    /// Print the summary as JSON on stdout (keys: see docs/quick-mode.md)
    #[arg(long)]
    pub json: bool,

    /// Save the run result file (see docs/result-file.md)
    #[arg(long, value_name = "FILE")]
    pub save: Option<PathBuf>,

    /// Write a self-contained HTML report of the run to FILE at the end (see docs/report.md)
    #[arg(long, value_name = "FILE", conflicts_with = "vs")]
    pub report: Option<PathBuf>,

    /// Write k6's end-of-test summary export JSON to FILE (k6's --summary-export shape)
    #[arg(long, value_name = "FILE", conflicts_with = "vs")]
    pub summary_export: Option<PathBuf>,

    /// Stream the run to an output (repeatable), as `volley run`: json=FILE (k6's NDJSON of
    /// every sample), csv=FILE, influxdb=URL, prometheus=URL (remote write), junit=FILE
    #[arg(
        short = 'o',
        long = "out",
        value_name = "KIND=WHERE",
        conflicts_with = "vs"
    )]
    pub out: Vec<String>,

    /// A/B mode: run the same load against this second URL too, alternating A B, and print
    /// one side-by-side table
    #[arg(long, value_name = "URL_B")]
    pub vs: Option<String>,

    /// A/B mode: rounds per side (≥ 2 to judge noise)
    #[arg(long, default_value_t = 3, requires = "vs", value_parser = clap::value_parser!(u64).range(1..=100))]
    pub rounds: u64,

    /// Watch the target on the run's timeline: pid:N, tree:N, cmd:NAME, cgroup:/path or
    /// url:http://host:port/metrics[#name,...]; NAME=SPEC names it (repeatable; docs/monitor.md)
    #[arg(long = "monitor", value_name = "SPEC", conflicts_with = "vs")]
    pub monitor: Vec<String>,

    /// How often --monitor samples (whole seconds)
    #[arg(long, default_value = "1s", value_parser = volley_engine::parse_duration)]
    pub monitor_interval: Duration,

    /// Exit with code 99 unless METRIC passes CHECK: k6's grammar (http_req_duration:p(95)<300,
    /// 'http_req_duration{status:200}:avg<100', http_req_failed:rate<0.01) or a drift/limit
    /// check (monitor_rss_bytes:slope<5MB/h, http_req_duration:drift(p95)<10%) (repeatable)
    #[arg(long = "threshold", value_name = "METRIC:CHECK")]
    pub thresholds: Vec<String>,

    /// Append this run to a history: an SQLite file or directory (.volley/history.db when
    /// given without a value) or a postgres:// URL (see docs/history.md)
    #[arg(long, value_name = "DIR_OR_URL", num_args = 0..=1, default_missing_value = "", conflicts_with = "vs")]
    pub history: Option<String>,
    /// Label the stored run, e.g. main or nightly (repeatable; with --history)
    #[arg(long = "label", value_name = "NAME", requires = "history")]
    pub labels: Vec<String>,
    /// No progress line and no text summary (errors still go to stderr)
    #[arg(long)]
    pub quiet: bool,
}

/// The output flags checked before a run, and what they need after it.
pub struct Chain {
    /// Drift and monitor checks (judged per series after the run).
    pub checks: Vec<MonitorCheck>,
    pub monitor: volley_engine::MonitorPlan,
    /// k6's thresholds, judged by the run layer.
    pub thresholds: Vec<volley_run::thresholds::Threshold>,
    pub json_path: Option<PathBuf>,
    pub outs: Vec<OutSpec>,
    pub after: volley_run::after::AfterRun,
}

impl QuickOutputFlags {
    /// Parse and check every output flag before the run (`m`: what the mode records;
    /// `files`: the command's own files to write, checked with the rest). Errors are exit
    /// codes, already reported.
    pub fn prepare(&self, m: &ModeMetrics, files: &[(&str, &Path)]) -> Result<Chain, i32> {
        crate::history_cmd::check_labels(&self.labels).map_err(|e| exit::usage(&e))?;
        // Drift and monitor checks keep their per-series judge; the rest is k6's grammar.
        let (checks, k6_flags): (Vec<String>, Vec<String>) = self
            .thresholds
            .iter()
            .cloned()
            .partition(|t| volley_run::checks::is_check_flag(t));
        let (monitor, checks) =
            crate::monitor_cmd::setup_for(&self.monitor, self.monitor_interval, &checks, m.names)?;
        let thresholds =
            volley_run::checks::mode_thresholds(&k6_flags, m).map_err(|e| exit::usage(&e))?;
        let (json_path, outs) = OutSpec::parse_all(&self.out).map_err(|e| exit::usage(&e))?;
        // The shared after-run chain; every target it and --out write is checked before the run.
        let after = volley_run::after::AfterRun {
            save: self.save.clone(),
            summary_export: self.summary_export.clone(),
            report: self.report.clone(),
            history: self.history.clone(),
            labels: self.labels.clone(),
            quiet: self.quiet || self.json,
        };
        let mut all: Vec<(&str, &Path)> = files.to_vec();
        if let Some(p) = &json_path {
            all.push(("--out", p));
        }
        for o in &outs {
            if let OutSpec::Csv(p) | OutSpec::Junit(p) = o {
                all.push(("--out", p));
            }
        }
        after.preflight(&all).map_err(|e| exit::fail(&e))?;
        Ok(Chain {
            checks,
            monitor,
            thresholds,
            json_path,
            outs,
            after,
        })
    }
}

/// `--out json=...` and the other outputs of a run.
pub type RunOutputs = (
    Option<Arc<volley_run::out_json::JsonOut>>,
    volley_run::outputs::Outputs,
);

impl Chain {
    /// Run `spec` through the run layer: the result and whether an `abortOnFail` threshold
    /// ended it (logged), or the exit code of a run that could not start (reported).
    pub fn execute<F: volley_engine::vus::VuFactory>(
        spec: volley_run::RunSpec<F>,
        ctl: &volley_engine::RunControl,
    ) -> Result<(volley_metrics::RunResult, bool), i32> {
        match volley_run::execute(spec, ctl) {
            Ok(fin) => {
                if let Some(m) = &fin.threshold_abort {
                    volley_engine::log::error(m);
                }
                Ok((fin.result, fin.threshold_abort.is_some()))
            }
            Err(o) => Err(exit::outcome(&o)),
        }
    }

    /// Start the raw outputs; `base`: the request's constant tags, which the series keys
    /// leave out but raw outputs show (as k6's request tags).
    pub fn outputs(&self, base: volley_metrics::TagSet) -> Result<RunOutputs, String> {
        let json_out = match &self.json_path {
            Some(p) => {
                let mut out = volley_run::out_json::JsonOut::create(p)?;
                out.set_thresholds(&self.thresholds);
                out.set_base_tags(base.clone());
                Some(Arc::new(out))
            }
            None => None,
        };
        let outputs = volley_run::outputs::Outputs::start(&self.outs)?;
        if let Some(csv) = &outputs.csv {
            csv.set_base_tags(base);
        }
        Ok((json_out, outputs))
    }

    /// After the run (its summary printed): the threshold verdicts and checks, the outcome
    /// (`threshold_abort`: the run stopped on an `abortOnFail` threshold; `request_errors`:
    /// exit 3), then the after-run chain (save, exports, report, history).
    pub fn finish(
        &self,
        result: &volley_metrics::RunResult,
        threshold_abort: bool,
        request_errors: bool,
        quiet: bool,
    ) -> Outcome {
        volley_run::checks::print_verdicts(result, quiet);
        let crossed = [
            volley_run::execute::thresholds_message(result),
            volley_run::checks::judge_checks(result, &self.checks, quiet),
        ];
        let crossed: Vec<String> = crossed.into_iter().flatten().collect();
        let outcome = match Outcome::of_run(
            None,
            None,
            (!crossed.is_empty()).then(|| crossed.join("; ")),
            result.meta.interrupted,
            request_errors,
        ) {
            Outcome::ThresholdsFailed(m) if threshold_abort => Outcome::ThresholdsAborted(m),
            o => o,
        };
        self.after.finish(result, outcome, false)
    }
}

/// `-z` as given, else the default (10 s) unless `-n` or the rate stages end the run; and
/// `-q`/`--rate-stages` → the open model's schedule (`what`: the unit in errors).
pub fn pacing(
    load: &LoadFlags,
    count: Option<u64>,
    what: &str,
) -> Result<(Option<Duration>, Option<volley_engine::RateSchedule>), String> {
    let rate = crate::http_cmd::parse_rate(load.rate, load.rate_stages.as_deref(), what)?;
    let duration = crate::http_cmd::load_length(load.duration, count, rate.as_ref())?;
    Ok((duration, rate))
}

/// `--vs`: alternate A and B (`names`) for `--rounds` rounds (`run(i)` runs one round of side
/// `i`, or gives the exit code of one that could not run), then print one comparison;
/// `summary` gives a round's JSON and whether it had request errors (exit 3).
pub fn ab(
    o: &QuickOutputFlags,
    names: [&str; 2],
    ctl: &volley_engine::RunControl,
    mut run: impl FnMut(usize) -> Result<volley_metrics::RunResult, i32>,
    summary: impl Fn(&volley_metrics::RunResult) -> Result<(serde_json::Value, bool), String>,
) -> i32 {
    let mut sides: [Vec<volley_metrics::RunResult>; 2] = [Vec::new(), Vec::new()];
    'rounds: for round in 1..=o.rounds {
        for (i, side) in ["A", "B"].into_iter().enumerate() {
            if ctl.is_stopped() {
                break 'rounds;
            }
            if !o.quiet {
                eprintln!("round {round}/{}: {side} = {}", o.rounds, names[i]);
            }
            match run(i) {
                Ok(r) => sides[i].push(r),
                Err(code) => return code,
            }
        }
    }
    let n = sides[0].len().min(sides[1].len());
    if n == 0 {
        return exit::fail("interrupted before a full A/B round completed");
    }
    let [mut ra, mut rb] = sides;
    ra.truncate(n);
    rb.truncate(n);
    let mut errors = false;
    let mut docs = |runs: &[volley_metrics::RunResult]| -> Result<Vec<_>, String> {
        runs.iter()
            .map(|r| {
                let (doc, e) = summary(r)?;
                errors |= e;
                Ok(doc)
            })
            .collect()
    };
    let (sa, sb) = match (docs(&ra), docs(&rb)) {
        (Ok(sa), Ok(sb)) => (sa, sb),
        (Err(e), _) | (_, Err(e)) => return exit::fail(&e),
    };
    let report = volley_report::AbReport::new(&ra, &rb);
    if o.json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&report.to_json(sa, sb)).unwrap_or_default()
        );
    } else if !o.quiet {
        exit::print(&report.render_text());
    }
    if let Some(path) = &o.save {
        let file = volley_report::AbFile::new(ra, rb, report.rows);
        if let Err(e) = file.write(path) {
            return exit::fail(&format!("cannot save to {}: {e}", path.display()));
        }
    }
    if ctl.was_interrupted() {
        exit::INTERRUPTED
    } else if errors {
        exit::REQUEST_ERRORS
    } else {
        exit::OK
    }
}

/// A quick mode's live line on stderr (terminals only): `text` renders it from each tick;
/// it is cleared at the end.
pub struct LiveLine {
    pub live: bool,
    pub text: fn(&volley_engine::vus::Tick<'_>) -> String,
}

impl volley_run::Observer for LiveLine {
    fn tick(&mut self, tick: &volley_engine::vus::Tick<'_>) {
        if self.live {
            use std::io::Write;
            eprint!("\r\x1b[2K{}", (self.text)(tick));
            let _ = std::io::stderr().flush();
        }
    }

    fn ended(
        &mut self,
        _run: &volley_engine::vus::VuRunResult,
        _plan: &volley_engine::vus::VuPlan,
    ) {
        if self.live {
            eprint!("\r\x1b[2K");
        }
    }
}
