//! `options.httpDebug` / `--http-debug[=full]`: every request and response of the VUs logged
//! as k6 does (`Request:` / `Response:` with the head as sent and received; the bodies too
//! with `full`), tagged `source=http-debug`.

use crate::vu::VuState;

/// `httpDebug`'s value: "" (off), "full" (with bodies) or anything else (heads only).
pub(crate) fn mode(v: &str) -> Option<bool> {
    match v {
        "" => None,
        "full" => Some(true),
        _ => Some(false),
    }
}

fn log(st: &VuState, what: &str, text: &str) {
    let group = st.group.borrow();
    let (iter, vu) = (st.iteration.get().to_string(), st.id.to_string());
    // Through the run's logger (k6 logs these at info with the message spanning lines).
    volley_engine::log::log(
        volley_engine::log::Level::Info,
        &format!("{what}:\n{text}"),
        &[
            ("group", group.as_str()),
            ("iter", &iter),
            ("source", "http-debug"),
            ("vu", &vu),
        ],
    );
}

/// The request's head as written (CRLFs shown as line breaks), and its body with `full`.
pub(crate) fn request(st: &VuState, req: &volley_http::Request, body: Option<&[u8]>, full: bool) {
    let head = &req.wire()[..req.head_len()];
    let mut text = String::from_utf8_lossy(head).replace("\r\n", "\n");
    if let (true, Some(b)) = (full, body) {
        text.push_str(&String::from_utf8_lossy(b));
    }
    log(st, "Request", &text);
}

/// The response's status line and headers, and its body with `full` (when it was kept).
pub(crate) fn response(st: &VuState, r: &volley_http::Response, full: bool) {
    let mut text = format!(
        "HTTP/1.{} {} {}\n",
        r.version_minor,
        r.status,
        reason(r.status)
    )
    .replace(" \n", "\n");
    for (name, value) in r.headers.iter() {
        text.push_str(&format!("{name}: {}\n", String::from_utf8_lossy(value)));
    }
    text.push('\n');
    if let (true, Some(b)) = (full, &r.body) {
        text.push_str(&String::from_utf8_lossy(b));
    }
    log(st, "Response", &text);
}

/// The common reason phrases (others print the bare status, which is still valid HTTP).
fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        204 => "No Content",
        301 => "Moved Permanently",
        302 => "Found",
        303 => "See Other",
        304 => "Not Modified",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        409 => "Conflict",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "",
    }
}
