//! `Target::parse` (every URL on the command line and in scripts): never panics; an accepted
//! URL prints back (`Target::url`) to a URL that parses to the same target, and the request
//! line pieces are what a request needs (no spaces or control bytes, a path starting '/').
#![no_main]

use libfuzzer_sys::fuzz_target;
use volley_http::{Request, Target};

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(t) = Target::parse(s) else {
        return;
    };
    let printed = t.url();
    let again = Target::parse(&printed)
        .unwrap_or_else(|e| panic!("{s:?} → {printed:?} does not parse again: {e}"));
    assert_eq!(t, again, "{s:?} → {printed:?}");
    assert_eq!(again.url(), printed);
    assert!(t.path_and_query.starts_with('/'), "{t:?}");
    for piece in [&t.authority, &t.path_and_query, &t.host] {
        assert!(
            !piece
                .bytes()
                .any(|b| b <= b' ' || b == 0x7f || !b.is_ascii()),
            "{piece:?} from {s:?} would break the request line"
        );
    }
    assert!(t.port != 0);
    // The request serialises without error.
    Request::new("GET", &t, &[], volley_http::Body::Empty, true)
        .unwrap_or_else(|e| panic!("{s:?}: request not built: {e}"));
});
