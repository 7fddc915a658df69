//! The Prometheus text exposition format (version 0.0.4): a small parser and a scraper.
//!
//! The parser handles what exporters write: `# HELP` / `# TYPE` and other comments, metric
//! names with colons, label sets (with escaped `\\`, `\"` and `\n` in values and a trailing
//! comma), values including `+Inf`, `-Inf` and `NaN`, and optional timestamps. The scraper is a
//! blocking HTTP/1.1 GET over `std::net` with timeouts: once a second does not need more.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

/// One sample line.
#[derive(Clone, Debug, PartialEq)]
pub struct PromSample {
    pub name: String,
    pub labels: Vec<(String, String)>,
    pub value: f64,
    pub timestamp_ms: Option<i64>,
}

/// Family types from `# TYPE` lines, by family name.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Exposition {
    pub samples: Vec<PromSample>,
    pub types: Vec<(String, String)>,
}

fn is_name_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_' || c == ':'
}

fn is_name_char(c: char) -> bool {
    is_name_start(c) || c.is_ascii_digit()
}

pub fn parse_value(s: &str) -> Option<f64> {
    match s {
        "+Inf" | "Inf" | "+inf" | "inf" => Some(f64::INFINITY),
        "-Inf" | "-inf" => Some(f64::NEG_INFINITY),
        "NaN" | "nan" => Some(f64::NAN),
        _ if s
            .bytes()
            .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'-' | b'+' | b'e' | b'E')) =>
        {
            s.parse().ok()
        }
        _ => None,
    }
}

/// Parse a whole exposition; an error names the line and what was expected.
pub fn parse(text: &str) -> Result<Exposition, String> {
    let mut out = Exposition::default();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        if let Some(c) = line.strip_prefix('#') {
            let mut it = c.split_whitespace();
            if it.next() == Some("TYPE") {
                if let (Some(n), Some(t)) = (it.next(), it.next()) {
                    out.types.push((n.to_string(), t.to_string()));
                }
            }
            continue;
        }
        let s = parse_line(line).map_err(|e| format!("line {}: {e}: {}", i + 1, clip(line)))?;
        out.samples.push(s);
    }
    Ok(out)
}

fn parse_line(line: &str) -> Result<PromSample, String> {
    let mut chars = line.char_indices().peekable();
    let name_end = match chars.peek() {
        Some((_, c)) if is_name_start(*c) => {
            line.find(|c: char| !is_name_char(c)).unwrap_or(line.len())
        }
        _ => return Err("expected a metric name".into()),
    };
    let name = line[..name_end].to_string();
    let mut rest = &line[name_end..];
    let mut labels = Vec::new();
    if let Some(r) = rest.strip_prefix('{') {
        rest = r;
        loop {
            rest = rest.trim_start();
            if let Some(r) = rest.strip_prefix('}') {
                rest = r;
                break;
            }
            let lend = rest
                .find(|c: char| !is_name_char(c))
                .ok_or("unterminated label set")?;
            if lend == 0 {
                return Err("expected a label name".into());
            }
            let lname = rest[..lend].to_string();
            rest = rest[lend..].trim_start();
            rest = rest
                .strip_prefix('=')
                .ok_or("expected '=' after a label name")?
                .trim_start();
            rest = rest
                .strip_prefix('"')
                .ok_or("expected '\"' to open a label value")?;
            let mut value = String::new();
            let mut it = rest.char_indices();
            let close = loop {
                match it.next() {
                    Some((_, '\\')) => match it.next() {
                        Some((_, 'n')) => value.push('\n'),
                        Some((_, c)) => value.push(c),
                        None => return Err("unterminated label value".into()),
                    },
                    Some((j, '"')) => break j,
                    Some((_, c)) => value.push(c),
                    None => return Err("unterminated label value".into()),
                }
            };
            labels.push((lname, value));
            rest = rest[close + 1..].trim_start();
            if let Some(r) = rest.strip_prefix(',') {
                rest = r;
            } else if !rest.starts_with('}') {
                return Err("expected ',' or '}' after a label value".into());
            }
        }
    }
    let mut fields = rest.split_whitespace();
    let v = fields.next().ok_or("expected a value")?;
    let value = parse_value(v).ok_or_else(|| format!("'{}' is not a number", clip(v)))?;
    let timestamp_ms = match fields.next() {
        Some(t) => Some(
            t.parse::<i64>()
                .map_err(|_| format!("'{}' is not a timestamp", clip(t)))?,
        ),
        None => None,
    };
    if fields.next().is_some() {
        return Err("unexpected text after the timestamp".into());
    }
    Ok(PromSample {
        name,
        labels,
        value,
        timestamp_ms,
    })
}

/// Whether `sample` belongs to one of the `keep` families (a histogram or summary family
/// `x` also owns `x_bucket`, `x_sum` and `x_count`). An empty list keeps everything.
pub fn kept(keep: &[String], sample: &str) -> bool {
    keep.is_empty()
        || keep.iter().any(|k| {
            sample == k
                || sample
                    .strip_prefix(k.as_str())
                    .is_some_and(|s| matches!(s, "_bucket" | "_sum" | "_count"))
        })
}

/// Largest body accepted from an endpoint.
const MAX_BODY: u64 = 32 << 20;

/// GET an `http://` URL and return its body (status 200 only).
pub fn fetch(url: &str, timeout: Duration) -> Result<String, String> {
    let rest = url
        .strip_prefix("http://")
        .ok_or_else(|| format!("{url}: only http:// is supported"))?;
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let hostport = if authority
        .rsplit_once(':')
        .is_some_and(|(_, p)| !p.contains(']'))
    {
        authority.to_string()
    } else {
        format!("{authority}:80")
    };
    let addrs: Vec<_> = hostport
        .to_socket_addrs()
        .map_err(|e| format!("{url}: cannot resolve: {e}"))?
        .collect();
    let mut last = format!("{url}: no address");
    let mut stream = None;
    for a in addrs {
        match TcpStream::connect_timeout(&a, timeout) {
            Ok(s) => {
                stream = Some(s);
                break;
            }
            Err(e) => last = format!("{url}: {e}"),
        }
    }
    let mut s = stream.ok_or(last)?;
    let io = |e: std::io::Error| format!("{url}: {e}");
    s.set_read_timeout(Some(timeout)).map_err(io)?;
    s.set_write_timeout(Some(timeout)).map_err(io)?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {authority}\r\nAccept: text/plain;version=0.0.4\r\nUser-Agent: volley-monitor\r\nConnection: close\r\n\r\n"
    )
    .map_err(io)?;
    let mut raw = Vec::new();
    s.take(MAX_BODY).read_to_end(&mut raw).map_err(io)?;
    let head_end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| format!("{url}: malformed HTTP response"))?;
    let head = String::from_utf8_lossy(&raw[..head_end]).to_string();
    let mut body = raw[head_end + 4..].to_vec();
    let status = head
        .lines()
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .unwrap_or("");
    if status != "200" {
        return Err(format!("{url}: HTTP status {status}"));
    }
    let header = |name: &str| {
        head.lines().skip(1).find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.trim()
                .eq_ignore_ascii_case(name)
                .then(|| v.trim().to_ascii_lowercase())
        })
    };
    if header("transfer-encoding").is_some_and(|v| v.contains("chunked")) {
        body = dechunk(&body).ok_or_else(|| format!("{url}: malformed chunked body"))?;
    } else if let Some(n) = header("content-length").and_then(|v| v.parse::<usize>().ok()) {
        body.truncate(n);
    }
    String::from_utf8(body).map_err(|_| format!("{url}: body is not UTF-8 text"))
}

fn dechunk(mut b: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    loop {
        let eol = b.windows(2).position(|w| w == b"\r\n")?;
        let size_text = std::str::from_utf8(&b[..eol]).ok()?;
        let size = usize::from_str_radix(size_text.split(';').next()?.trim(), 16).ok()?;
        b = &b[eol + 2..];
        if size == 0 {
            return Some(out);
        }
        out.extend_from_slice(b.get(..size)?);
        b = b.get(size + 2..)?;
    }
}

/// At most the first 120 characters of `s` for an error message (a scraped body can be one
/// line of megabytes), with its full length when cut.
fn clip(s: &str) -> String {
    const KEEP: usize = 120;
    match s.char_indices().nth(KEEP) {
        None => s.to_string(),
        Some((at, _)) => format!("{}… ({} bytes)", &s[..at], s.len()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_comments_labels_and_special_values() {
        let text = r#"
# HELP http_requests_total The total number of HTTP requests.
# TYPE http_requests_total counter
http_requests_total{method="post",code="200"} 1027 1395066363000
http_requests_total{method="post",code="400"}    3 1395066363000
# A plain comment
msdos_file_access_time_seconds{path="C:\\DIR\\FILE.TXT",error="Cannot find file:\n\"FILE.TXT\""} 1.458255915e9
metric_without_timestamp_and_labels 12.47
something_weird{problem="division by zero"} +Inf -3982045
rpc_duration_seconds{quantile="0.5",} 4773
rpc:ratio{ a = "x" } NaN
# TYPE h histogram
h_bucket{le="+Inf"} 144320
neg -1.5e-3
"#;
        let e = parse(text).unwrap();
        assert_eq!(e.samples.len(), 9);
        assert_eq!(
            e.types,
            vec![
                ("http_requests_total".into(), "counter".into()),
                ("h".into(), "histogram".into())
            ]
        );
        let s = &e.samples[0];
        assert_eq!(s.name, "http_requests_total");
        assert_eq!(
            s.labels,
            vec![
                ("method".into(), "post".into()),
                ("code".into(), "200".into())
            ]
        );
        assert_eq!((s.value, s.timestamp_ms), (1027.0, Some(1395066363000)));
        assert_eq!(e.samples[1].value, 3.0);
        let ms = &e.samples[2];
        assert_eq!(ms.labels[0].1, "C:\\DIR\\FILE.TXT");
        assert_eq!(ms.labels[1].1, "Cannot find file:\n\"FILE.TXT\"");
        assert_eq!(ms.value, 1.458255915e9);
        assert_eq!(e.samples[3].labels.len(), 0);
        assert_eq!(e.samples[4].value, f64::INFINITY);
        assert_eq!(e.samples[4].timestamp_ms, Some(-3982045));
        assert_eq!(e.samples[5].labels, vec![("quantile".into(), "0.5".into())]);
        assert_eq!(e.samples[6].name, "rpc:ratio");
        assert!(e.samples[6].value.is_nan());
        assert_eq!(e.samples[7].labels[0].1, "+Inf");
        assert_eq!(e.samples[8].value, -0.0015);
    }

    #[test]
    fn a_huge_malformed_line_is_clipped_in_the_error() {
        let body = format!("ok 1\n{}\n", "x".repeat(33 << 20));
        let e = parse(&body).unwrap_err();
        assert!(e.len() < 400, "{} bytes of error", e.len());
        assert!(
            e.starts_with("line 2: ") && e.contains(&format!("({} bytes)", 33 << 20)),
            "{e}"
        );
        let e = parse(&format!("x {}\n", "é".repeat(1000))).unwrap_err();
        assert!(e.len() < 700 && e.contains("not a number"), "{e}");
    }

    #[test]
    fn malformed_lines_name_the_line() {
        for (bad, what) in [
            ("x{a=\"1\" 2", "expected ','"),
            ("x{a=1} 2", "to open a label value"),
            ("x{a=\"1} 2", "unterminated"),
            ("x", "expected a value"),
            ("x abc", "not a number"),
            ("1x 2", "metric name"),
            ("x 1 2 3", "unexpected text"),
        ] {
            let e = parse(&format!("ok 1\n{bad}\n")).unwrap_err();
            assert!(e.starts_with("line 2: ") && e.contains(what), "{bad}: {e}");
        }
    }

    #[test]
    fn families_keep_their_histogram_series() {
        let keep = vec!["h".to_string(), "up".to_string()];
        assert!(kept(&keep, "h_bucket") && kept(&keep, "h_count") && kept(&keep, "up"));
        assert!(!kept(&keep, "h_other") && !kept(&keep, "upx"));
        assert!(kept(&[], "anything"));
    }

    #[test]
    fn chunked_bodies_are_decoded() {
        assert_eq!(
            dechunk(b"3\r\nabc\r\n2;x=y\r\nde\r\n0\r\n\r\n").unwrap(),
            b"abcde"
        );
        assert!(dechunk(b"5\r\nab").is_none());
    }

    #[test]
    fn scrapes_the_built_in_targets_metrics() {
        let t = volley_testserver::spawn(volley_testserver::TargetConfig {
            listen: "127.0.0.1:0".parse().unwrap(),
            threads: 1,
            tls: None,
            delay_all: None,
        })
        .unwrap();
        let body = fetch(&format!("{}/metrics", t.url()), Duration::from_secs(5)).unwrap();
        let e = parse(&body).unwrap();
        let reqs = e
            .samples
            .iter()
            .find(|s| s.name == "volley_target_requests_total")
            .expect("requests counter exposed");
        assert!(reqs.value >= 0.0);
        assert!(e
            .types
            .contains(&("volley_target_requests_total".into(), "counter".into())));
        let err = fetch(&format!("{}/status/404", t.url()), Duration::from_secs(5)).unwrap_err();
        assert!(err.contains("404"), "{err}");
    }
}
