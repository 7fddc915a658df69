//! `/ws/chat?room=NAME`: WebSocket chat rooms for chat-style load scripts (examples/websocket).
//!
//! Every text or binary message a client sends goes to every client connected to the same
//! room at that moment, the sender included (so a client sees its own messages in the
//! room's order). Rooms live in this process (a test that starts several targets in one
//! process should use distinct room names) and are removed with their last member. A client
//! that reads too slowly misses the messages it fell behind on (the room keeps the last
//! [`BACKLOG`]) rather than holding the room's memory.

use futures_util::{SinkExt, StreamExt};
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};
use tokio::sync::broadcast;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;

/// Messages a room keeps for members that are behind.
const BACKLOG: usize = 1024;
/// Longest room name kept (longer names are cut).
const MAX_ROOM: usize = 128;

type Rooms = Mutex<HashMap<String, broadcast::Sender<Message>>>;

fn rooms() -> &'static Rooms {
    static ROOMS: OnceLock<Rooms> = OnceLock::new();
    ROOMS.get_or_init(Default::default)
}

/// The room named by the query (`room=NAME`; "lobby" without one).
pub(crate) fn room(query: Option<&str>) -> String {
    let name = query
        .into_iter()
        .flat_map(|q| q.split('&'))
        .find_map(|kv| kv.strip_prefix("room="))
        .filter(|r| !r.is_empty())
        .unwrap_or("lobby");
    name.chars().take(MAX_ROOM).collect()
}

/// Serve one member of `room` until it leaves.
pub(crate) async fn serve<S>(mut ws: WebSocketStream<S>, room: String)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    let (tx, mut rx) = {
        let mut map = rooms().lock().unwrap_or_else(|e| e.into_inner());
        let tx = map
            .entry(room.clone())
            .or_insert_with(|| broadcast::channel(BACKLOG).0)
            .clone();
        let rx = tx.subscribe();
        (tx, rx)
    };
    loop {
        tokio::select! {
            msg = ws.next() => match msg {
                Some(Ok(m @ (Message::Text(_) | Message::Binary(_)))) => {
                    let _ = tx.send(m);
                }
                // tungstenite queued the pong or the close reply: write it.
                Some(Ok(Message::Ping(_) | Message::Pong(_) | Message::Frame(_))) => {
                    if ws.flush().await.is_err() {
                        break;
                    }
                }
                Some(Ok(Message::Close(_))) => {
                    let _ = ws.flush().await;
                    break;
                }
                Some(Err(_)) | None => break,
            },
            out = rx.recv() => match out {
                Ok(m) => {
                    if ws.send(m).await.is_err() {
                        break;
                    }
                }
                Err(broadcast::error::RecvError::Lagged(_)) => {}
                Err(broadcast::error::RecvError::Closed) => break,
            },
        }
    }
    drop(rx);
    let mut map = rooms().lock().unwrap_or_else(|e| e.into_inner());
    // The map holds one sender and this member one more: none left listening, drop the room.
    if tx.receiver_count() == 0 {
        map.remove(&room);
    }
}

#[cfg(test)]
mod tests {
    use super::room;

    #[test]
    fn the_room_comes_from_the_query() {
        assert_eq!(room(None), "lobby");
        assert_eq!(room(Some("a=1&room=blue")), "blue");
        assert_eq!(room(Some("room=")), "lobby");
        assert_eq!(room(Some(&format!("room={}", "x".repeat(500)))).len(), 128);
    }
}
