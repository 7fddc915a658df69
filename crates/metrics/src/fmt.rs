//! Every number Volley prints for a human: durations, bytes, counts, axis ticks, changes.
//!
//! One module for all of them so the quick summary, the HTML report, the comparison, the
//! monitor's Target block and the history table cannot drift apart. It lives in the metrics
//! crate because that is the lowest crate every one of those users already depends on (the
//! engine, the run layer, report, monitor and the CLI), and it needs nothing but `std` and
//! [`Unit`](crate::Unit).
//!
//! Two families that differ on purpose:
//! - the functions here: Volley's own views (quick summary, report, compare, monitor,
//!   history): milliseconds to 3-4 significant digits, bytes in binary units (KiB, MiB);
//! - [`k6`]: k6's `humanizeValue`/`humanizeBytes`/duration strings for the k6 summaries,
//!   byte-identical to k6 (SI units, truncation instead of rounding), which k6 users diff;
//!   Go's duration strings and the progress clock.

pub mod k6;

/// Milliseconds with a unit that keeps 3-4 significant digits: `12µs`, `12.35ms`, `1.50s`
/// (quick summary, report tables, history, the progress line).
pub fn ms(v: f64) -> String {
    if v >= 1000.0 {
        format!("{:.2}s", v / 1000.0)
    } else if v >= 1.0 {
        format!("{v:.2}ms")
    } else {
        format!("{:.0}µs", v * 1000.0)
    }
}

/// Milliseconds for an axis tick: as short as the value allows (`250µs`, `2.5ms`, `1.5s`).
pub fn ms_tick(v: f64) -> String {
    if v >= 1000.0 {
        format!("{}s", trim(v / 1000.0))
    } else if v >= 1.0 || v == 0.0 {
        format!("{}ms", trim(v))
    } else {
        format!("{}µs", trim(v * 1000.0))
    }
}

const BINARY: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];

/// `v` scaled down by 1024 while it is at least 1024 (up to TiB), with the unit's index.
fn binary(v: f64) -> (f64, usize) {
    let (mut v, mut i) = (v, 0);
    while v.abs() >= 1024.0 && i < BINARY.len() - 1 {
        v /= 1024.0;
        i += 1;
    }
    (v, i)
}

/// Bytes in binary units with two decimals past bytes: `512 B`, `2.00 KiB`, `-1.50 MiB`
/// (quick summary, report).
pub fn bytes(v: f64) -> String {
    bytes_prec(v, 2)
}

/// Bytes in binary units with `decimals` past bytes (the monitor's Target block uses 1).
pub fn bytes_prec(v: f64, decimals: usize) -> String {
    let (v, i) = binary(v);
    if i == 0 {
        format!("{v:.0} {}", BINARY[i])
    } else {
        format!("{v:.decimals$} {}", BINARY[i])
    }
}

/// Bytes for an axis tick: `2.5 MiB`, no trailing zeros.
pub fn bytes_tick(v: f64) -> String {
    let (v, i) = binary(v);
    format!("{} {}", trim(v), BINARY[i])
}

/// A plain number with precision that suits its size (counts, rates).
pub fn num(v: f64) -> String {
    let a = v.abs();
    if a >= 100.0 || v == v.trunc() && a < 1e15 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// A count with thousands separators (`1,234`), for sentences.
pub fn count(n: u64) -> String {
    let d = n.to_string();
    let mut out = String::with_capacity(d.len() + d.len() / 3);
    for (i, c) in d.chars().enumerate() {
        if i > 0 && (d.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A rate in requests per second with thousands separators: `8,400/s`, `12.5/s` (capacity
/// tables, comparisons).
pub fn rate(v: f64) -> String {
    if v.abs() < 100.0 {
        return format!("{}/s", num(v));
    }
    let sign = if v < 0.0 { "-" } else { "" };
    format!("{sign}{}/s", count(v.abs().round() as u64))
}

/// Axis tick label: compact (1.5k, 2M).
pub fn short(v: f64) -> String {
    let a = v.abs();
    if a >= 1e9 {
        format!("{}G", trim(v / 1e9))
    } else if a >= 1e6 {
        format!("{}M", trim(v / 1e6))
    } else if a >= 1e4 {
        format!("{}k", trim(v / 1e3))
    } else {
        trim(v)
    }
}

/// Two decimals without trailing zeros (`2.5`, `30`), never `-0`.
fn trim(v: f64) -> String {
    let s = format!("{v:.2}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" {
        "0".into()
    } else {
        s.to_string()
    }
}

/// A signed percentage change, e.g. `+12.3%` (a fraction in, 0.123 = 12.3 %).
pub fn pct_change(c: f64) -> String {
    let p = c * 100.0;
    if p.abs() >= 100.0 {
        format!("{p:+.0}%")
    } else {
        format!("{p:+.1}%")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The quick summary's, the report's and the history table's outputs before they shared
    /// this module (it replaced copies in engine/summary, report/fmt and the CLI).
    #[test]
    fn volley_units_keep_their_former_outputs() {
        assert_eq!(ms(0.0123), "12µs");
        assert_eq!(ms(0.0), "0µs");
        assert_eq!(ms(12.345), "12.35ms");
        assert_eq!(ms(999.994), "999.99ms");
        assert_eq!(ms(1500.0), "1.50s");
        assert_eq!(bytes(0.0), "0 B");
        assert_eq!(bytes(1023.0), "1023 B");
        assert_eq!(bytes(2048.0), "2.00 KiB");
        assert_eq!(bytes(5.5 * 1048576.0), "5.50 MiB");
        assert_eq!(bytes(3.0 * 1024f64.powi(5)), "3072.00 TiB");
        assert_eq!(bytes(-1536.0), "-1.50 KiB");
        assert_eq!(num(3.0), "3");
        assert_eq!(num(123.456), "123");
        assert_eq!(num(12.345), "12.3");
        assert_eq!(num(1.2345), "1.23");
        assert_eq!(pct_change(0.123), "+12.3%");
        assert_eq!(pct_change(-0.5), "-50.0%");
        assert_eq!(pct_change(2.0), "+200%");
    }

    /// The SVG charts' axis labels (report `svg`/`html`).
    #[test]
    fn ticks_are_short() {
        assert_eq!(ms_tick(30.0), "30ms");
        assert_eq!(ms_tick(0.25), "250µs");
        assert_eq!(ms_tick(2500.0), "2.5s");
        assert_eq!(ms_tick(0.0), "0ms");
        assert_eq!(bytes_tick(10.0 * 1048576.0), "10 MiB");
        assert_eq!(bytes_tick(1536.0), "1.5 KiB");
        assert_eq!(short(15000.0), "15k");
        assert_eq!(short(2_500_000.0), "2.5M");
        assert_eq!(short(3e9), "3G");
        assert_eq!(short(0.25), "0.25");
        assert_eq!(short(-0.001), "0");
    }

    /// The monitor's Target block: one decimal, signed (a memory slope can be negative).
    #[test]
    fn monitor_bytes_have_one_decimal_and_a_sign() {
        assert_eq!(bytes_prec(512.0, 1), "512 B");
        assert_eq!(bytes_prec(2.0 * 1048576.0, 1), "2.0 MiB");
        assert_eq!(bytes_prec(-1.26 * 1048576.0, 1), "-1.3 MiB");
        assert_eq!(bytes_prec(-300.0, 1), "-300 B");
    }
}
