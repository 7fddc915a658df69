//! [`super::codec`] and [`super::handshake`] against a hand-written server on loopback that
//! answers the upgrade as told and then writes exact frames (what no library server sends:
//! RSV1 where it was not negotiated, corrupt deflate data, a bomb, fragments with a ping
//! between them) and reads what the client wrote back.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

use super::deflate::{Deflate, Params};
use super::*;

/// Upgrade one connection answering `ext` in `Sec-WebSocket-Extensions` (None: declined),
/// write `first` in the same write as the 101 (it lands in the handshake's read), then run
/// `then` on the socket.
fn server(
    ext: Option<&'static str>,
    first: Vec<u8>,
    then: impl FnOnce(&mut TcpStream) + Send + 'static,
) -> (String, std::thread::JoinHandle<String>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("ws://{}/", l.local_addr().unwrap());
    let h = std::thread::spawn(move || {
        let (mut s, _) = l.accept().unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut req = Vec::new();
        let mut b = [0u8; 1];
        while !req.ends_with(b"\r\n\r\n") && s.read(&mut b).unwrap() == 1 {
            req.push(b[0]);
        }
        let req = String::from_utf8(req).unwrap();
        let key = req
            .lines()
            .find_map(|l| l.strip_prefix("Sec-WebSocket-Key: "))
            .unwrap();
        let accept = tokio_tungstenite::tungstenite::handshake::derive_accept_key(key.as_bytes());
        let mut out = format!(
            "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
             Sec-WebSocket-Accept: {accept}\r\n"
        );
        if let Some(e) = ext {
            out += &format!("Sec-WebSocket-Extensions: {e}\r\n");
        }
        let mut out = (out + "\r\n").into_bytes();
        out.extend_from_slice(&first);
        s.write_all(&out).unwrap();
        then(&mut s);
        req
    });
    (url, h)
}

/// An unmasked server frame.
fn frame(b0: u8, payload: &[u8]) -> Vec<u8> {
    let mut f = vec![b0];
    match payload.len() {
        n if n < 126 => f.push(n as u8),
        n if n <= 0xFFFF => {
            f.push(126);
            f.extend_from_slice(&(n as u16).to_be_bytes());
        }
        n => {
            f.push(127);
            f.extend_from_slice(&(n as u64).to_be_bytes());
        }
    }
    f.extend_from_slice(payload);
    f
}

/// One client frame, unmasked: (first byte, payload).
fn read_frame(s: &mut TcpStream) -> (u8, Vec<u8>) {
    let mut h = [0u8; 2];
    s.read_exact(&mut h).unwrap();
    assert!(h[1] & 0x80 != 0, "client frames are masked");
    let len = match h[1] & 0x7F {
        126 => {
            let mut l = [0u8; 2];
            s.read_exact(&mut l).unwrap();
            u16::from_be_bytes(l) as usize
        }
        127 => {
            let mut l = [0u8; 8];
            s.read_exact(&mut l).unwrap();
            u64::from_be_bytes(l) as usize
        }
        n => n as usize,
    };
    let mut key = [0u8; 4];
    s.read_exact(&mut key).unwrap();
    let mut p = vec![0u8; len];
    s.read_exact(&mut p).unwrap();
    for (i, b) in p.iter_mut().enumerate() {
        *b ^= key[i & 3];
    }
    (h[0], p)
}

fn deflater() -> Deflate {
    Deflate::new(Params {
        server_no_context_takeover: true,
        client_no_context_takeover: true,
        server_max_window_bits: 15,
    })
}

fn compressed(data: &[u8]) -> Vec<u8> {
    let mut c = Vec::new();
    deflater().compress(data, &mut c);
    c
}

/// Connect to `url` (offering deflate or not) and collect events until the socket closes.
fn events(url: String, compression: bool, send: Vec<WsCmd>) -> Vec<WsEvent> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let req = WsRequest {
            url,
            compression,
            ..WsRequest::default()
        };
        let (mut conn, tx, _) = connect(&req, &ClientSettings::default()).await.unwrap();
        for c in send {
            tx.send(c);
        }
        let until = Instant::now() + Duration::from_secs(20);
        let mut out = Vec::new();
        loop {
            let ev = conn.next(Some(until)).await;
            let end = matches!(ev, WsEvent::Closed { .. } | WsEvent::Timeout);
            out.push(ev);
            if end {
                conn.finish().await;
                return out;
            }
        }
    })
}

fn closed(code: u16, error: Option<&str>) -> WsEvent {
    WsEvent::Closed {
        code,
        reason: String::new(),
        error: error.map(String::from),
    }
}

/// RSV1 on a connection that did not negotiate an extension is a protocol error, whether
/// the client offered deflate (and the server declined: tungstenite reads, handed the bytes
/// that came with the 101) or not; the frame before it arrives.
#[test]
fn rsv1_without_negotiation_is_a_protocol_error() {
    for offer in [true, false] {
        let mut first = frame(0x81, b"plain");
        first.extend(frame(0xC1, &compressed(b"zipped")));
        let (url, h) = server(None, first, |_| {});
        let got = events(url, offer, vec![]);
        let err = "websocket: WebSocket protocol error: Reserved bits are non-zero";
        assert_eq!(
            got,
            vec![WsEvent::Text("plain".into()), closed(1006, Some(err))],
            "offer {offer}"
        );
        let req = h.join().unwrap();
        let want = "sec-websocket-extensions: permessage-deflate; server_no_context_takeover; \
                    client_no_context_takeover\r\n";
        assert_eq!(req.to_ascii_lowercase().contains(want), offer, "{req}");
    }
}

/// A compressed message in three fragments with a ping between them (and a plain message
/// before it, in the 101's read) inflates to one message; a compressed send (queued before
/// the reads) and the pong come back masked, the send with RSV1 set and inflating to what was
/// sent; the server's close is answered with its code and ends the session cleanly.
#[test]
fn fragments_with_a_ping_between_them_inflate_to_one_message() {
    let big: String = (0..20_000).map(|i| format!("{i},")).collect();
    let c = compressed(big.as_bytes());
    let (a, rest) = c.split_at(c.len() / 3);
    let (b, d) = rest.split_at(rest.len() / 2);
    let mut first = frame(0x82, b"\x01\x02");
    first.extend(frame(0x41, a)); // text, RSV1, not final
    first.extend(frame(0x89, b"hi")); // ping
    first.extend(frame(0x00, b));
    first.extend(frame(0x80, d));
    let ext = "permessage-deflate; server_no_context_takeover; client_no_context_takeover; server_max_window_bits=12";
    let (url, h) = server(Some(ext), first, |s| {
        let (b0, p) = read_frame(s);
        assert_eq!(b0, 0xC1, "final, RSV1, text");
        let mut d = deflater();
        assert_eq!(d.decompress(&p, 1 << 20).unwrap(), b"sent".repeat(1000));
        assert_eq!(read_frame(s), (0x8A, b"hi".to_vec()), "the pong");
        let mut close = 4000u16.to_be_bytes().to_vec();
        close.extend_from_slice(b"bye");
        s.write_all(&frame(0x88, &close)).unwrap();
        assert_eq!(read_frame(s), (0x88, close), "the close echoed");
    });
    let got = events(url, true, vec![WsCmd::Text("sent".repeat(1000))]);
    h.join().unwrap();
    assert_eq!(
        got,
        vec![
            WsEvent::Binary(vec![1, 2]),
            WsEvent::Ping,
            WsEvent::Text(big),
            WsEvent::Closed {
                code: 4000,
                reason: "bye".into(),
                error: None
            },
        ]
    );
}

/// Data that does not inflate: k6's error (Go's flate text) and a close 1007 to the server.
#[test]
fn corrupt_data_is_flates_error_and_a_close_1007() {
    let first = frame(0xC2, &[0xff, 0xff, 0xff, 0x00, 0x12]);
    let (url, h) = server(
        Some("permessage-deflate; server_no_context_takeover"),
        first,
        |s| {
            let (b0, p) = read_frame(s);
            assert_eq!((b0, &p[..]), (0x88, &1007u16.to_be_bytes()[..]));
        },
    );
    let got = events(url, true, vec![]);
    h.join().unwrap();
    match &got[..] {
        [WsEvent::Closed {
            code: 1006,
            error: Some(e),
            ..
        }] => assert!(e.starts_with("flate: corrupt input before offset "), "{e}"),
        other => panic!("{other:?}"),
    }
}

/// A small message that inflates past the 64 MiB limit stops there: the size error and a
/// close 1009 to the server.
#[test]
fn a_bomb_stops_at_the_message_limit() {
    let bomb = compressed(&vec![0u8; MAX_MESSAGE + (1 << 20)]);
    assert!(bomb.len() < MAX_MESSAGE / 100, "{}", bomb.len());
    let (url, h) = server(Some("permessage-deflate"), frame(0xC2, &bomb), |s| {
        let (b0, p) = read_frame(s);
        assert_eq!((b0, &p[..]), (0x88, &1009u16.to_be_bytes()[..]));
    });
    let got = events(url, true, vec![]);
    h.join().unwrap();
    let err = format!(
        "websocket: Space limit exceeded: Message too long: {} > {MAX_MESSAGE}",
        MAX_MESSAGE + 1
    );
    assert_eq!(got, vec![closed(1006, Some(&err))]);
}

/// An answer the client cannot accept (a parameter it did not offer) fails the connect.
#[test]
fn an_answer_not_offered_fails_the_connect() {
    let (url, h) = server(
        Some("permessage-deflate; client_max_window_bits=10"),
        vec![],
        |_| {},
    );
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let req = WsRequest {
        url,
        compression: true,
        ..WsRequest::default()
    };
    let e = match rt.block_on(connect(&req, &ClientSettings::default())) {
        Err(e) => e,
        Ok(_) => panic!("connected"),
    };
    assert!(
        e.message.contains("sec-websocket-extensions"),
        "{}",
        e.message
    );
    h.join().unwrap();
}
