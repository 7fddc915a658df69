//! The server lifecycle Volley's servers share (this target and the demo service): a listener
//! bound with `SO_REUSEADDR`, served either on a dedicated runtime thread that a handle stops,
//! or in the foreground until SIGINT/SIGTERM, by an accept loop that backs off on errors.

use std::future::Future;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::pin::Pin;
use std::thread::JoinHandle;
use std::time::Duration;

use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio::runtime::Runtime;
use tokio::sync::oneshot;

/// Pending connections the kernel queues before `accept`.
const LISTEN_BACKLOG: u32 = 1024;
/// How long shutdown waits for the runtime's tasks before abandoning them.
const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(5);

/// The stop signal handed to a serve function.
pub type Stop = Pin<Box<dyn Future<Output = ()> + Send>>;

/// Bind `addr` inside `runtime` (registering the socket needs its reactor). `SO_REUSEADDR`
/// lets a restarted server rebind a port with connections still in TIME_WAIT.
pub fn bind(runtime: &Runtime, addr: SocketAddr) -> io::Result<TcpListener> {
    let _guard = runtime.enter();
    let socket = match addr {
        SocketAddr::V4(_) => TcpSocket::new_v4()?,
        SocketAddr::V6(_) => TcpSocket::new_v6()?,
    };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(LISTEN_BACKLOG)
}

/// `scheme://IP:PORT`, with a wildcard bind address shown as loopback so it can be dialled.
pub fn url(scheme: &str, addr: SocketAddr) -> String {
    let ip = match addr.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(ip) if ip.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
        ip => ip,
    };
    format!("{scheme}://{}", SocketAddr::new(ip, addr.port()))
}

/// A server running on its own thread. Stopping (or dropping) it ends accepting and open
/// connections and joins the thread.
#[derive(Debug)]
pub struct Background {
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Background {
    pub fn stop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Run `serve(stop)` on `runtime` in a new thread named `name`.
pub fn spawn_background<F>(
    name: &str,
    runtime: Runtime,
    serve: impl FnOnce(Stop) -> F + Send + 'static,
) -> io::Result<Background>
where
    F: Future<Output = ()>,
{
    let (stop_tx, stop_rx) = oneshot::channel::<()>();
    let thread = std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            // A dropped sender (the handle leaked into a panic) also stops.
            runtime.block_on(serve(Box::pin(async {
                let _ = stop_rx.await;
            })));
            runtime.shutdown_timeout(SHUTDOWN_TIMEOUT);
        })?;
    Ok(Background {
        stop: Some(stop_tx),
        thread: Some(thread),
    })
}

/// Run `serve(stop)` in the foreground until SIGINT or SIGTERM. `on_bound` runs once the
/// handlers are installed, so a signal sent as soon as the caller sees the address still
/// stops the server cleanly.
pub fn run_foreground<F>(
    runtime: Runtime,
    on_bound: impl FnOnce(),
    serve: impl FnOnce(Stop) -> F,
) -> io::Result<()>
where
    F: Future<Output = ()>,
{
    let result = runtime.block_on(async {
        let stop = stop_signal()?;
        on_bound();
        serve(Box::pin(stop)).await;
        Ok(())
    });
    runtime.shutdown_timeout(SHUTDOWN_TIMEOUT);
    result
}

/// Accept until `stop` resolves, handing each connection (with TCP_NODELAY set: small
/// responses must not wait for Nagle) to `on_conn`. Open connections are not waited for: the
/// caller drops the runtime, which ends them.
pub async fn accept_until(
    listener: TcpListener,
    stop: impl Future<Output = ()>,
    mut on_conn: impl FnMut(TcpStream),
) {
    tokio::pin!(stop);
    loop {
        let accepted = tokio::select! {
            biased;
            () = &mut stop => return,
            accepted = listener.accept() => accepted,
        };
        match accepted {
            Ok((tcp, _)) => {
                let _ = tcp.set_nodelay(true);
                on_conn(tcp);
            }
            // Typically EMFILE or a connection reset before accept; back off briefly instead
            // of spinning, and keep serving.
            Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
        }
    }
}

#[cfg(unix)]
fn stop_signal() -> io::Result<impl Future<Output = ()>> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut interrupt = signal(SignalKind::interrupt())?;
    let mut terminate = signal(SignalKind::terminate())?;
    Ok(async move {
        tokio::select! {
            _ = interrupt.recv() => {}
            _ = terminate.recv() => {}
        }
    })
}

#[cfg(not(unix))]
fn stop_signal() -> io::Result<impl Future<Output = ()>> {
    Ok(async {
        let _ = tokio::signal::ctrl_c().await;
    })
}
