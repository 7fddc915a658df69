//! A suite service as a fault target ([`volley_faults::ProcessTarget`]): kill/term/pause/
//! resume signal its whole process group; restart stops what is left of it and starts it
//! again with the same command, environment and port, waiting for readiness as at start.
//! During a faulted step the service's [`Running`] lives in a shared slot here (the
//! injector's thread may replace it); [`Services::put_back`] returns it for the next steps
//! and teardown.

use super::{process, start_one, Inner, Running, Services};
use crate::check::{ServiceDef, Suite};
use crate::file::interp::Ctx;
use std::path::PathBuf;
use std::sync::{mpsc, Arc, Mutex, OnceLock};
use volley_engine::RunControl;

/// Where a lent service is while the step runs.
pub type Slot = Arc<Mutex<Option<Running>>>;

pub struct ServiceTarget {
    slot: Slot,
    suite: Suite,
    def: ServiceDef,
    ctx: Ctx,
    logs: PathBuf,
}

impl ServiceTarget {
    fn signal(&self, sig: i32, what: &str) -> Result<(), String> {
        let g = self.slot.lock().unwrap_or_else(|e| e.into_inner());
        match g.as_ref() {
            Some(r) if matches!(r.inner, Inner::Command { .. }) => {
                process::signal_group(r.pid, sig);
                Ok(())
            }
            Some(_) => Err(format!(
                "{what} of service '{}': only command services take process faults",
                self.def.name
            )),
            None => Err(format!("service '{}' is not running", self.def.name)),
        }
    }
}

impl volley_faults::ProcessTarget for ServiceTarget {
    fn kill(&mut self) -> Result<(), String> {
        self.signal(libc::SIGKILL, "SIGKILL")
    }
    fn term(&mut self) -> Result<(), String> {
        self.signal(libc::SIGTERM, "SIGTERM")
    }
    fn pause(&mut self) -> Result<(), String> {
        self.signal(libc::SIGSTOP, "SIGSTOP")
    }
    fn resume(&mut self) -> Result<(), String> {
        self.signal(libc::SIGCONT, "SIGCONT")
    }
    fn restart(&mut self) -> Result<(), String> {
        let mut g = self.slot.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(mut old) = g.take() {
            // A stopped group would not take SIGTERM.
            process::signal_group(old.pid, libc::SIGCONT);
            old.stop()
                .map_err(|e| format!("restart of '{}': {e}", self.def.name))?;
        }
        let (suite, def, ctx, logs) = (
            self.suite.clone(),
            self.def.clone(),
            self.ctx.clone(),
            self.logs.clone(),
        );
        let started = on_spawner(move || start_one(&suite, &def, &ctx, &logs, &RunControl::new()))?;
        *g = Some(started);
        Ok(())
    }
    fn can_restart(&self) -> bool {
        matches!(self.def.kind, crate::check::Kind::Command { .. })
    }
}

type Job = Box<dyn FnOnce() + Send>;

/// Runs `f` on one thread that lives as long as Volley. Services get PR_SET_PDEATHSIG, which
/// fires when the *thread* that forked them ends: started from the injector's thread, a
/// restarted service would be SIGKILLed as soon as the step is over.
fn on_spawner<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, String> + Send + 'static,
) -> Result<T, String> {
    static SPAWNER: OnceLock<Mutex<mpsc::Sender<Job>>> = OnceLock::new();
    let tx = SPAWNER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<Job>();
        let _ = std::thread::Builder::new()
            .name("volley-suite-spawner".into())
            .spawn(move || {
                while let Ok(job) = rx.recv() {
                    job();
                }
            });
        Mutex::new(tx)
    });
    let (back, answer) = mpsc::channel();
    let job: Job = Box::new(move || {
        let _ = back.send(f());
    });
    tx.lock()
        .unwrap_or_else(|e| e.into_inner())
        .send(job)
        .map_err(|_| "the service spawner thread is gone".to_string())?;
    answer
        .recv()
        .map_err(|_| "the service spawner thread is gone".to_string())?
}

impl Services {
    /// Lends service `name` to a fault target for one step (`None`: no such service running).
    pub fn lend(
        &mut self,
        name: &str,
        suite: &Suite,
        ctx: &Ctx,
        logs: PathBuf,
    ) -> Option<(Slot, ServiceTarget)> {
        let i = self.list.iter().position(|r| r.name == name)?;
        let def = suite.services.iter().find(|d| d.name == name)?.clone();
        let slot: Slot = Arc::new(Mutex::new(Some(self.list.remove(i))));
        let mut ctx = ctx.clone();
        ctx.this = Some(name.to_string());
        let t = ServiceTarget {
            slot: slot.clone(),
            suite: suite.clone(),
            def,
            ctx,
            logs,
        };
        Some((slot, t))
    }

    /// Takes a lent service back, in its start-order place (a restart failed: nothing to take).
    pub fn put_back(&mut self, slot: &Slot, suite: &Suite) {
        let Some(r) = slot.lock().unwrap_or_else(|e| e.into_inner()).take() else {
            return;
        };
        let order = |n: &str| suite.services.iter().position(|d| d.name == n);
        let me = order(&r.name);
        let at = self
            .list
            .iter()
            .position(|x| order(&x.name) > me)
            .unwrap_or(self.list.len());
        self.list.insert(at, r);
    }
}
