//! Status codes, `grpc-message` percent-encoding, `grpc-timeout` and metadata values.

use base64::Engine;

pub const OK: u32 = 0;
pub const CANCELLED: u32 = 1;
pub const UNKNOWN: u32 = 2;
pub const INVALID_ARGUMENT: u32 = 3;
pub const DEADLINE_EXCEEDED: u32 = 4;
pub const NOT_FOUND: u32 = 5;
pub const RESOURCE_EXHAUSTED: u32 = 8;
pub const UNIMPLEMENTED: u32 = 12;
pub const INTERNAL: u32 = 13;
pub const UNAVAILABLE: u32 = 14;

/// The canonical names, by code (k6 exports them as `grpc.Status<Name>`).
pub const NAMES: [&str; 17] = [
    "OK",
    "Canceled",
    "Unknown",
    "InvalidArgument",
    "DeadlineExceeded",
    "NotFound",
    "AlreadyExists",
    "PermissionDenied",
    "ResourceExhausted",
    "FailedPrecondition",
    "Aborted",
    "OutOfRange",
    "Unimplemented",
    "Internal",
    "Unavailable",
    "DataLoss",
    "Unauthenticated",
];

/// `grpc-message`: percent-encode what is not printable ASCII (and `%`).
pub fn encode_message(msg: &str) -> String {
    let mut out = String::with_capacity(msg.len());
    for b in msg.bytes() {
        if (0x20..0x7f).contains(&b) && b != b'%' {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The inverse of [`encode_message`]; malformed escapes are kept as they are.
pub fn decode_message(raw: &[u8]) -> String {
    let mut out = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        if raw[i] == b'%' && i + 2 < raw.len() {
            let hex = std::str::from_utf8(&raw[i + 1..i + 3]).ok();
            if let Some(v) = hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(raw[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `grpc-timeout` for a deadline (at most 8 digits: coarser units for long ones).
pub fn timeout_header(d: std::time::Duration) -> String {
    let ms = d.as_millis();
    if ms < 100_000_000 {
        return format!("{}m", ms.max(1));
    }
    format!("{}S", (d.as_secs()).min(99_999_999))
}

/// Parse `grpc-timeout` (`<digits><H|M|S|m|u|n>`).
pub fn parse_timeout(v: &str) -> Option<std::time::Duration> {
    use std::time::Duration;
    let (n, unit) = v.split_at(v.len().checked_sub(1)?);
    let n: u64 = n.parse().ok()?;
    Some(match unit {
        "H" => Duration::from_secs(n.saturating_mul(3600)),
        "M" => Duration::from_secs(n.saturating_mul(60)),
        "S" => Duration::from_secs(n),
        "m" => Duration::from_millis(n),
        "u" => Duration::from_micros(n),
        "n" => Duration::from_nanos(n),
        _ => return None,
    })
}

/// A metadata value as sent: `-bin` keys carry base64 (unpadded, as grpc-go sends).
pub fn wire_value(key: &str, value: &[u8]) -> Vec<u8> {
    if key.ends_with("-bin") {
        base64::engine::general_purpose::STANDARD_NO_PAD
            .encode(value)
            .into_bytes()
    } else {
        value.to_vec()
    }
}

/// A metadata value as received: `-bin` values decoded (padded or not).
pub fn value_of(key: &str, wire: &[u8]) -> Vec<u8> {
    if !key.ends_with("-bin") {
        return wire.to_vec();
    }
    let trimmed: Vec<u8> = wire.iter().copied().filter(|b| *b != b'=').collect();
    base64::engine::general_purpose::STANDARD_NO_PAD
        .decode(trimmed)
        .unwrap_or_else(|_| wire.to_vec())
}

/// Response metadata keys the application never sees (they are the protocol's).
pub fn is_reserved(key: &str) -> bool {
    matches!(
        key,
        "grpc-status"
            | "grpc-message"
            | "grpc-status-details-bin"
            | "grpc-encoding"
            | "grpc-accept-encoding"
            | "te"
            | "grpc-timeout"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_escaping_round_trips() {
        let m = "bad: 100% ünïcode\n";
        let enc = encode_message(m);
        assert!(enc.is_ascii() && !enc.contains('\n'), "{enc}");
        assert_eq!(decode_message(enc.as_bytes()), m);
        assert_eq!(decode_message(b"50%"), "50%");
    }

    #[test]
    fn timeouts() {
        use std::time::Duration;
        assert_eq!(timeout_header(Duration::from_millis(1500)), "1500m");
        assert_eq!(parse_timeout("1500m"), Some(Duration::from_millis(1500)));
        assert_eq!(parse_timeout("2S"), Some(Duration::from_secs(2)));
        assert_eq!(parse_timeout("x"), None);
    }

    #[test]
    fn binary_metadata() {
        let w = wire_value("id-bin", &[0, 1, 255]);
        assert_eq!(w, b"AAH/");
        assert_eq!(value_of("id-bin", b"AAH/"), vec![0, 1, 255]);
        assert_eq!(value_of("id-bin", b"AA=="), vec![0]);
        assert_eq!(wire_value("k", b"v"), b"v");
    }
}
