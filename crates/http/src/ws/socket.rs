//! The socket under a [`super::WsConn`]: tungstenite's for plain connections, ours
//! ([`DeflateStream`]) for those that negotiated permessage-deflate. Both are a `Stream` and a
//! `Sink` of tungstenite messages with tungstenite's errors; this enum forwards to the one
//! in use, so `WsConn` reads and writes the same way over either.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures_util::{Sink, Stream};
use tokio_tungstenite::tungstenite::{Error as TError, Message};
use tokio_tungstenite::WebSocketStream;

use super::codec::DeflateStream;
use crate::transport::{Io, WireCounters};

// The plain variant, by far the more common, stays inline: no pointer hop on its hot path.
#[allow(clippy::large_enum_variant)]
pub enum Socket {
    Plain(WebSocketStream<Io<Arc<WireCounters>>>),
    Deflate(Box<DeflateStream>),
}

impl Stream for Socket {
    type Item = Result<Message, TError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        match self.get_mut() {
            Socket::Plain(s) => Pin::new(s).poll_next(cx),
            Socket::Deflate(s) => Pin::new(s.as_mut()).poll_next(cx),
        }
    }
}

impl Sink<Message> for Socket {
    type Error = TError;

    fn poll_ready(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), TError>> {
        match self.get_mut() {
            Socket::Plain(s) => Pin::new(s).poll_ready(cx),
            Socket::Deflate(s) => Pin::new(s.as_mut()).poll_ready(cx),
        }
    }

    fn start_send(self: Pin<&mut Self>, m: Message) -> Result<(), TError> {
        match self.get_mut() {
            Socket::Plain(s) => Pin::new(s).start_send(m),
            Socket::Deflate(s) => Pin::new(s.as_mut()).start_send(m),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), TError>> {
        match self.get_mut() {
            Socket::Plain(s) => Pin::new(s).poll_flush(cx),
            Socket::Deflate(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), TError>> {
        match self.get_mut() {
            Socket::Plain(s) => Pin::new(s).poll_close(cx),
            Socket::Deflate(s) => Pin::new(s.as_mut()).poll_close(cx),
        }
    }
}
