//! Ctrl-C and SIGTERM: the first stops the run gracefully, the second abandons in-flight
//! requests. Either way the summary and result file are still written.

use volley_engine::RunControl;

/// Register the handlers now (before the run starts, so an early signal is not lost to the
/// default action) and serve them on a small background thread.
#[cfg(unix)]
pub fn install(ctl: RunControl) {
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
            eprintln!("\nvolley: stopping: waiting for in-flight requests (Ctrl-C again abandons them)");
            ctl.interrupt();
            tokio::select! { _ = int.recv() => {}, _ = term.recv() => {} }
            eprintln!("volley: abandoning in-flight requests");
            ctl.hard_stop();
        });
    });
}

#[cfg(not(unix))]
pub fn install(_ctl: RunControl) {}
