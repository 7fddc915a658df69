//! `volley archive script.js -o test.tar` and `volley inspect script.js|test.tar`: flags →
//! [`volley_js::archive`] (k6's archive format, the options as resolved).

use crate::exit;
use clap::Args;
use std::collections::BTreeMap;
use std::path::PathBuf;
use volley_js::CliOptions;
use volley_run::Outcome;

/// What `archive` and `inspect` share: the script, `-e` and k6's option flags.
#[derive(Args, Debug)]
pub struct ScriptArgs {
    /// The script (or, for inspect, an archive)
    pub script: PathBuf,
    /// Virtual users (replaces options.vus)
    #[arg(short = 'u', long, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    pub vus: Option<u64>,
    /// Test duration, e.g. 30s (replaces options.duration)
    #[arg(short = 'd', long, value_parser = volley_engine::parse_duration)]
    pub duration: Option<std::time::Duration>,
    /// Total iterations shared by the VUs (replaces options.iterations)
    #[arg(short = 'i', long)]
    pub iterations: Option<u64>,
    /// Set an __ENV variable: -e KEY=VALUE (repeatable; stored in the archive, as k6)
    #[arg(short = 'e', long = "env", value_name = "KEY=VALUE")]
    pub env: Vec<String>,
    /// Leave the process environment out of __ENV (as k6, archives store only -e)
    #[arg(long)]
    pub no_system_env: bool,
    /// k6's option flags and their `K6_*` variables (docs/k6-cli.md)
    #[command(flatten)]
    pub k6: crate::k6_flags::K6Flags,
}

#[derive(Args, Debug)]
pub struct ArchiveArgs {
    /// Where to write the archive (k6: -O/--archive-out)
    #[arg(
        short = 'o',
        long,
        visible_alias = "archive-out",
        short_alias = 'O',
        default_value = "archive.tar"
    )]
    pub output: PathBuf,
    #[command(flatten)]
    pub script: ScriptArgs,
}

/// `-e` pairs and the option tiers; Err is the exit code.
fn options(a: &ScriptArgs) -> Result<(BTreeMap<String, String>, CliOptions), i32> {
    let mut env = BTreeMap::new();
    for kv in &a.env {
        match kv.split_once('=') {
            Some((k, v)) if !k.is_empty() => {
                env.insert(k.to_string(), v.to_string());
            }
            _ => return Err(exit::usage(&format!("-e/--env '{kv}': expected KEY=VALUE"))),
        }
    }
    let sys_env: BTreeMap<String, String> = std::env::vars().collect();
    let k6 = match crate::k6_flags::setup(&a.k6, true, false, &sys_env) {
        Ok(s) => s,
        Err(crate::k6_flags::K6Error::Usage(e)) => return Err(exit::usage(&e)),
        Err(crate::k6_flags::K6Error::Config(e)) => {
            return Err(exit::outcome(&Outcome::ConfigError(e)))
        }
    };
    let cli = CliOptions {
        vus: a.vus,
        duration: a.duration,
        iterations: a.iterations,
        config_file: k6.config_file,
        env_options: k6.env_options,
        flag_options: k6.flag_options,
        no_thresholds: k6.no_thresholds,
        ..Default::default()
    };
    Ok((env, cli))
}

/// `volley archive`.
pub fn archive(a: ArchiveArgs) -> i32 {
    let (env, cli) = match options(&a.script) {
        Ok(x) => x,
        Err(code) => return code,
    };
    let made = volley_js::archive::create(&a.script.script, env, &cli)
        .and_then(|ar| volley_js::archive::write(&ar, &a.output).map(|_| ar));
    match made {
        Ok(ar) => {
            eprintln!(
                "archive written to {} ({} files)",
                a.output.display(),
                ar.files.len()
            );
            exit::OK
        }
        Err(e) => exit::outcome(&failed(e)),
    }
}

/// Bad options are k6's invalid-config error (104), anything else a script error (107).
fn failed(e: String) -> Outcome {
    match e.strip_prefix("invalid options: ") {
        Some(m) => Outcome::ConfigError(m.to_string()),
        None => Outcome::ScriptError(e),
    }
}

/// `volley inspect`.
pub fn inspect(a: ScriptArgs) -> i32 {
    let (env, cli) = match options(&a) {
        Ok(x) => x,
        Err(code) => return code,
    };
    match volley_js::archive::inspect(&a.script, env, &cli) {
        Ok(v) => {
            outln!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
            exit::OK
        }
        Err(e) => exit::outcome(&failed(e)),
    }
}
