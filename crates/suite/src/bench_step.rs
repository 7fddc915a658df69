//! A suite's `bench` step: the step's table → a [`volley_bench::BenchSpec`], run by
//! [`volley_bench::run`] (the same library path as `volley bench`), its result through the
//! suite's after-run chain (NAME.json, NAME.html, the history) and its exit code as `volley
//! bench`'s: interrupted 105, failed runs [`volley_bench::code::RUNS_FAILED`], thresholds 99.

use crate::check::{BenchDef, StepDef};
use crate::code;
use crate::file::CommandLine;
use crate::services::expand_command;
use crate::steps::{after, test_name, Env, StepResult};
use volley_bench::{BenchSpec, CommandSpec, Param, Runs};

fn spec(step: &StepDef, b: &BenchDef, env: &Env) -> Result<BenchSpec, String> {
    let x = |s: &str| env.ctx.expand(s).map_err(|e| format!("{}: {e}", step.at));
    let command =
        match expand_command(&b.command, env.ctx).map_err(|e| format!("{}: {e}", step.at))? {
            CommandLine::Shell(text) => CommandSpec {
                text,
                argv: None,
                name: Some(step.name.clone()),
            },
            CommandLine::Argv(v) => CommandSpec {
                text: v.join(" "),
                argv: Some(v),
                name: Some(step.name.clone()),
            },
        };
    let mut s = BenchSpec::new(vec![command]);
    s.params = b
        .params
        .iter()
        .map(|(k, v)| Param::parse(&format!("{k}={}", v.join(","))))
        .collect::<Result<_, _>>()?;
    s.warmup = b.warmup;
    s.runs = match (b.runs, b.min_time) {
        (Some(n), _) => Runs::Exact(n),
        (None, Some(min_time)) => Runs::Until {
            min_time,
            min: 10,
            max: volley_bench::MAX_RUNS,
        },
        (None, None) => Runs::default(),
    };
    s.prepare = b.prepare.as_deref().map(&x).transpose()?;
    s.cleanup = b.cleanup.as_deref().map(&x).transpose()?;
    s.shell = b.shell.clone();
    s.timeout = b.timeout;
    s.parse = b.parse;
    s.thresholds = b
        .thresholds
        .iter()
        .map(|(k, e)| format!("{k}:{e}"))
        .collect();
    s.quiet = true;
    s.command_line = vec!["volley".into(), "suite".into(), step.name.clone()];
    Ok(s)
}

/// Runs the benchmark; every failure is in the returned row.
pub fn run(step: &StepDef, b: &BenchDef, env: &Env) -> StepResult {
    let mut r = StepResult::new(step);
    let spec = match spec(step, b, env) {
        Ok(s) => s,
        Err(e) => return r.fail(code::FAILURE, e),
    };
    let done = match volley_bench::run(&spec, &env.ctl.child()) {
        Ok(d) => d,
        Err(e) => return r.fail(e.code, format!("{}: bench: {}", step.at, e.message)),
    };
    let mut result = done.result.clone();
    result.meta.name = test_name(env, step);
    let a = after(step, env, &mut r);
    let outcome = a.finish(
        &result,
        done.outcome(),
        env.ctl.was_interrupted() && !done.interrupted,
    );
    r.code = match &outcome {
        volley_run::Outcome::Failure(e) => {
            r.error = Some(e.clone());
            outcome.exit_code()
        }
        _ => done.exit_code(),
    };
    if r.error.is_none() {
        r.error = if done.failed_runs > 0 {
            Some(format!(
                "{} run(s) of `{}` failed (see {}.json)",
                done.failed_runs, spec.commands[0].text, step.name
            ))
        } else {
            done.thresholds_failed.clone()
        };
    }
    r.result = Some(result);
    r
}
