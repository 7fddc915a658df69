//! `/ws/echo`: a WebSocket echo endpoint (RFC 6455 over hyper's upgrade, tungstenite framing)
//! for testing `k6/ws` and `k6/websockets` clients.
//!
//! Text and binary messages come back as they were sent; pings are answered by pongs; a
//! close is answered with the same code. A few text commands make the server act first, so
//! tests can cover server-initiated events:
//!
//! | message | server does |
//! |---|---|
//! | `!close CODE [REASON]` | closes with CODE and REASON |
//! | `!ping` | sends a ping (payload `srv`) |
//! | `!burst N` | sends N text messages `burst 0` .. `burst N-1` (N ≤ 10 000) |
//! | `!binary N` | sends one binary message of N bytes `0, 1, 2, ...` (N ≤ 1 MiB) |
//! | `!headers` | sends the upgrade request's headers as a JSON object (names lower-case) |
//! | `!drop` | drops the TCP connection without a close frame |
//!
//! The first subprotocol the client offers (`Sec-WebSocket-Protocol`) is accepted. A request
//! without an upgrade gets 400.

use futures_util::{SinkExt, StreamExt};
use hyper::body::Incoming;
use hyper::header::{self, HeaderValue};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::{Map, Value};
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, Role, WebSocketConfig};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;

use crate::body::RespBody;
use crate::routes::Resp;

const MAX_BURST: usize = 10_000;
/// Read buffer per socket (see the note where it is used).
const READ_BUFFER: usize = 4 << 10;
const MAX_BINARY: usize = 1 << 20;

/// What an upgraded socket does.
pub(crate) enum Endpoint {
    /// `/ws/echo`: echo and the test commands above.
    Echo,
    /// `/ws/chat`: broadcast to the room (see `ws_chat`).
    Chat(String),
}

/// Answer an upgrade request with 101 and serve the socket on its own task.
pub(crate) fn upgrade(mut req: Request<Incoming>, endpoint: Endpoint) -> Resp {
    let key = req.headers().get("sec-websocket-key").cloned();
    let is_upgrade = req
        .headers()
        .get(header::UPGRADE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("websocket"));
    let Some(key) = key.filter(|_| is_upgrade) else {
        let mut r = Response::new(RespBody::from("expected a WebSocket upgrade\n"));
        *r.status_mut() = StatusCode::BAD_REQUEST;
        return r;
    };
    let mut headers = Map::new();
    for (k, v) in req.headers() {
        let v = String::from_utf8_lossy(v.as_bytes()).into_owned();
        headers.insert(k.as_str().to_string(), Value::String(v));
    }
    let protocol = req
        .headers()
        .get("sec-websocket-protocol")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(',').next())
        .map(|p| p.trim().to_string())
        .filter(|p| !p.is_empty());
    let on_upgrade = hyper::upgrade::on(&mut req);
    tokio::spawn(async move {
        if let Ok(up) = on_upgrade.await {
            // tungstenite zeroes its whole read buffer (128 KiB by default) on every read.
            let config = WebSocketConfig::default().read_buffer_size(READ_BUFFER);
            let ws = WebSocketStream::from_raw_socket(TokioIo::new(up), Role::Server, Some(config))
                .await;
            match endpoint {
                Endpoint::Echo => serve(ws, Value::Object(headers)).await,
                Endpoint::Chat(room) => crate::ws_chat::serve(ws, room).await,
            }
        }
    });
    let mut r = Response::new(RespBody::empty());
    *r.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    let h = r.headers_mut();
    h.insert(header::UPGRADE, HeaderValue::from_static("websocket"));
    h.insert(header::CONNECTION, HeaderValue::from_static("Upgrade"));
    if let Ok(v) = HeaderValue::from_str(&derive_accept_key(key.as_bytes())) {
        h.insert("sec-websocket-accept", v);
    }
    if let Some(p) = protocol.and_then(|p| HeaderValue::from_str(&p).ok()) {
        h.insert("sec-websocket-protocol", p);
    }
    r
}

async fn serve<S>(mut ws: WebSocketStream<S>, headers: Value)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    while let Some(Ok(msg)) = ws.next().await {
        let reply = match msg {
            Message::Text(t) => match command(t.as_str(), &headers) {
                Some(Cmd::Send(list)) => list,
                Some(Cmd::Drop) => return,
                None => vec![Message::Text(t)],
            },
            Message::Binary(b) => vec![Message::Binary(b)],
            // tungstenite answers pings and close frames itself (on the next write/flush).
            Message::Ping(_) | Message::Pong(_) | Message::Frame(_) => {
                let _ = ws.flush().await;
                continue;
            }
            Message::Close(_) => {
                let _ = ws.flush().await;
                continue;
            }
        };
        for m in reply {
            if ws.feed(m).await.is_err() {
                return;
            }
        }
        if ws.flush().await.is_err() {
            return;
        }
    }
}

enum Cmd {
    Send(Vec<Message>),
    Drop,
}

fn command(text: &str, headers: &Value) -> Option<Cmd> {
    let rest = text.strip_prefix('!')?;
    let (cmd, arg) = rest.split_once(' ').unwrap_or((rest, ""));
    let n = || arg.trim().parse::<usize>().ok();
    Some(match cmd {
        "close" => {
            let (code, reason) = arg.split_once(' ').unwrap_or((arg, ""));
            let code = code.trim().parse::<u16>().unwrap_or(1000);
            Cmd::Send(vec![Message::Close(Some(CloseFrame {
                code: CloseCode::from(code),
                reason: reason.to_string().into(),
            }))])
        }
        "ping" => Cmd::Send(vec![Message::Ping("srv".into())]),
        "burst" => Cmd::Send(
            (0..n()?.min(MAX_BURST))
                .map(|i| Message::text(format!("burst {i}")))
                .collect(),
        ),
        "binary" => {
            let b: Vec<u8> = (0..n()?.min(MAX_BINARY)).map(|i| i as u8).collect();
            Cmd::Send(vec![Message::binary(b)])
        }
        "headers" => Cmd::Send(vec![Message::text(headers.to_string())]),
        "drop" => Cmd::Drop,
        _ => return None,
    })
}
