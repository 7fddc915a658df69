//! A suite's services: ports allocated up front (so every `${services.X.port}` is known before
//! anything starts), each service started in dependency order — a `kind = "command"` process
//! in its own process group with its output in `logs/NAME.log`, or a throwaway PostgreSQL
//! cluster — and waited on until ready. [`Services`] is the guard: dropping it (on success,
//! error, Ctrl-C or a panic unwinding) stops them in reverse order, and [`Services::stop_all`]
//! reports any process that survived.
//!
//! Layout: this file (ports, start, stop); `process` (process groups, waiting, log tails);
//! `ready` (the probes); `postgres` (`kind = "postgres"` over volley-postgres); `target`
//! (a service as a fault target: signals and restart).

pub mod postgres;
pub mod process;
pub mod ready;
pub mod target;

use crate::check::{Kind, Probe, ServiceDef, Suite};
use crate::file::interp::{Ctx, Exposed};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::Duration;
use volley_engine::RunControl;

/// Every service's port and URL, before any starts. Free ports come from binding port 0 on
/// loopback; all listeners stay open until every port is chosen, so two services never get
/// the same one.
pub fn expose(suite: &Suite, base: &Ctx) -> Result<BTreeMap<String, Exposed>, String> {
    let mut held = Vec::new();
    let mut out = BTreeMap::new();
    for s in &suite.services {
        let port = match s.port {
            Some(p) => p,
            None => {
                let l = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| {
                    format!("cannot find a free port for service '{}': {e}", s.name)
                })?;
                let p = l.local_addr().map_err(|e| e.to_string())?.port();
                held.push(l);
                p
            }
        };
        let url = match &s.kind {
            Kind::Postgres {
                user,
                database,
                password,
                ..
            } => postgres::url(user, password.as_deref(), port, database),
            Kind::Command { .. } => format!("http://127.0.0.1:{port}"),
        };
        out.insert(s.name.clone(), Exposed { port, url });
    }
    // `url = "..."` may use any port (and the default URLs), so it is expanded last.
    let mut ctx = base.clone();
    ctx.services = out.clone();
    for s in &suite.services {
        if let Some(t) = &s.url {
            ctx.this = Some(s.name.clone());
            let url = ctx
                .expand(t)
                .map_err(|e| format!("{}: services.{}.url: {e}", s.at, s.name))?;
            if let Some(e) = out.get_mut(&s.name) {
                e.url = url;
            }
        }
    }
    Ok(out)
}

/// A started service.
pub struct Running {
    pub name: String,
    /// The process to watch: the command's leader, or the postmaster.
    pub pid: u32,
    pub log: PathBuf,
    inner: Inner,
}

enum Inner {
    Command {
        child: Child,
        signal: i32,
        grace: Duration,
    },
    Postgres(postgres::Pg),
    Stopped,
}

impl Running {
    /// The cluster of a postgres service (for `sql` seed steps).
    pub fn postgres(&self) -> Option<&postgres::Pg> {
        match &self.inner {
            Inner::Postgres(p) => Some(p),
            _ => None,
        }
    }

    /// `Some(why)` when the service is no longer running.
    pub fn exited(&mut self) -> Option<String> {
        match &mut self.inner {
            Inner::Command { child, .. } => match child.try_wait() {
                Ok(Some(st)) => Some(st.to_string()),
                _ => None,
            },
            Inner::Postgres(_) => {
                (!process::alive(self.pid)).then(|| "the postmaster is gone".into())
            }
            Inner::Stopped => Some("stopped".into()),
        }
    }

    /// Stops it and verifies nothing of it survived.
    pub fn stop(&mut self) -> Result<(), String> {
        let r = self.stop_inner();
        process::unregister(self.pid);
        r
    }

    fn stop_inner(&mut self) -> Result<(), String> {
        match std::mem::replace(&mut self.inner, Inner::Stopped) {
            Inner::Command {
                mut child,
                signal,
                grace,
            } => process::stop_group(&mut child, signal, grace),
            Inner::Postgres(pg) => {
                let pid = self.pid;
                pg.stop()?;
                if process::alive(pid) {
                    return Err(format!("postmaster {pid} still running after its shutdown"));
                }
                Ok(())
            }
            Inner::Stopped => Ok(()),
        }
    }
}

/// The running environment, in start order. Dropping it stops every service, last first.
#[derive(Default)]
pub struct Services {
    pub list: Vec<Running>,
    /// Each service's log is also told here on teardown errors.
    quiet: bool,
}

impl Services {
    /// Starts `suite`'s services in dependency order, each ready before the next starts. On
    /// an error, the ones already started are stopped (the guard drops) before it returns.
    pub fn start(
        suite: &Suite,
        ctx: &Ctx,
        logs: &Path,
        ctl: &RunControl,
        mut note: impl FnMut(&str),
    ) -> Result<Services, String> {
        std::fs::create_dir_all(logs)
            .map_err(|e| format!("cannot create {}: {e}", logs.display()))?;
        let mut all = Services::default();
        for def in &suite.services {
            if ctl.is_stopped() {
                return Err("interrupted while services were starting".into());
            }
            let mut c = ctx.clone();
            c.this = Some(def.name.clone());
            let started = std::time::Instant::now();
            let r = start_one(suite, def, &c, logs, ctl)?;
            note(&format!(
                "service {} ready in {:.1}s (pid {}, {}; log {})",
                def.name,
                started.elapsed().as_secs_f64(),
                r.pid,
                ctx.services.get(&def.name).map_or("", |e| e.url.as_str()),
                r.log.display()
            ));
            all.list.push(r);
        }
        Ok(all)
    }

    pub fn get(&self, name: &str) -> Option<&Running> {
        self.list.iter().find(|r| r.name == name)
    }

    /// `NAME=pid:N` monitor specs for every service still running.
    pub fn monitor_specs(&mut self) -> Vec<volley_monitor::MonitorSpec> {
        self.list
            .iter_mut()
            .filter_map(|r| {
                if r.exited().is_some() {
                    return None;
                }
                Some(volley_monitor::MonitorSpec {
                    name: r.name.clone(),
                    // The whole tree: a service's workers (or a shell's child) count too.
                    source: volley_monitor::Source::Tree(r.pid),
                })
            })
            .collect()
    }

    /// Stops every service, last started first; one line per failure.
    pub fn stop_all(&mut self) -> Vec<String> {
        let mut errors = Vec::new();
        while let Some(mut r) = self.list.pop() {
            if let Err(e) = r.stop() {
                errors.push(format!("service {}: {e}", r.name));
            }
        }
        errors
    }

    pub fn quiet(&mut self) {
        self.quiet = true;
    }
}

impl Drop for Services {
    fn drop(&mut self) {
        for e in self.stop_all() {
            if !self.quiet {
                eprintln!("volley suite: teardown: {e}");
            }
        }
    }
}

fn start_one(
    suite: &Suite,
    def: &ServiceDef,
    ctx: &Ctx,
    logs: &Path,
    ctl: &RunControl,
) -> Result<Running, String> {
    let log = logs.join(format!("{}.log", def.name));
    let x = |s: &str| {
        ctx.expand(s)
            .map_err(|e| format!("{}: services.{}: {e}", def.at, def.name))
    };
    let port = ctx.services.get(&def.name).map_or(0, |e| e.port);
    match &def.kind {
        Kind::Postgres {
            user,
            database,
            password,
            init_sql,
        } => {
            let init: Vec<PathBuf> = init_sql
                .iter()
                .map(|f| x(f).map(|f| suite.dir.join(f)))
                .collect::<Result<_, _>>()?;
            let pg = postgres::start(&postgres::Spec {
                user,
                database,
                password: password.as_deref(),
                port,
                init_sql: init,
                log: &log,
                timeout: def.timeout,
            })
            .map_err(|e| format!("service '{}' (kind = \"postgres\"): {e}", def.name))?;
            process::register(pg.pid(), false);
            Ok(Running {
                name: def.name.clone(),
                pid: pg.pid(),
                log,
                inner: Inner::Postgres(pg),
            })
        }
        Kind::Command { command, env, cwd } => {
            let xc = |c| {
                expand_command(c, ctx)
                    .map_err(|e| format!("{}: services.{}: {e}", def.at, def.name))
            };
            let command = xc(command)?;
            let mut vars = BTreeMap::new();
            vars.insert("PORT".to_string(), port.to_string());
            for (k, v) in env {
                vars.insert(k.clone(), x(v)?);
            }
            let cwd = match cwd {
                Some(c) => suite.dir.join(x(c)?),
                None => suite.dir.clone(),
            };
            // Appended: a restarted service (a fault) keeps its earlier lines.
            let out = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&log)
                .map_err(|e| format!("cannot create {}: {e}", log.display()))?;
            let err = out.try_clone().map_err(|e| e.to_string())?;
            let mut child = process::command(&command, &vars, Some(&cwd), out.into(), err.into())?
                .spawn()
                .map_err(|e| {
                    format!(
                        "service '{}': cannot run `{}`: {e}",
                        def.name,
                        process::show(&command)
                    )
                })?;
            process::register(child.id(), true);
            let probes: Vec<ready::Probe> = def
                .ready
                .iter()
                .map(|p| {
                    Ok(match p {
                        Probe::Http(u) => ready::Probe::Http(x(u)?),
                        Probe::Tcp(a) => ready::Probe::Tcp(x(a)?),
                        Probe::Log(r) => ready::Probe::Log(r.clone()),
                        Probe::Command(c) => ready::Probe::Command(xc(c)?),
                    })
                })
                .collect::<Result<_, String>>()
                .inspect_err(|_| {
                    let _ = process::stop_group(&mut child, libc::SIGKILL, Duration::ZERO);
                })?;
            let wait = ready::Wait {
                name: &def.name,
                interval: def.ready_interval,
                timeout: def.timeout,
                log: &log,
                env: &vars,
                cwd: Some(&cwd),
            };
            let pid = child.id();
            let mut running = Running {
                name: def.name.clone(),
                pid,
                log: log.clone(),
                inner: Inner::Command {
                    child,
                    signal: def.stop_signal.0,
                    grace: def.stop_timeout,
                },
            };
            if !probes.is_empty() {
                let Inner::Command { child, .. } = &mut running.inner else {
                    unreachable!("just built")
                };
                if let Err(e) = ready::wait(&wait, &probes, child, ctl) {
                    // Not ready is not kept: stop it (and say if even that failed).
                    return Err(match running.stop() {
                        Ok(()) => e,
                        Err(s) => format!("{e}\nand stopping it failed: {s}"),
                    });
                }
            }
            Ok(running)
        }
    }
}

/// Expands every string of a command.
pub fn expand_command(
    c: &crate::file::CommandLine,
    ctx: &Ctx,
) -> Result<crate::file::CommandLine, String> {
    use crate::file::CommandLine;
    Ok(match c {
        CommandLine::Shell(s) => CommandLine::Shell(ctx.expand(s)?),
        CommandLine::Argv(v) => {
            CommandLine::Argv(v.iter().map(|s| ctx.expand(s)).collect::<Result<_, _>>()?)
        }
    })
}
