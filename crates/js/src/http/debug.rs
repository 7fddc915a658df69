//! `options.httpDebug` / `--http-debug[=full]`: every request and response of the VUs logged
//! as k6 does (`Request:` / `Response:` with the head as sent and received; the bodies too
//! with `full`), tagged `source=http-debug`. The text is volley-http's
//! (`volley_http::client::debug`); this logs it with the VU's group, iteration and id.

use crate::vu::VuState;
use volley_http::client::debug;

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

/// The request as written (its body too with `full`).
pub(crate) fn request(st: &VuState, req: &volley_http::Request, body: Option<&[u8]>, full: bool) {
    log(st, "Request", &debug::request_text(req, body, full));
}

/// The response's status line and headers (its body too with `full`, when it was kept).
pub(crate) fn response(st: &VuState, r: &volley_http::Response, full: bool) {
    log(st, "Response", &debug::response_text(r, full));
}
