//! `volley suite run|check|services`: read and check the file, make the results directory,
//! start the services (a [`Services`] guard: whatever happens next — a failed step, Ctrl-C or
//! SIGTERM, a panic unwinding — they are stopped, last first, and checked for survivors),
//! seed, run the profile's steps, write `suite.json`/`suite.md` after each, tear down, and
//! return the exit code: the highest of any step's (k6's codes), 1 when teardown left a
//! process, 0 only when everything passed.

use crate::check::{self, StepDef, Suite};
use crate::code;
use crate::file::{self, interp::Ctx};
use crate::results::{self, Baseline, Report};
use crate::services::Services;
use crate::steps::{self, StepResult};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use volley_engine::RunControl;

/// `volley suite run`'s flags.
pub struct RunOptions {
    /// FILE, DIR (its volley.toml) or none (the current directory's).
    pub path: Option<PathBuf>,
    pub profile: String,
    /// Instead of `[outputs] dir` (default `results` beside the suite file).
    pub results: Option<PathBuf>,
    /// Run every step even after one failed (seed failures still stop the run).
    pub keep_going: bool,
    /// `last`, a label (both from the history) or an earlier results directory.
    pub baseline: Option<String>,
    /// A history database instead of `[outputs] history`.
    pub history: Option<String>,
}

/// Reads and checks a suite file; every problem is one located message.
pub fn load(path: &Path) -> Result<Suite, Vec<String>> {
    let (src, raw) = file::read(path).map_err(|e| vec![e.to_string()])?;
    let env: BTreeMap<String, String> = std::env::vars().collect();
    check::check(&src, raw, &env).map_err(|es| es.iter().map(|e| e.to_string()).collect())
}

fn load_or_report(path: &Path) -> Result<Suite, i32> {
    load(path).map_err(|errors| {
        for e in &errors {
            eprintln!("volley: error: {e}");
        }
        if errors.len() > 1 {
            eprintln!("volley: {} problems in {}", errors.len(), path.display());
        }
        code::INVALID_CONFIG
    })
}

fn say(msg: &str) {
    eprintln!("volley suite: {msg}");
}

/// `volley suite check FILE`: 0 when valid (a summary on stdout), else 104.
pub fn check_file(path: Option<&Path>) -> i32 {
    let path = file::locate(path);
    let s = match load_or_report(&path) {
        Ok(s) => s,
        Err(c) => return c,
    };
    let order: Vec<&str> = s.services.iter().map(|x| x.name.as_str()).collect();
    outln!("{}: ok", path.display());
    outln!(
        "  services (start order): {}",
        if order.is_empty() {
            "none".into()
        } else {
            order.join(" → ")
        }
    );
    outln!("  seed steps: {}", s.seed.len());
    for (p, steps) in &s.profiles {
        let names: Vec<String> = steps
            .iter()
            .map(|x| format!("{} ({})", x.name, x.kind.word()))
            .collect();
        outln!("  profile {p}: {}", names.join(", "));
    }
    code::OK
}

/// `${tmp}`: removed when dropped, after the services (declared before them) are gone.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The context every string is expanded in, with ports chosen, and its `${tmp}`.
fn context(s: &Suite, profile: &str, results: &Path) -> Result<(Ctx, Scratch), String> {
    let tmp = results
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    let tmp = std::env::temp_dir().join(format!("volley-suite-{}-{tmp}", std::process::id()));
    std::fs::create_dir_all(&tmp).map_err(|e| format!("cannot create {}: {e}", tmp.display()))?;
    let scratch = Scratch(tmp);
    let mut ctx = Ctx {
        suite_dir: s.dir.display().to_string(),
        profile: profile.to_string(),
        results: results.display().to_string(),
        tmp: scratch.0.display().to_string(),
        env: std::env::vars().collect(),
        volley: volley_exe(),
        ..Ctx::default()
    };
    ctx.services = crate::services::expose(s, &ctx)?;
    Ok((ctx, scratch))
}

/// This executable (`${volley}`); `volley` (from PATH) if it cannot be found.
fn volley_exe() -> String {
    std::env::current_exe().map_or_else(|_| "volley".into(), |p| p.display().to_string())
}

/// `volley suite services FILE`: starts the environment (and seeds it with `seed`), prints
/// where everything is, and holds it until Ctrl-C or a service exits.
pub fn hold(path: Option<&Path>, seed: bool, ctl: &RunControl) -> i32 {
    let path = file::locate(path);
    let s = match load_or_report(&path) {
        Ok(s) => s,
        Err(c) => return c,
    };
    let dir = match results::create_dir(&s.outputs.dir, &s.name, "services") {
        Ok(d) => d,
        Err(e) => return crate::fail(&e),
    };
    let (ctx, _scratch) = match context(&s, "services", &dir) {
        Ok(c) => c,
        Err(e) => return crate::fail(&e),
    };
    let mut services = match Services::start(&s, &ctx, &dir.join("logs"), ctl, say) {
        Ok(x) => x,
        Err(e) => return interrupted_or(ctl, &e),
    };
    if seed {
        let env = steps::Env {
            suite: &s,
            ctx: &ctx,
            dir: &dir,
            ctl,
        };
        for st in &s.seed {
            let r = steps::run(st, &env, &mut services);
            if let Some(e) = &r.error {
                return crate::fail(&format!("seed step '{}' failed: {e}", st.name));
            }
            say(&format!("seeded: {}", st.name));
        }
    }
    for (n, e) in &ctx.services {
        outln!("{n}\t{}\tport {}", e.url, e.port);
    }
    outln!(
        "logs in {}; Ctrl-C stops everything",
        dir.join("logs").display()
    );
    loop {
        if ctl.is_stopped() {
            break;
        }
        if let Some((n, why)) = services
            .list
            .iter_mut()
            .find_map(|r| r.exited().map(|w| (r.name.clone(), w)))
        {
            let errs = services.stop_all();
            return crate::fail(&format!(
                "service '{n}' exited ({why}){}",
                teardown_note(&errs)
            ));
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    let errs = services.stop_all();
    if !errs.is_empty() {
        return crate::fail(&teardown_note(&errs));
    }
    say("stopped every service");
    code::OK
}

fn teardown_note(errs: &[String]) -> String {
    errs.iter().map(|e| format!("\nteardown: {e}")).collect()
}

fn interrupted_or(ctl: &RunControl, e: &str) -> i32 {
    if ctl.was_interrupted() {
        eprintln!("volley: {e}");
        code::INTERRUPTED
    } else {
        crate::fail(e)
    }
}

/// `volley suite run`: the exit code (docs/suite.md, "Exit codes").
pub fn run(o: &RunOptions, ctl: &RunControl) -> i32 {
    let path = file::locate(o.path.as_deref());
    let mut s = match load_or_report(&path) {
        Ok(s) => s,
        Err(c) => return c,
    };
    let Some(profile_steps) = s.profiles.get(&o.profile).cloned() else {
        eprintln!(
            "volley: error: {}: no profile '{}'; the suite has: {}",
            path.display(),
            o.profile,
            check::profile_names(&s)
        );
        return code::USAGE;
    };
    if let Some(h) = &o.history {
        s.outputs.history = Some(h.clone());
    }
    let baseline = match o.baseline.as_deref() {
        None => None,
        Some(b) if Path::new(b).is_dir() => Some(Baseline::Dir(PathBuf::from(b))),
        Some(b) => match &s.outputs.history {
            Some(db) => Some(Baseline::History {
                db: db.clone(),
                which: volley_history::Baseline::parse(b),
            }),
            None => {
                eprintln!("volley: error: --baseline {b}: not a results directory, and no history to look it up in\n  hint: give --history DB (or [outputs] history), or an earlier results directory");
                return code::USAGE;
            }
        },
    };
    let root = o.results.clone().unwrap_or_else(|| s.outputs.dir.clone());
    let dir = match results::create_dir(&root, &s.name, &o.profile) {
        Ok(d) => d,
        Err(e) => return crate::fail(&e),
    };
    let (ctx, _scratch) = match context(&s, &o.profile, &dir) {
        Ok(c) => c,
        Err(e) => return crate::fail(&e),
    };
    say(&format!(
        "{} profile {} → {}",
        path.display(),
        o.profile,
        dir.display()
    ));
    let started = volley_metrics::time::rfc3339_ms(volley_metrics::time::unix_ms(
        std::time::SystemTime::now(),
    ));
    let mut run = Run {
        suite: &s,
        profile: &o.profile,
        dir: &dir,
        started,
        services: Vec::new(),
        steps: Vec::new(),
        notes: Vec::new(),
    };
    run.write(None, ctl);
    let mut services = match Services::start(&s, &ctx, &dir.join("logs"), ctl, say) {
        Ok(x) => x,
        Err(e) => {
            run.notes.push(format!("services did not start: {e}"));
            let c = interrupted_or(ctl, &e);
            run.write(Some(c), ctl);
            return c;
        }
    };
    run.services = services
        .list
        .iter()
        .map(|r| {
            (
                r.name.clone(),
                ctx.services
                    .get(&r.name)
                    .map_or(String::new(), |e| e.url.clone()),
                r.pid,
            )
        })
        .collect();
    let env = steps::Env {
        suite: &s,
        ctx: &ctx,
        dir: &dir,
        ctl,
    };
    let mut exit = code::OK;
    // Seed: any failure stops the run before load.
    let mut seeded = true;
    for st in &s.seed {
        if ctl.is_stopped() {
            break;
        }
        let r = run.step(st, "seed", &env, &mut services, None);
        if r != code::OK {
            exit = exit.max(r);
            seeded = false;
            let msg = format!("seed step '{}' failed; no load was run", st.name);
            say(&msg);
            run.notes.push(msg);
            break;
        }
    }
    if seeded {
        let n = profile_steps.len();
        for (i, st) in profile_steps.iter().enumerate() {
            if ctl.is_stopped() {
                break;
            }
            let c = run.step(
                st,
                &format!("{}/{n}", i + 1),
                &env,
                &mut services,
                baseline.as_ref(),
            );
            exit = exit.max(c);
            // A service that died under load makes every later figure meaningless.
            if let Some((name, why)) = services
                .list
                .iter_mut()
                .find_map(|r| r.exited().map(|w| (r.name.clone(), w)))
            {
                let log = services
                    .get(&name)
                    .map(|r| r.log.clone())
                    .unwrap_or_default();
                let msg = format!(
                    "service '{name}' exited during step '{}' ({why}){}",
                    st.name,
                    crate::services::ready::log_tail(&log)
                );
                say(&msg);
                run.notes.push(msg);
                exit = exit.max(code::FAILURE);
                break;
            }
            if c != code::OK && !o.keep_going {
                if i + 1 < n {
                    run.notes.push(format!(
                        "stopped after step '{}' failed (--keep-going runs the rest)",
                        st.name
                    ));
                }
                break;
            }
        }
    }
    say("tearing down");
    let errs = services.stop_all();
    for e in &errs {
        say(&format!("teardown: {e}"));
        run.notes.push(format!("teardown: {e}"));
    }
    if !errs.is_empty() {
        exit = exit.max(code::FAILURE);
    }
    if ctl.was_interrupted() {
        exit = exit.max(code::INTERRUPTED);
    }
    run.write(Some(exit), ctl);
    crate::print(&run.report(Some(exit), ctl).markdown());
    outln!("\nResults in {}", dir.display());
    exit
}

/// What one suite run has gathered so far.
struct Run<'a> {
    suite: &'a Suite,
    profile: &'a str,
    dir: &'a Path,
    started: String,
    services: Vec<(String, String, u32)>,
    steps: Vec<StepResult>,
    notes: Vec<String>,
}

impl Run<'_> {
    fn report(&self, exit: Option<i32>, ctl: &RunControl) -> Report<'_> {
        Report {
            suite: &self.suite.name,
            profile: self.profile,
            file: &self.suite.file,
            dir: self.dir,
            started: &self.started,
            services: &self.services,
            steps: &self.steps,
            exit_code: exit,
            interrupted: ctl.was_interrupted(),
            notes: &self.notes,
        }
    }

    fn write(&self, exit: Option<i32>, ctl: &RunControl) {
        if let Err(e) = self.report(exit, ctl).write() {
            say(&e);
        }
    }

    /// Runs one step, prints its line, records it; returns its exit code.
    fn step(
        &mut self,
        st: &StepDef,
        label: &str,
        env: &steps::Env,
        services: &mut Services,
        baseline: Option<&Baseline>,
    ) -> i32 {
        say(&format!("[{label}] {} ({}) ...", st.name, st.kind.word()));
        let mut r = steps::run(st, env, services);
        if let Some(b) = baseline {
            results::judge(b, &mut r);
        }
        let verdict = match (&r.error, r.code) {
            (None, 0) => "✓".to_string(),
            (Some(e), c) => format!("✗ exit {c}: {}", e.lines().next().unwrap_or("")),
            (None, c) => format!("✗ exit {c}"),
        };
        say(&format!(
            "[{label}] {} {:.1}s {verdict}",
            st.name,
            r.took.as_secs_f64()
        ));
        if let Some(e) = &r.error {
            if e.contains('\n') {
                eprintln!("{e}");
            }
        }
        let c = r.code;
        self.steps.push(r);
        self.write(None, ctl_of(env));
        c
    }
}

fn ctl_of<'a>(env: &steps::Env<'a>) -> &'a RunControl {
    env.ctl
}
