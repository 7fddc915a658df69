//! The upgrade handshake of a connection that offers permessage-deflate. Ours, not
//! tungstenite's: tungstenite neither offers extensions nor gives back the bytes it read past
//! the response, which a [`DeflateStream`] needs. The request is tungstenite's
//! (`generate_request`) plus the offer; the response is checked as tungstenite checks it,
//! with the same errors, then the extension answer picks the codec: ours when the server
//! accepted, tungstenite's (handed the bytes read so far) when it declined.

use std::sync::Arc;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_tungstenite::tungstenite::error::{Error as TError, ProtocolError, SubProtocolError};
use tokio_tungstenite::tungstenite::handshake::client::{generate_request, Request, Response};
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::handshake::machine::TryParse;
use tokio_tungstenite::tungstenite::http::{HeaderName, HeaderValue, StatusCode};
use tokio_tungstenite::tungstenite::protocol::{Role, WebSocketConfig};
use tokio_tungstenite::WebSocketStream;

use super::codec::DeflateStream;
use super::deflate::{self, Deflate};
use super::socket::Socket;
use crate::transport::{Io, WireCounters};

/// Largest response head read (tungstenite reads without a limit; a server's headers are
/// small, and this bounds what a hostile one can make us hold).
const MAX_HEAD: usize = 64 << 10;

/// Upgrade `io` offering permessage-deflate; the socket and the server's response.
pub async fn upgrade(
    mut request: Request,
    mut io: Io<Arc<WireCounters>>,
    config: WebSocketConfig,
) -> Result<(Socket, Response), TError> {
    request.headers_mut().insert(
        HeaderName::from_static("sec-websocket-extensions"),
        HeaderValue::from_static(deflate::OFFER),
    );
    let offered = request
        .headers()
        .get("sec-websocket-protocol")
        .map(|v| v.to_str().unwrap_or("").to_string());
    let (bytes, key) = generate_request(request)?;
    io.write_all(&bytes).await?;
    io.flush().await?;

    let mut buf = Vec::with_capacity(1024);
    let (size, mut response) = loop {
        if let Some(done) = Response::try_parse(&buf)? {
            break done;
        }
        if buf.len() >= MAX_HEAD {
            return Err(TError::Protocol(ProtocolError::HandshakeIncomplete));
        }
        buf.reserve(4096);
        if io.read_buf(&mut buf).await? == 0 {
            return Err(TError::Protocol(ProtocolError::HandshakeIncomplete));
        }
    };
    let tail = buf.split_off(size);
    if response.status() != StatusCode::SWITCHING_PROTOCOLS {
        *response.body_mut() = Some(tail);
        return Err(TError::Http(Box::new(response)));
    }
    verify(&response, &key, offered.as_deref())?;
    let answers = response
        .headers()
        .get_all("sec-websocket-extensions")
        .iter()
        .map(|v| v.to_str().unwrap_or("?"));
    let params = deflate::negotiate(answers).map_err(|_| {
        let name = HeaderName::from_static("sec-websocket-extensions");
        TError::Protocol(ProtocolError::InvalidHeader(Box::new(name)))
    })?;
    let max = config.max_message_size.unwrap_or(usize::MAX);
    let socket = match params {
        Some(p) => Socket::Deflate(Box::new(DeflateStream::new(
            io,
            &tail,
            Deflate::new(p),
            max,
            config.read_buffer_size,
        ))),
        None => Socket::Plain(
            WebSocketStream::from_partially_read(io, tail, Role::Client, Some(config)).await,
        ),
    };
    Ok((socket, response))
}

/// RFC 6455 4.1's checks of a 101, as tungstenite makes them.
fn verify(response: &Response, key: &str, offered: Option<&str>) -> Result<(), TError> {
    let h = response.headers();
    let is = |name: &str, want: &str| {
        h.get(name)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.eq_ignore_ascii_case(want))
    };
    if !is("upgrade", "websocket") {
        return Err(TError::Protocol(
            ProtocolError::MissingUpgradeWebSocketHeader,
        ));
    }
    if !is("connection", "upgrade") {
        return Err(TError::Protocol(
            ProtocolError::MissingConnectionUpgradeHeader,
        ));
    }
    let accept = derive_accept_key(key.as_bytes());
    if h.get("sec-websocket-accept")
        .is_none_or(|v| v != accept.as_str())
    {
        return Err(TError::Protocol(
            ProtocolError::SecWebSocketAcceptKeyMismatch,
        ));
    }
    let sub = |e| {
        Err(TError::Protocol(
            ProtocolError::SecWebSocketSubProtocolError(e),
        ))
    };
    match (h.get("sec-websocket-protocol"), offered) {
        (None, Some(_)) => sub(SubProtocolError::NoSubProtocol),
        (Some(_), None) => sub(SubProtocolError::ServerSentSubProtocolNoneRequested),
        (Some(chosen), Some(offered)) => {
            let chosen = chosen.to_str().unwrap_or("");
            match offered.split(',').any(|o| o.trim() == chosen) {
                true => Ok(()),
                false => sub(SubProtocolError::InvalidSubProtocol),
            }
        }
        (None, None) => Ok(()),
    }
}
