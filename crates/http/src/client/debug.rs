//! `httpDebug`'s text: a request's head as written (CRLFs shown as line breaks) and a
//! response's status line and headers, with the bodies when `full`, as k6 prints them. The
//! bindings log these through the run's logger.

use crate::h1::Request;
use crate::message::Response;

/// The request's head as written, and its body with `full`.
pub fn request_text(req: &Request, body: Option<&[u8]>, full: bool) -> String {
    let head = &req.wire()[..req.head_len()];
    let mut text = String::from_utf8_lossy(head).replace("\r\n", "\n");
    if let (true, Some(b)) = (full, body) {
        text.push_str(&String::from_utf8_lossy(b));
    }
    text
}

/// The response's status line and headers, and its body with `full` (when it was kept).
pub fn response_text(r: &Response, full: bool) -> String {
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
    text
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Body, Target};

    #[test]
    fn heads_are_shown_with_line_breaks_and_bodies_only_when_full() {
        let t = Target::parse("http://h:1/p").unwrap();
        let hdrs = [("X-A".to_string(), "1".to_string())];
        let req = Request::new("POST", &t, &hdrs, Body::Bytes("hi".into()), true).unwrap();
        let text = request_text(&req, Some(b"hi"), false);
        assert!(
            text.starts_with("POST /p HTTP/1.1\nHost: h:1\nX-A: 1\n"),
            "{text}"
        );
        assert!(!text.ends_with("hi"));
        assert!(request_text(&req, Some(b"hi"), true).ends_with("\n\nhi"));

        let mut r = Response {
            status: 599,
            version_minor: 1,
            body: Some(b"body".to_vec()),
            ..Default::default()
        };
        r.headers.push("Content-Length", b"4");
        assert_eq!(
            response_text(&r, false),
            "HTTP/1.1 599\nContent-Length: 4\n\n"
        );
        r.status = 404;
        assert!(response_text(&r, true).starts_with("HTTP/1.1 404 Not Found\n"));
        assert!(response_text(&r, true).ends_with("\n\nbody"));
    }
}
