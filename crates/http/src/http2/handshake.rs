//! The HTTP/2 handshake on an open stream, shared by [`H2Connection::connect`] (its own TCP/TLS
//! stream) and [`H2Connection::on_stream`] (script mode's https stream after ALPN chose h2).

use super::*;

/// The client preface and SETTINGS on `io`, then [`settle`], all by `deadline`.
pub(super) async fn handshake<S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin>(
    io: S,
    is_tls: bool,
    wire: Arc<WireCounters>,
    addr: SocketAddr,
    deadline: tokio::time::Instant,
    connect_timeout: Duration,
) -> Result<(H2Connection, H2Conn<S, Bytes>), HttpError> {
    let handshake = h2::client::Builder::new()
        .initial_window_size(STREAM_WINDOW)
        .initial_connection_window_size(CONNECTION_WINDOW)
        .initial_max_send_streams(INITIAL_MAX_STREAMS)
        .enable_push(false)
        .handshake::<_, Bytes>(io);
    let setup = async {
        let (send, mut conn) = handshake.await.map_err(|e| handshake_error(e, addr))?;
        settle(&mut conn, addr).await?;
        Ok::<_, HttpError>((send, conn))
    };
    let (send, conn) = match tokio::time::timeout_at(deadline, setup).await {
        Err(_) => {
            let mut e = HttpError::new(
                ErrorClass::Timeout,
                format!("HTTP/2 handshake with {addr} not done within {connect_timeout:?}"),
            );
            (e.bytes_sent, e.bytes_received) = wire.get();
            return Err(e);
        }
        Ok(Err(mut e)) => {
            (e.bytes_sent, e.bytes_received) = wire.get();
            return Err(e);
        }
        Ok(Ok(pair)) => pair,
    };
    let shared = Arc::new(Shared {
        wire,
        active: AtomicUsize::new(0),
        freed: Notify::new(),
        closed: AtomicBool::new(false),
        tls: is_tls,
    });
    let conn_handle = H2Connection {
        send,
        shared,
        keep_headers: false,
        max_body: u64::MAX,
    };
    Ok((conn_handle, conn))
}
