//! Script mode's way of taking several events per wait: [`WsConn::next_ready`] returns an
//! event the connection already holds (tungstenite parsed it out of an earlier read) or the
//! socket can give without blocking, so `k6/ws`'s pump hands every message one read brought
//! in to the handlers before the VU suspends again (one coroutine switch and one write per
//! read instead of per message).

use super::{closed_by_peer, Message, WsConn, WsEvent};
use futures_util::{FutureExt, SinkExt, StreamExt};

impl WsConn {
    /// The next event if it is already there; None when reading would wait, or when a write
    /// failed (the next [`WsConn::next_flushed`] reports it). A pong or close reply
    /// tungstenite queued is written now if the socket takes it at once, else it stays
    /// buffered for the next [`WsConn::next_flushed`] or [`WsConn::finish`].
    pub fn next_ready(&mut self) -> Option<WsEvent> {
        if self.buffer_error.is_some() {
            return None;
        }
        loop {
            let m = match self.ws.next().now_or_never()? {
                None => return Some(self.gone(None)),
                Some(Err(e)) => return Some(self.gone(Some(e))),
                Some(Ok(m)) => m,
            };
            return Some(match m {
                Message::Text(t) => WsEvent::Text(t.as_str().to_string()),
                Message::Binary(b) => WsEvent::Binary(b.to_vec()),
                Message::Pong(p) => WsEvent::Pong(p.to_vec()),
                Message::Ping(_) | Message::Close(_) => {
                    if !matches!(self.ws.flush().now_or_never(), Some(Ok(()))) {
                        self.unflushed = true;
                    }
                    match m {
                        Message::Close(frame) => closed_by_peer(frame),
                        _ => WsEvent::Ping,
                    }
                }
                Message::Frame(_) => continue,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{WsCmd, WsEvent};
    use std::time::{Duration, Instant};

    /// Messages one flush sent come back; once the first is waited for, the others are
    /// taken without waiting as they are in, in order and with their kinds (text, binary,
    /// the server's ping); with nothing left `next_ready` is None at once and the wait
    /// times out.
    #[test]
    fn events_already_read_are_taken_without_waiting_in_order() {
        let (_t, rt, mut conn, _tx) = super::super::tests::echo();
        rt.block_on(async {
            conn.buffer(WsCmd::Text("a".into()));
            conn.buffer(WsCmd::Binary(vec![1, 2]));
            conn.buffer(WsCmd::Text("!ping".into()));
            conn.buffer(WsCmd::Text("b".into()));
            let until = Instant::now() + Duration::from_secs(5);
            let mut got = vec![conn.next_flushed(Some(until)).await];
            while got.len() < 4 {
                match conn.next_ready() {
                    Some(ev) => got.push(ev),
                    // The echoes may come in more than one read: wait for the next one.
                    None => got.push(conn.next_flushed(Some(until)).await),
                }
            }
            let want = [
                WsEvent::Text("a".into()),
                WsEvent::Binary(vec![1, 2]),
                WsEvent::Ping,
                WsEvent::Text("b".into()),
            ];
            assert_eq!(got, want);
            assert_eq!(conn.next_ready(), None);
            let soon = Instant::now() + Duration::from_millis(20);
            assert_eq!(conn.next_flushed(Some(soon)).await, WsEvent::Timeout);
        });
    }
}
