//! Ctrl-C and SIGTERM. The first stops the run: waits end at once, requests in flight get a
//! short grace (`volley_engine::control::INTERRUPT_GRACE`), and the message says what the run still waits for. The
//! second abandons everything at once. Either way the summary and result file are still
//! written; should that itself hang, the process exits [`LAST_RESORT`] after the second
//! signal, and at once on a third.

use volley_engine::control::RunPhase;
use volley_engine::RunControl;

/// After the second signal, the longest the process may take to write what it has.
const LAST_RESORT: std::time::Duration = std::time::Duration::from_secs(3);

/// Register the handlers now (before the run starts, so an early signal is not lost to the
/// default action) and serve them on a small background thread.
#[cfg(unix)]
pub fn install(ctl: RunControl) {
    install_with(ctl, || {});
}

/// [`install`], with `before_exit` called when the process exits on the last resort (e.g.
/// `volley suite` kills its services' process groups: no destructor runs after `exit`).
#[cfg(unix)]
pub fn install_with(ctl: RunControl, before_exit: fn()) {
    use tokio::signal::unix::{signal, SignalKind};
    let Ok(rt) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return;
    };
    let (int, term) = {
        let _guard = rt.enter();
        (
            signal(SignalKind::interrupt()),
            signal(SignalKind::terminate()),
        )
    };
    let (Ok(mut int), Ok(mut term)) = (int, term) else {
        return;
    };
    let _ = std::thread::Builder::new().name("volley-signals".into()).spawn(move || {
        rt.block_on(async move {
            tokio::select! { _ = int.recv() => {}, _ = term.recv() => {} }
            eprintln!("\nvolley: stopping: {} (Ctrl-C again stops at once)", waiting_for(&ctl));
            ctl.interrupt();
            tokio::select! { _ = int.recv() => {}, _ = term.recv() => {} }
            eprintln!("volley: stopping at once; writing what was recorded");
            ctl.hard_stop();
            tokio::select! {
                _ = int.recv() => {},
                _ = term.recv() => {},
                _ = tokio::time::sleep(LAST_RESORT) => {
                    eprintln!("volley: still not stopped after {}s; exiting", LAST_RESORT.as_secs());
                }
            }
            before_exit();
            std::process::exit(crate::exit::INTERRUPTED);
        });
    });
}

#[cfg(not(unix))]
pub fn install(_ctl: RunControl) {}

#[cfg(not(unix))]
pub fn install_with(_ctl: RunControl, _before_exit: fn()) {}

/// What the first signal waits for, in words.
fn waiting_for(ctl: &RunControl) -> String {
    let w = ctl.status().waiting();
    match w.phase {
        // Not a script run (quick mode, monitor, demo): the generic words.
        None | Some(RunPhase::Starting) => "waiting for in-flight requests".into(),
        Some(_) => w.describe(),
    }
}
