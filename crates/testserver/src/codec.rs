//! Small text codecs the endpoints need: base64 (Basic auth, binary echo bodies),
//! percent-decoding of paths and query strings, and `Cookie` header parsing.
//!
//! They are written here rather than pulled in as dependencies because each is a few lines
//! and the target should stay a small, fast-building crate.

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Standard base64 with `=` padding.
pub(crate) fn base64_encode(input: &[u8]) -> String {
    let mut out = String::with_capacity(input.len().div_ceil(3) * 4);
    for chunk in input.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(B64[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Decodes standard base64; padding is optional, whitespace and other alphabets are rejected.
pub(crate) fn base64_decode(input: &str) -> Option<Vec<u8>> {
    let trimmed = input.trim_end_matches('=');
    if input.len() - trimmed.len() > 2 || trimmed.len() % 4 == 1 {
        return None;
    }
    let mut out = Vec::with_capacity(trimmed.len() * 3 / 4);
    let mut acc: u32 = 0;
    let mut bits = 0;
    for c in trimmed.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    Some(out)
}

fn hex(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

/// Percent-decodes `s`; with `plus_as_space` (query strings) `+` means a space.
/// Malformed escapes are kept literally, invalid UTF-8 is replaced, as browsers do.
pub(crate) fn percent_decode(s: &str, plus_as_space: bool) -> String {
    if !s.bytes().any(|b| b == b'%' || (plus_as_space && b == b'+')) {
        return s.to_owned();
    }
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => match (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                (Some(h), Some(l)) => {
                    out.push(h << 4 | l);
                    i += 3;
                    continue;
                }
                _ => out.push(b'%'),
            },
            b'+' if plus_as_space => out.push(b' '),
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// Splits a query string into decoded `(key, value)` pairs in order; `k` alone gives `(k, "")`.
pub(crate) fn parse_query(query: Option<&str>) -> Vec<(String, String)> {
    query
        .unwrap_or("")
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            (percent_decode(k, true), percent_decode(v, true))
        })
        .collect()
}

/// Parses `Cookie` header values (`a=1; b=2`, possibly several headers, as HTTP/2 sends them).
pub(crate) fn parse_cookies<'a>(values: impl Iterator<Item = &'a [u8]>) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for value in values {
        let Ok(value) = std::str::from_utf8(value) else {
            continue;
        };
        for part in value.split(';') {
            let part = part.trim();
            if part.is_empty() {
                continue;
            }
            let (k, v) = part.split_once('=').unwrap_or((part, ""));
            out.push((k.trim().to_owned(), v.trim().to_owned()));
        }
    }
    out
}

/// RFC 6265 cookie-name: an HTTP token.
pub(crate) fn valid_cookie_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_graphic() && !b"()<>@,;:\\\"/[]?={}".contains(&b))
}

/// RFC 6265 cookie-octet: visible ASCII except `"` `,` `;` `\`.
pub(crate) fn valid_cookie_value(value: &str) -> bool {
    value
        .bytes()
        .all(|b| b.is_ascii_graphic() && !b"\",;\\".contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_known_vectors() {
        let cases: [(&str, &str); 7] = [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("user:pass", "dXNlcjpwYXNz"),
        ];
        for (plain, enc) in cases {
            assert_eq!(base64_encode(plain.as_bytes()), enc);
            assert_eq!(base64_decode(enc).unwrap(), plain.as_bytes());
        }
        assert_eq!(base64_decode("Zm8").unwrap(), b"fo");
    }

    #[test]
    fn base64_round_trips_all_bytes() {
        let data: Vec<u8> = (0..=255u8).collect();
        for len in 0..data.len() {
            assert_eq!(
                base64_decode(&base64_encode(&data[..len])).unwrap(),
                &data[..len]
            );
        }
    }

    #[test]
    fn base64_rejects_garbage() {
        assert!(base64_decode("a").is_none());
        assert!(base64_decode("ab!d").is_none());
        assert!(base64_decode("Zg===").is_none());
    }

    #[test]
    fn percent_decoding() {
        assert_eq!(percent_decode("a%20b+c", true), "a b c");
        assert_eq!(percent_decode("a%20b+c", false), "a b+c");
        assert_eq!(percent_decode("100%", true), "100%");
        assert_eq!(percent_decode("%zz%4", true), "%zz%4");
        assert_eq!(percent_decode("%C3%A9", true), "é");
    }

    #[test]
    fn query_pairs() {
        let q = parse_query(Some("a=1&b=x%26y&flag&&c="));
        let want = [("a", "1"), ("b", "x&y"), ("flag", ""), ("c", "")];
        assert_eq!(q.len(), want.len());
        for ((k, v), (wk, wv)) in q.iter().zip(want) {
            assert_eq!((k.as_str(), v.as_str()), (wk, wv));
        }
        assert!(parse_query(None).is_empty());
    }

    #[test]
    fn cookie_header_parsing() {
        let headers: [&[u8]; 2] = [b"a=1; b=2", b"c=3;;d"];
        let c = parse_cookies(headers.into_iter());
        let names: Vec<_> = c.iter().map(|(k, v)| format!("{k}={v}")).collect();
        assert_eq!(names, ["a=1", "b=2", "c=3", "d="]);
        assert!(valid_cookie_name("session_id"));
        assert!(!valid_cookie_name("a b"));
        assert!(valid_cookie_value("abc123"));
        assert!(!valid_cookie_value("a;b"));
    }
}
