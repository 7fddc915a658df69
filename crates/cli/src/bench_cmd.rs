//! `volley bench`: flags → [`volley_bench::BenchSpec`], run it, print the table, write the
//! outputs (`--json`, `--markdown`, and the after-run chain's `--save`, `--report`,
//! `--history`), map the ending to the exit code. Reference: docs/bench.md.

use crate::exit;
use clap::Args;
use std::path::{Path, PathBuf};
use std::time::Duration;
use volley_bench::{BenchSpec, CommandSpec, Param, Runs};
use volley_engine::RunControl;

#[derive(Args, Debug)]
#[command(
    after_help = "Examples:\n  volley bench 'sleep 0.02' 'sleep 0.04'\n  volley bench --runs 5 --parse kv --param payload=4096,65536 -- ./objstore micro --payload {payload}\n  volley bench --threshold 'peak_rss:max<3MiB' --save b.json -- ./prog\n\nExit codes: 0 ok, 1 cannot run, 2 usage, 6 a run failed or timed out, 99 thresholds, 105 interrupted (docs/bench.md)"
)]
pub struct BenchArgs {
    /// Commands to compare, each one string (`'prog --flag x'`); run directly unless --shell
    #[arg(value_name = "COMMAND")]
    pub commands: Vec<String>,
    /// One more command as separate words after `--` (run as they are)
    #[arg(last = true, value_name = "CMD ARGS")]
    pub argv: Vec<String>,

    /// Runs before the timed ones, not measured
    #[arg(short = 'w', long, default_value_t = 0, value_name = "N")]
    pub warmup: u32,
    /// Exactly N timed runs per benchmark (default: at least 10 and at least --min-time)
    #[arg(short = 'r', long, value_name = "N", conflicts_with_all = ["min_time", "min_runs"])]
    pub runs: Option<u32>,
    /// Without --runs: keep running until this much run time has passed (default 3s)
    #[arg(long, value_name = "DURATION", value_parser = volley_engine::parse_duration)]
    pub min_time: Option<Duration>,
    /// Without --runs: at least this many runs (default 10)
    #[arg(long, value_name = "N")]
    pub min_runs: Option<u32>,
    /// At most this many runs (default and limit 2048: every value is kept exactly)
    #[arg(long, value_name = "N")]
    pub max_runs: Option<u32>,
    /// Run CMD (through sh -c) before every run, untimed; {param}s are filled in
    #[arg(short = 'p', long, value_name = "CMD")]
    pub prepare: Option<String>,
    /// Run CMD (through sh -c) after the last run of each benchmark
    #[arg(short = 'c', long, value_name = "CMD")]
    pub cleanup: Option<String>,
    /// A parameter matrix: NAME=V1,V2,... fills {NAME} in commands (several: every combination)
    #[arg(long = "param", value_name = "NAME=V1,V2")]
    pub params: Vec<String>,
    /// Name the commands in tables and the result file (repeatable, in command order)
    #[arg(short = 'n', long = "name", value_name = "NAME")]
    pub names: Vec<String>,
    /// Run commands through `sh -c`; the shell's start-up time is measured and subtracted
    #[arg(long)]
    pub shell: bool,
    /// With --shell: this shell instead of sh (e.g. bash)
    #[arg(long, value_name = "SHELL", requires = "shell")]
    pub shell_program: Option<String>,
    /// Kill a run's whole process group after this long; the run counts as failed
    #[arg(short = 't', long, value_name = "DURATION", value_parser = volley_engine::parse_duration)]
    pub timeout: Option<Duration>,
    /// The commands' stdin (default /dev/null)
    #[arg(long, value_name = "FILE")]
    pub input: Option<PathBuf>,
    /// Show the commands' stdout and stderr (default: discarded)
    #[arg(long)]
    pub show_output: bool,
    /// Read metrics from the commands' stdout: kv (key=value pairs on any line) or json (one
    /// object per line)
    #[arg(long, value_name = "kv|json")]
    pub parse: Option<String>,
    /// A limit, k6's grammar with units: wall_time:p(95)<20ms, peak_rss:max<3MiB,
    /// write_mib_per_s:min>60 (repeatable; crossed: exit 99)
    #[arg(long = "threshold", value_name = "METRIC:EXPR")]
    pub thresholds: Vec<String>,
    /// Longest interval between samples of the process tree's memory
    #[arg(long, value_name = "DURATION", default_value = "10ms", value_parser = volley_engine::parse_duration)]
    pub sample_interval: Duration,

    /// Write the statistics as JSON to FILE (- for stdout, instead of the table)
    #[arg(long, value_name = "FILE")]
    pub json: Option<String>,
    /// Write the tables as Markdown to FILE (- for stdout)
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<String>,
    /// Save the result file (volley compare, report, summary read it)
    #[arg(long, value_name = "FILE")]
    pub save: Option<PathBuf>,
    /// Write a self-contained HTML report of the runs to FILE
    #[arg(long, value_name = "FILE")]
    pub report: Option<PathBuf>,
    /// Append the result to a history: an SQLite file or directory (.volley/history.db
    /// without a value) or a postgres:// URL
    #[arg(long, value_name = "DIR_OR_URL", num_args = 0..=1, default_missing_value = "")]
    pub history: Option<String>,
    /// Label the stored run (repeatable; with --history)
    #[arg(long = "label", value_name = "NAME", requires = "history")]
    pub labels: Vec<String>,
    /// No progress lines and no table (errors and failed runs still go to stderr)
    #[arg(short = 'q', long)]
    pub quiet: bool,
}

fn spec(a: &BenchArgs) -> Result<BenchSpec, String> {
    let mut commands: Vec<CommandSpec> = a
        .commands
        .iter()
        .map(|t| CommandSpec {
            text: t.clone(),
            argv: None,
            name: None,
        })
        .collect();
    if !a.argv.is_empty() {
        commands.push(CommandSpec {
            text: a.argv.join(" "),
            argv: Some(a.argv.clone()),
            name: None,
        });
    }
    if a.names.len() > commands.len() {
        return Err(format!(
            "{} --name for {} command(s): give one name per command, in order",
            a.names.len(),
            commands.len()
        ));
    }
    for (c, n) in commands.iter_mut().zip(&a.names) {
        c.name = Some(n.clone());
    }
    let max = a.max_runs.unwrap_or(volley_bench::MAX_RUNS);
    if max == 0 || max > volley_bench::MAX_RUNS {
        return Err(format!(
            "--max-runs must be 1 ..= {}",
            volley_bench::MAX_RUNS
        ));
    }
    let runs = match a.runs {
        Some(n) if n == 0 || n > max => {
            return Err(format!("--runs must be 1 ..= {max} (--max-runs)"))
        }
        Some(n) => Runs::Exact(n),
        None => Runs::Until {
            min_time: a.min_time.unwrap_or(Duration::from_secs(3)),
            min: a.min_runs.unwrap_or(10).min(max),
            max,
        },
    };
    let mut s = BenchSpec::new(commands);
    s.params = a
        .params
        .iter()
        .map(|p| Param::parse(p))
        .collect::<Result<_, _>>()?;
    s.warmup = a.warmup;
    s.runs = runs;
    s.prepare = a.prepare.clone();
    s.cleanup = a.cleanup.clone();
    s.shell = a
        .shell
        .then(|| a.shell_program.clone().unwrap_or_else(|| "sh".into()));
    s.timeout = a.timeout.filter(|t| !t.is_zero());
    s.input = a.input.clone();
    s.show_output = a.show_output;
    s.parse = a
        .parse
        .as_deref()
        .map(volley_bench::parse::Format::parse)
        .transpose()?;
    s.thresholds = a.thresholds.clone();
    s.sample_max = a.sample_interval.max(Duration::from_millis(1));
    s.quiet = a.quiet;
    s.command_line = std::env::args().collect();
    Ok(s)
}

/// Write `text` to FILE, or stdout for `-`.
fn emit(flag: &str, target: &str, text: &str) -> Result<(), String> {
    if target == "-" {
        exit::print(text);
        return Ok(());
    }
    std::fs::write(target, text).map_err(|e| format!("cannot write {flag} {target}: {e}"))
}

pub fn run(a: BenchArgs) -> i32 {
    let spec = match spec(&a) {
        Ok(s) => s,
        Err(e) => return exit::usage(&e),
    };
    let after = volley_run::after::AfterRun {
        save: a.save.clone(),
        summary_export: None,
        report: a.report.clone(),
        history: a.history.clone(),
        labels: a.labels.clone(),
        quiet: a.quiet,
    };
    let mut files: Vec<(&str, &Path)> = Vec::new();
    for (flag, f) in [("--json", &a.json), ("--markdown", &a.markdown)] {
        if let Some(p) = f.as_deref().filter(|p| *p != "-") {
            files.push((flag, Path::new(p)));
        }
    }
    if let Err(e) = after.preflight(&files) {
        return exit::fail(&e);
    }
    let ctl = RunControl::new();
    crate::signals::install(ctl.clone());
    let done = match volley_bench::run(&spec, &ctl) {
        Ok(d) => d,
        Err(e) if e.code == exit::USAGE => return exit::usage(&e.message),
        Err(e) => return exit::fail(&e.message),
    };
    let summary = match volley_bench::summary::Summary::from_result(&done.result) {
        Ok(s) => s,
        Err(e) => return exit::fail(&e),
    };
    let json_to_stdout = a.json.as_deref() == Some("-");
    if !a.quiet && !json_to_stdout && a.markdown.as_deref() != Some("-") {
        exit::print(&summary.render_text());
    } else if a.quiet && done.failed_runs > 0 {
        eprintln!("volley: {} run(s) failed", done.failed_runs);
    }
    let mut errors = Vec::new();
    if let Some(t) = &a.json {
        let text = serde_json::to_string_pretty(&summary.to_json()).unwrap_or_default() + "\n";
        errors.extend(emit("--json", t, &text).err());
    }
    if let Some(t) = &a.markdown {
        errors.extend(emit("--markdown", t, &summary.render_markdown()).err());
    }
    let outcome = after.finish(
        &done.result,
        done.outcome(),
        ctl.was_interrupted() && !done.interrupted,
    );
    for e in &errors {
        exit::fail(e);
    }
    match outcome {
        volley_run::Outcome::Failure(_) => exit::outcome(&outcome),
        _ if !errors.is_empty() => exit::FAILURE,
        _ if done.exit_code() == volley_bench::code::RUNS_FAILED => volley_bench::code::RUNS_FAILED,
        o => exit::outcome(&o),
    }
}

/// `volley summary FILE` of a bench result: the tables `volley bench` printed.
pub fn summary(r: &volley_metrics::RunResult, json: bool) -> i32 {
    match volley_bench::summary::Summary::from_result(r) {
        Ok(s) if json => {
            outln!(
                "{}",
                serde_json::to_string_pretty(&s.to_json()).unwrap_or_default()
            );
            exit::OK
        }
        Ok(s) => {
            exit::print(&s.render_text());
            exit::OK
        }
        Err(e) => exit::fail(&e),
    }
}
