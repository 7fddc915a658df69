//! Quick mode's way of reading a [`WsConn`] (`volley ws`): message payloads handed over
//! without a copy ([`Frame::Data`]), and [`WsConn::try_next_frame`], which takes a frame the
//! connection already holds (or the socket has ready) without waiting, so a caller can
//! handle every frame one read brought in before it writes or waits again. Quick mode never
//! queues through a [`super::WsSender`], so these skip the queue entirely.

use super::{Message, TError, WsConn, WsEvent, WRITE_WAIT};
use bytes::Bytes;
use futures_util::{FutureExt, SinkExt, StreamExt};
use std::time::Instant;

/// What the next read gave.
#[derive(Debug, PartialEq)]
pub enum Frame {
    /// A text or binary message's payload (shared with the read, not copied).
    Data(Bytes),
    /// Anything else: ping, pong, close (the reply already written), timeout.
    Event(WsEvent),
}

impl WsConn {
    /// The next frame, or [`WsEvent::Timeout`] at `deadline`.
    pub async fn next_frame(&mut self, deadline: Option<Instant>) -> Frame {
        let timed = self.arm(deadline);
        loop {
            let msg = tokio::select! {
                biased;
                msg = self.ws.next() => msg,
                _ = self.timer.as_mut(), if timed => return Frame::Event(WsEvent::Timeout),
            };
            if let Some(f) = self.frame_of(msg).await {
                return f;
            }
        }
    }

    /// A frame that is already there: one tungstenite has buffered, or one the socket can
    /// give without blocking (tokio knows a short read drained it, so asking costs no
    /// syscall then). None when reading would wait.
    pub async fn try_next_frame(&mut self) -> Option<Frame> {
        loop {
            let msg = self.ws.next().now_or_never()?;
            if let Some(f) = self.frame_of(msg).await {
                return Some(f);
            }
        }
    }

    /// One read's result as a [`Frame`]; None for a bare frame tungstenite passes through.
    async fn frame_of(&mut self, msg: Option<Result<Message, TError>>) -> Option<Frame> {
        let m = match msg {
            None => return Some(Frame::Event(self.gone(None))),
            Some(Err(e)) => return Some(Frame::Event(self.gone(Some(e)))),
            Some(Ok(m)) => m,
        };
        Some(match m {
            Message::Text(t) => Frame::Data(t.into()),
            Message::Binary(b) => Frame::Data(b),
            Message::Pong(p) => Frame::Event(WsEvent::Pong(p.to_vec())),
            Message::Ping(_) | Message::Close(_) => {
                // tungstenite queued the pong or the close reply: write it now.
                let _ = tokio::time::timeout(WRITE_WAIT, self.ws.flush()).await;
                Frame::Event(match m {
                    Message::Close(frame) => super::closed_by_peer(frame),
                    _ => WsEvent::Ping,
                })
            }
            Message::Frame(_) => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::Prebuilt;
    use super::*;
    use std::time::Duration;

    /// Eight messages written in one flush come back; after the first echo is waited for,
    /// the rest are taken without waiting once they are in, in order, as shared payloads;
    /// with nothing left `try_next_frame` returns None at once and `next_frame` times out.
    #[test]
    fn frames_already_read_are_taken_without_waiting() {
        let (_t, rt, mut conn, _tx) = super::super::tests::echo();
        rt.block_on(async {
            for i in 0..8 {
                let m = Prebuilt::text(format!("m{i}"));
                conn.send_prebuilt(&m, false).await.unwrap();
            }
            conn.flush_now().await.unwrap();
            let until = Instant::now() + Duration::from_secs(5);
            let mut got = vec![conn.next_frame(Some(until)).await];
            while got.len() < 8 {
                match conn.try_next_frame().await {
                    Some(f) => got.push(f),
                    // The echoes may come in more than one read: wait for the next one.
                    None => got.push(conn.next_frame(Some(until)).await),
                }
            }
            let want: Vec<Frame> = (0..8)
                .map(|i| Frame::Data(Bytes::from(format!("m{i}"))))
                .collect();
            assert_eq!(got, want);
            assert_eq!(conn.try_next_frame().await, None);
            let soon = Instant::now() + Duration::from_millis(20);
            assert_eq!(
                conn.next_frame(Some(soon)).await,
                Frame::Event(WsEvent::Timeout)
            );
        });
    }
}
