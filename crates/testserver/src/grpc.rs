//! The gRPC service `volley.target.Target` (`examples/grpc/target.proto`) and server
//! reflection (v1 and v1alpha), served on the HTTP port: a request whose `content-type`
//! starts with `application/grpc` lands here (HTTP/2 only, as gRPC needs trailers).
//!
//! Each call runs as a task that reads the request's messages as they arrive and sends
//! frames (messages, then trailers with the status) through a channel body, so streams in
//! both directions work. Methods (all take and return `Message`):
//!
//! | method | answer |
//! |---|---|
//! | `Echo` | the request; `x-*` request metadata echoed as headers; trailer `x-trailer: done` |
//! | `Count` | `count` messages (at most 100 000), `index` 0.., `text` copied |
//! | `Sum` (client stream) | `number` = sum of the messages' numbers, `count` = how many |
//! | `Chat` (bidi) | every message echoed as it arrives |
//! | `Fail` | status `code` (1..=16, else 2) with message `text` |
//! | `Slow` | waits `delay_ms` (at most 60 000 ms), then like `Echo` |
//!
//! The standard health service `grpc.health.v1.Health/Check` answers SERVING for `""` and
//! `volley.target.Target`, NOT_FOUND "unknown service" for any other name (as grpc-go's
//! health server). An unknown method or service gets UNIMPLEMENTED, as grpc-go words it.

use std::sync::OnceLock;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::{Frame, Incoming};
use hyper::header::{HeaderMap, HeaderValue};
use hyper::{Request, Response};
use prost::Message as _;
use tokio::sync::mpsc;
use volley_grpc::frame::{self, Decoder};
use volley_grpc::prost_reflect::DescriptorPool;
use volley_grpc::{health, reflect, status};

use crate::body::RespBody;
use crate::routes::Resp;

/// The service's definition, also shipped for scripts as `examples/grpc/target.proto`.
pub const PROTO: &str = include_str!("../../../examples/grpc/target.proto");
const SERVICE: &str = "volley.target.Target";
/// Largest request message read (as grpc-go's default).
const MAX_MESSAGE: usize = frame::DEFAULT_MAX_RECEIVE;
const MAX_COUNT: i32 = 100_000;
const MAX_DELAY_MS: i32 = 60_000;

/// The fields of `Message` the service reads (others are kept as bytes where echoed).
#[derive(Clone, PartialEq, prost::Message)]
struct Msg {
    #[prost(string, tag = "1")]
    text: String,
    #[prost(int64, tag = "2")]
    number: i64,
    #[prost(int32, tag = "8")]
    count: i32,
    #[prost(int32, tag = "9")]
    delay_ms: i32,
    #[prost(int32, tag = "10")]
    code: i32,
    #[prost(int32, tag = "11")]
    index: i32,
}

fn pool() -> &'static DescriptorPool {
    static POOL: OnceLock<DescriptorPool> = OnceLock::new();
    POOL.get_or_init(|| {
        volley_grpc::proto::load_source("volley/target.proto", PROTO)
            .expect("the built-in target.proto compiles (a unit test checks it)")
    })
}

pub(crate) fn is_grpc(req: &Request<Incoming>) -> bool {
    req.headers()
        .get("content-type")
        .is_some_and(|v| v.as_bytes().starts_with(b"application/grpc"))
}

#[derive(Clone, Copy)]
enum Method {
    Echo,
    Count,
    Sum,
    Chat,
    Fail,
    Slow,
    Reflect,
    Health,
}

fn method(path: &str) -> Result<Method, String> {
    if reflect::PATHS.contains(&path) {
        return Ok(Method::Reflect);
    }
    if path == health::CHECK {
        return Ok(Method::Health);
    }
    let p = path.strip_prefix('/').unwrap_or(path);
    let (svc, name) = p.rsplit_once('/').unwrap_or((p, ""));
    if svc != SERVICE {
        return Err(format!("unknown service {svc}"));
    }
    Ok(match name {
        "Echo" => Method::Echo,
        "Count" => Method::Count,
        "Sum" => Method::Sum,
        "Chat" => Method::Chat,
        "Fail" => Method::Fail,
        "Slow" => Method::Slow,
        _ => return Err(format!("unknown method {name} for service {svc}")),
    })
}

/// Answer a gRPC request: headers now, messages and trailers from a task.
pub(crate) fn serve(req: Request<Incoming>) -> Resp {
    let (parts, body) = req.into_parts();
    let (tx, rx) = mpsc::channel(32);
    let mut resp = Response::new(RespBody::Channel(rx));
    let h = resp.headers_mut();
    h.insert("content-type", HeaderValue::from_static("application/grpc"));
    for (k, v) in &parts.headers {
        if k.as_str().starts_with("x-") {
            h.append(k.clone(), v.clone());
        }
    }
    match method(parts.uri.path()) {
        Ok(m) => {
            tokio::spawn(call(m, body, tx));
        }
        Err(msg) => {
            let _ = tx.try_send(Frame::trailers(trailers(
                status::UNIMPLEMENTED,
                &msg,
                false,
            )));
        }
    }
    resp
}

fn trailers(code: u32, msg: &str, echo: bool) -> HeaderMap {
    let mut t = HeaderMap::new();
    t.insert("grpc-status", HeaderValue::from(code));
    if !msg.is_empty() {
        if let Ok(v) = HeaderValue::from_str(&status::encode_message(msg)) {
            t.insert("grpc-message", v);
        }
    }
    if echo {
        t.insert("x-trailer", HeaderValue::from_static("done"));
    }
    t
}

/// Reads request messages as they arrive.
struct Reader {
    body: Incoming,
    dec: Decoder,
    done: bool,
}

impl Reader {
    /// The next message; `Ok(None)` at the end of the request; `Err` = status to end with.
    async fn next(&mut self) -> Result<Option<Bytes>, (u32, String)> {
        loop {
            if let Some(m) = self.dec.next_message()? {
                return Ok(Some(m));
            }
            if self.done {
                return Ok(None);
            }
            match self.body.frame().await {
                None => self.done = true,
                Some(Err(e)) => return Err((status::CANCELLED, e.to_string())),
                Some(Ok(f)) => {
                    if let Ok(d) = f.into_data() {
                        self.dec.push(&d);
                    }
                }
            }
        }
    }

    async fn one(&mut self) -> Result<Bytes, (u32, String)> {
        self.next().await?.ok_or((
            status::INTERNAL,
            "grpc: the client sent no request message".to_owned(),
        ))
    }
}

async fn call(m: Method, body: Incoming, tx: mpsc::Sender<Frame<Bytes>>) {
    let mut r = Reader {
        body,
        dec: Decoder::new(MAX_MESSAGE),
        done: false,
    };
    let end = match run(m, &mut r, &tx).await {
        Ok(()) => trailers(status::OK, "", matches!(m, Method::Echo)),
        Err((code, msg)) => trailers(code, &msg, false),
    };
    let _ = tx.send(Frame::trailers(end)).await;
}

async fn send(tx: &mpsc::Sender<Frame<Bytes>>, msg: &[u8]) -> Result<(), (u32, String)> {
    tx.send(Frame::data(frame::encode(msg)))
        .await
        .map_err(|_| (status::CANCELLED, "the client went away".to_owned()))
}

fn decode<M: prost::Message + Default>(b: &[u8]) -> Result<M, (u32, String)> {
    M::decode(b).map_err(|e| {
        (
            status::INTERNAL,
            format!("grpc: error unmarshalling request: {e}"),
        )
    })
}

async fn run(
    m: Method,
    r: &mut Reader,
    tx: &mpsc::Sender<Frame<Bytes>>,
) -> Result<(), (u32, String)> {
    match m {
        Method::Echo => send(tx, &r.one().await?).await,
        Method::Slow => {
            let b = r.one().await?;
            let ms = decode::<Msg>(&b)?.delay_ms.clamp(0, MAX_DELAY_MS);
            tokio::time::sleep(Duration::from_millis(ms as u64)).await;
            send(tx, &b).await
        }
        Method::Fail => {
            let q: Msg = decode(&r.one().await?)?;
            let code = if (1..=16).contains(&q.code) {
                q.code as u32
            } else {
                status::UNKNOWN
            };
            Err((code, q.text))
        }
        Method::Count => {
            let q: Msg = decode(&r.one().await?)?;
            for i in 0..q.count.clamp(0, MAX_COUNT) {
                let out = Msg {
                    text: q.text.clone(),
                    index: i,
                    ..Msg::default()
                };
                send(tx, &out.encode_to_vec()).await?;
            }
            Ok(())
        }
        Method::Sum => {
            let (mut sum, mut n) = (0i64, 0i32);
            while let Some(b) = r.next().await? {
                sum = sum.wrapping_add(decode::<Msg>(&b)?.number);
                n = n.saturating_add(1);
            }
            let out = Msg {
                number: sum,
                count: n,
                ..Msg::default()
            };
            send(tx, &out.encode_to_vec()).await
        }
        Method::Chat => {
            while let Some(b) = r.next().await? {
                send(tx, &b).await?;
            }
            Ok(())
        }
        Method::Health => {
            let q: health::Request = decode(&r.one().await?)?;
            if !q.service.is_empty() && q.service != SERVICE {
                return Err((status::NOT_FOUND, "unknown service".to_owned()));
            }
            let out = health::Response {
                status: health::SERVING,
            };
            send(tx, &out.encode_to_vec()).await
        }
        Method::Reflect => {
            while let Some(b) = r.next().await? {
                send(tx, &reflect::answer(pool(), &b)).await?;
            }
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proto_compiles_and_matches_the_methods() {
        let p = pool();
        let svc = p.get_service_by_name(SERVICE).unwrap();
        for m in svc.methods() {
            assert!(
                method(&format!("/{SERVICE}/{}", m.name())).is_ok(),
                "{}",
                m.name()
            );
        }
        assert_eq!(
            method("/volley.target.Target/Nope").err().unwrap(),
            "unknown method Nope for service volley.target.Target"
        );
        assert_eq!(method("/x.Y/Z").err().unwrap(), "unknown service x.Y");
    }
}
