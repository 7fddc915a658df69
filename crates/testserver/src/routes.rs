//! The endpoints. [`route`] answers everything it can synchronously; only endpoints that
//! read the request body or sleep become a [`Route`] that [`finish`] completes.

use std::time::Duration;

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::header::{self, HeaderMap, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use serde_json::{json, Map, Value};

use crate::body::RespBody;
use crate::codec;
use crate::meter::Counters;

pub(crate) type Resp = Response<RespBody>;

/// Largest `/bytes/N`.
const MAX_BYTES: u64 = 1 << 30;
/// Longest `/delay/MS`; larger values are clamped.
const MAX_DELAY_MS: u64 = 60_000;
/// Largest body `/echo` buffers.
const ECHO_LIMIT: usize = 16 << 20;

const HELLO: &[u8] = b"Hello, world!";

/// What is left to do for a request after the synchronous routing step.
pub(crate) enum Route {
    Ready(Resp),
    Echo(Request<Incoming>),
    Upload(Request<Incoming>),
    Delay(u64),
}

/// 500 from a target over its `--fail-above` rate.
pub(crate) fn overloaded() -> Resp {
    json(
        StatusCode::INTERNAL_SERVER_ERROR,
        &json!({ "error": "overloaded" }),
    )
}

/// Routes a (non-monitoring) request.
pub(crate) fn route(req: Request<Incoming>) -> Route {
    let path = req.uri().path();
    // Hot path first: no parsing, no JSON, a static body.
    if path == "/" {
        return Route::Ready(hello());
    }
    if crate::grpc::is_grpc(&req) {
        return Route::Ready(crate::grpc::serve(req));
    }
    let resp = match path {
        "/echo" => return Route::Echo(req),
        "/ws/echo" => return Route::Ready(crate::ws::upgrade(req, crate::ws::Endpoint::Echo)),
        "/ws/chat" => {
            let room = crate::ws_chat::room(req.uri().query());
            return Route::Ready(crate::ws::upgrade(req, crate::ws::Endpoint::Chat(room)));
        }
        "/get" => {
            if matches!(*req.method(), Method::GET | Method::HEAD) {
                return Route::Echo(req);
            }
            method_not_allowed("GET, HEAD")
        }
        "/upload" => {
            if matches!(*req.method(), Method::POST | Method::PUT) {
                return Route::Upload(req);
            }
            method_not_allowed("POST, PUT")
        }
        "/headers" => json(
            StatusCode::OK,
            &json!({ "headers": headers_json(req.headers()) }),
        ),
        "/cookies" => cookies(&req),
        "/cookies/set" => cookies_set(&req),
        "/cookies/delete" => cookies_delete(&req),
        "/bearer" => bearer(&req),
        "/redirect-to" => redirect_to(&req),
        _ => {
            if path.starts_with("/echo/") {
                return Route::Echo(req);
            }
            if let Some(ms) = path.strip_prefix("/delay/") {
                return match ms.parse::<u64>() {
                    Ok(ms) => Route::Delay(ms.min(MAX_DELAY_MS)),
                    Err(_) => Route::Ready(error(
                        StatusCode::BAD_REQUEST,
                        "delay must be an integer number of milliseconds",
                    )),
                };
            }
            if let Some(n) = path.strip_prefix("/bytes/") {
                bytes(n)
            } else if let Some(code) = path.strip_prefix("/status/") {
                status(code)
            } else if let Some(n) = path.strip_prefix("/redirect/") {
                redirect(n)
            } else if let Some(creds) = path.strip_prefix("/basic-auth/") {
                basic_auth(&req, creds)
            } else {
                not_found(path)
            }
        }
    };
    Route::Ready(resp)
}

/// Completes the asynchronous routes.
pub(crate) async fn finish(route: Route) -> Resp {
    match route {
        Route::Ready(resp) => resp,
        Route::Echo(req) => echo(req).await,
        Route::Upload(req) => upload(req).await,
        Route::Delay(ms) => {
            tokio::time::sleep(Duration::from_millis(ms)).await;
            json(StatusCode::OK, &json!({ "delay_ms": ms }))
        }
    }
}

/// `/stats` (JSON) and `/metrics` (Prometheus text).
pub(crate) fn monitoring(stats: bool, counters: &Counters) -> Resp {
    let s = counters.snapshot();
    if stats {
        return json(
            StatusCode::OK,
            &json!({
                "requests": s.requests,
                "bytes_received": s.bytes_received,
                "bytes_sent": s.bytes_sent,
                "connections": s.connections,
                "peers": counters.peers().iter().map(|ip| ip.to_string()).collect::<Vec<_>>(),
            }),
        );
    }
    let mut text = String::with_capacity(1024);
    for (name, help, value) in [
        (
            "requests",
            "Requests answered, excluding /stats and /metrics.",
            s.requests,
        ),
        (
            "bytes_received",
            "Bytes read from client sockets (TCP payload).",
            s.bytes_received,
        ),
        (
            "bytes_sent",
            "Bytes written to client sockets (TCP payload).",
            s.bytes_sent,
        ),
        (
            "connections",
            "Connections accepted, excluding monitoring connections.",
            s.connections,
        ),
    ] {
        text.push_str(&format!(
            "# HELP volley_target_{name}_total {help}\n# TYPE volley_target_{name}_total counter\nvolley_target_{name}_total {value}\n"
        ));
    }
    with_type(
        Response::new(text.into()),
        "text/plain; version=0.0.4; charset=utf-8",
    )
}

fn hello() -> Resp {
    with_type(
        Response::new(RespBody::Full(Some(Bytes::from_static(HELLO)))),
        "text/plain",
    )
}

fn with_type(mut resp: Resp, content_type: &'static str) -> Resp {
    resp.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    resp
}

fn json(status: StatusCode, value: &Value) -> Resp {
    let body = serde_json::to_vec(value).expect("a serde_json::Value always serialises");
    let mut resp = with_type(Response::new(body.into()), "application/json");
    *resp.status_mut() = status;
    resp
}

fn error(status: StatusCode, message: &str) -> Resp {
    json(status, &json!({ "error": message }))
}

fn not_found(path: &str) -> Resp {
    json(
        StatusCode::NOT_FOUND,
        &json!({ "error": "not found", "path": path }),
    )
}

fn method_not_allowed(allow: &'static str) -> Resp {
    let mut resp = error(StatusCode::METHOD_NOT_ALLOWED, "method not allowed");
    resp.headers_mut()
        .insert(header::ALLOW, HeaderValue::from_static(allow));
    resp
}

/// Header names are already lowercase in hyper; repeated headers are joined with `", "`.
fn headers_json(headers: &HeaderMap) -> Value {
    let mut map = Map::new();
    for (name, value) in headers {
        let value = String::from_utf8_lossy(value.as_bytes());
        join_insert(&mut map, name.as_str(), &value);
    }
    Value::Object(map)
}

fn args_json(query: Option<&str>) -> Value {
    let mut map = Map::new();
    for (k, v) in codec::parse_query(query) {
        join_insert(&mut map, &k, &v);
    }
    Value::Object(map)
}

fn join_insert(map: &mut Map<String, Value>, key: &str, value: &str) {
    match map.get_mut(key) {
        Some(Value::String(existing)) => {
            existing.push_str(", ");
            existing.push_str(value);
        }
        _ => {
            map.insert(key.to_owned(), Value::String(value.to_owned()));
        }
    }
}

async fn echo(req: Request<Incoming>) -> Resp {
    let (parts, body) = req.into_parts();
    let too_large = parts
        .headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.parse::<u64>().ok())
        .is_some_and(|len| len > ECHO_LIMIT as u64);
    if too_large {
        return payload_too_large();
    }
    let mut body = body;
    let mut data = Vec::new();
    while let Some(frame) = body.frame().await {
        let Ok(frame) = frame else {
            return error(StatusCode::BAD_REQUEST, "error reading request body");
        };
        if let Some(chunk) = frame.data_ref() {
            if data.len() + chunk.len() > ECHO_LIMIT {
                return payload_too_large();
            }
            data.extend_from_slice(chunk);
        }
    }
    let (body, base64) = match String::from_utf8(data) {
        Ok(text) => (text, false),
        Err(e) => (codec::base64_encode(e.as_bytes()), true),
    };
    json(
        StatusCode::OK,
        &json!({
            "method": parts.method.as_str(),
            "path": parts.uri.path(),
            "version": format!("{:?}", parts.version),
            "args": args_json(parts.uri.query()),
            "headers": headers_json(&parts.headers),
            "body": body,
            "body_base64": base64,
        }),
    )
}

fn payload_too_large() -> Resp {
    let mut resp = error(StatusCode::PAYLOAD_TOO_LARGE, "body larger than 16 MiB");
    // The rest of the body is left unread, so this HTTP/1 connection cannot be reused.
    // (hyper drops connection-specific headers on HTTP/2.)
    resp.headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    resp
}

async fn upload(req: Request<Incoming>) -> Resp {
    let mut body = req.into_body();
    let mut total: u64 = 0;
    while let Some(frame) = body.frame().await {
        match frame {
            Ok(frame) => total += frame.data_ref().map_or(0, |d| d.len() as u64),
            Err(_) => return error(StatusCode::BAD_REQUEST, "error reading request body"),
        }
    }
    json(StatusCode::OK, &json!({ "bytes": total }))
}

fn bytes(n: &str) -> Resp {
    let Ok(n) = n.parse::<u64>() else {
        return error(StatusCode::BAD_REQUEST, "length must be an integer");
    };
    if n > MAX_BYTES {
        return error(
            StatusCode::BAD_REQUEST,
            "length must be at most 1073741824 (1 GiB)",
        );
    }
    let mut resp = with_type(
        Response::new(RespBody::pattern(n)),
        "application/octet-stream",
    );
    resp.headers_mut()
        .insert(header::CONTENT_LENGTH, HeaderValue::from(n));
    resp
}

fn status(code: &str) -> Resp {
    let code = match code.parse::<u16>() {
        Ok(c) if (200..=599).contains(&c) => c,
        _ => {
            return error(
                StatusCode::BAD_REQUEST,
                "status must be an integer in 200..=599",
            )
        }
    };
    let status = StatusCode::from_u16(code).expect("200..=599 is a valid status");
    if matches!(code, 204 | 205 | 304) {
        // These statuses must not carry content.
        let mut resp = Response::new(RespBody::empty());
        *resp.status_mut() = status;
        return resp;
    }
    json(status, &json!({ "status": code }))
}

fn redirect(n: &str) -> Resp {
    let Some(n) = n.parse::<u32>().ok().filter(|&n| n >= 1) else {
        return error(
            StatusCode::BAD_REQUEST,
            "redirect count must be a positive integer",
        );
    };
    let location = if n == 1 {
        HeaderValue::from_static("/get")
    } else {
        HeaderValue::try_from(format!("/redirect/{}", n - 1))
            .expect("an ASCII path is a valid header")
    };
    redirect_response(StatusCode::FOUND, location)
}

fn redirect_to(req: &Request<Incoming>) -> Resp {
    let mut url = None;
    let mut code = 302;
    for (k, v) in codec::parse_query(req.uri().query()) {
        match k.as_str() {
            "url" => url = Some(v),
            "status_code" => match v.parse::<u16>() {
                Ok(c) if (300..=308).contains(&c) => code = c,
                _ => return error(StatusCode::BAD_REQUEST, "status_code must be in 300..=308"),
            },
            _ => {}
        }
    }
    let Some(location) = url.and_then(|u| HeaderValue::from_str(&u).ok()) else {
        return error(
            StatusCode::BAD_REQUEST,
            "url query parameter missing or invalid",
        );
    };
    let status = StatusCode::from_u16(code).expect("3xx is a valid status");
    redirect_response(status, location)
}

fn redirect_response(status: StatusCode, location: HeaderValue) -> Resp {
    let mut resp = Response::new(RespBody::empty());
    *resp.status_mut() = status;
    resp.headers_mut().insert(header::LOCATION, location);
    resp
}

/// `value` without its auth scheme, if the scheme matches (case-insensitively).
fn credentials<'a>(req: &'a Request<Incoming>, scheme: &str) -> Option<&'a str> {
    let value = req.headers().get(header::AUTHORIZATION)?.to_str().ok()?;
    let (s, rest) = value.split_once(' ')?;
    let rest = rest.trim();
    (s.eq_ignore_ascii_case(scheme) && !rest.is_empty()).then_some(rest)
}

fn unauthorized(challenge: &'static str) -> Resp {
    let mut resp = json(StatusCode::UNAUTHORIZED, &json!({ "authenticated": false }));
    resp.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_static(challenge),
    );
    resp
}

fn basic_auth(req: &Request<Incoming>, creds: &str) -> Resp {
    let Some((user, pass)) = creds.split_once('/') else {
        return not_found(req.uri().path());
    };
    let user = codec::percent_decode(user, false);
    let pass = codec::percent_decode(pass, false);
    let expected = format!("{user}:{pass}");
    let ok = credentials(req, "Basic")
        .and_then(codec::base64_decode)
        .is_some_and(|got| got == expected.as_bytes());
    if ok {
        json(
            StatusCode::OK,
            &json!({ "authenticated": true, "user": user }),
        )
    } else {
        unauthorized("Basic realm=\"volley\"")
    }
}

fn bearer(req: &Request<Incoming>) -> Resp {
    match credentials(req, "Bearer") {
        Some(token) => json(
            StatusCode::OK,
            &json!({ "authenticated": true, "token": token }),
        ),
        None => unauthorized("Bearer"),
    }
}

fn request_cookies(req: &Request<Incoming>) -> Map<String, Value> {
    let values = req
        .headers()
        .get_all(header::COOKIE)
        .iter()
        .map(HeaderValue::as_bytes);
    codec::parse_cookies(values)
        .into_iter()
        .map(|(k, v)| (k, Value::String(v)))
        .collect()
}

fn cookies_json(status: StatusCode, cookies: Map<String, Value>) -> Resp {
    json(status, &json!({ "cookies": cookies }))
}

fn cookies(req: &Request<Incoming>) -> Resp {
    cookies_json(StatusCode::OK, request_cookies(req))
}

fn cookies_set(req: &Request<Incoming>) -> Resp {
    let pairs = codec::parse_query(req.uri().query());
    if let Some((k, _)) = pairs
        .iter()
        .find(|(k, v)| !codec::valid_cookie_name(k) || !codec::valid_cookie_value(v))
    {
        return error(StatusCode::BAD_REQUEST, &format!("invalid cookie {k:?}"));
    }
    let mut jar = request_cookies(req);
    let mut set_cookies = Vec::with_capacity(pairs.len());
    for (k, v) in pairs {
        let header = HeaderValue::from_str(&format!("{k}={v}; Path=/"))
            .expect("validated cookie names and values are header-safe");
        set_cookies.push(header);
        jar.insert(k, Value::String(v));
    }
    let mut resp = cookies_json(StatusCode::OK, jar);
    for h in set_cookies {
        resp.headers_mut().append(header::SET_COOKIE, h);
    }
    resp
}

fn cookies_delete(req: &Request<Incoming>) -> Resp {
    let names: Vec<String> = codec::parse_query(req.uri().query())
        .into_iter()
        .map(|(k, _)| k)
        .collect();
    if let Some(k) = names.iter().find(|k| !codec::valid_cookie_name(k)) {
        return error(
            StatusCode::BAD_REQUEST,
            &format!("invalid cookie name {k:?}"),
        );
    }
    let mut jar = request_cookies(req);
    let mut resp_headers = Vec::with_capacity(names.len());
    for k in names {
        let header = HeaderValue::from_str(&format!(
            "{k}=; Expires=Thu, 01 Jan 1970 00:00:00 GMT; Max-Age=0; Path=/"
        ))
        .expect("validated cookie names are header-safe");
        resp_headers.push(header);
        jar.remove(&k);
    }
    let mut resp = cookies_json(StatusCode::OK, jar);
    for h in resp_headers {
        resp.headers_mut().append(header::SET_COOKIE, h);
    }
    resp
}
