//! The one place a suite runs a k6 script: through the run layer, as `volley run` does, so
//! its ending maps to the same exit code (`volley_run::Outcome::exit_code`).

use std::path::Path;
use std::time::Duration;
use volley_engine::RunControl;
use volley_js::{CliOptions, RunOutput};

/// Runs `script` as `volley run --no-system-env -e K=V... [-d DURATION]` would, printing
/// nothing: the process environment stays out (a PROFILE or P95_MS exported in the user's
/// shell must not change what a suite measures). `command` is recorded in the result file.
/// A run that produced no result is `Err((exit code, message))`.
pub fn run_script(
    script: &Path,
    env: &[(String, String)],
    duration: Option<Duration>,
    command: Vec<String>,
    ctl: &RunControl,
) -> Result<RunOutput, (i32, String)> {
    let cli = CliOptions {
        duration,
        ..CliOptions::default()
    };
    run_with(script, env, &cli, command, ctl)
}

/// [`run_script`] with any of `volley run`'s options (a suite step's vus, stages,
/// thresholds, monitored services).
pub fn run_with(
    script: &Path,
    env: &[(String, String)],
    cli: &CliOptions,
    command: Vec<String>,
    ctl: &RunControl,
) -> Result<RunOutput, (i32, String)> {
    volley_js::run(
        script,
        volley_js::environment(env, false),
        cli,
        0,
        command,
        ctl,
    )
    .map_err(|e| {
        let msg = e.to_string();
        (e.outcome().exit_code(), msg)
    })
}

/// [`run_with`] with a step's faults armed: the injector watches the run's clock (the same
/// path as `volley run --fault`), and the events land in the result.
pub fn run_armed(
    script: &Path,
    env: &[(String, String)],
    cli: &CliOptions,
    command: Vec<String>,
    ctl: &RunControl,
    armed: &mut volley_faults::Armed,
) -> Result<RunOutput, (i32, String)> {
    let fail = |e: volley_js::RunError| {
        let msg = e.to_string();
        (e.outcome().exit_code(), msg)
    };
    let env = volley_js::environment(env, false);
    let mut p = volley_js::prepare(script, env, cli, 0, command, ctl).map_err(fail)?;
    armed.attach(&mut p.spec);
    let mut f = volley_run::execute(p.spec, ctl)
        .map_err(volley_js::RunError::from_outcome)
        .map_err(fail)?;
    armed.finish(&mut f.result);
    Ok(RunOutput {
        result: f.result,
        outcome: f.outcome,
        teardown_error: f.teardown_error,
        aborted: f.aborted,
        threshold_abort: f.threshold_abort,
        script: p.script,
    })
}

/// The command line that repeats a run, `volley run SCRIPT -e K=V...`, recorded in its result
/// file.
pub fn command_line(script: &Path, env: &[(String, String)]) -> Vec<String> {
    let mut command = vec![
        "volley".to_string(),
        "run".into(),
        script.display().to_string(),
    ];
    for (k, v) in env {
        command.extend(["-e".to_string(), format!("{k}={v}")]);
    }
    command
}

/// `volley run`'s exit code for a run that completed.
pub fn outcome_code(out: &RunOutput) -> i32 {
    out.outcome.exit_code()
}
