//! k6's number formats (`humanizeValue`, `humanizeBytes`, durations) for the k6 end-of-test
//! summaries (legacy and v1 layouts, in volley-run). They must stay byte-identical to k6's
//! output (crates/cli/tests/summary_v1.rs and k6_parity.rs diff against k6), which is why they
//! differ from Volley's own [`super::ms`] and [`super::bytes`]: SI byte units, values truncated
//! rather than rounded, durations as `1m1s`. Also k6's other two duration forms: Go's
//! `time.Duration` string ([`go_duration`], in option descriptions and progress lines) and the
//! running line's clock ([`clock`]).

use crate::Unit;

/// k6's percentage: truncated (not rounded) to two decimals.
pub fn pct(p: u64, total: u64) -> String {
    let r = if total == 0 {
        0.0
    } else {
        p as f64 / total as f64
    };
    format!("{:.2}%", (r * 100.0 * 100.0).trunc() / 100.0)
}

/// A metric's value in its unit, as k6's summary shows it; `time_unit` is the summary's
/// `summaryTimeUnit` (`s`, `ms`, `us`, or empty for k6's automatic duration).
pub fn humanize(v: f64, unit: Unit, time_unit: &str) -> String {
    match unit {
        Unit::Data => bytes(v),
        Unit::Time => match time_unit {
            "s" => format!("{:.2}s", v / 1000.0),
            "ms" => format!("{v:.2}ms"),
            "us" => format!("{:.2}µs", v * 1000.0),
            _ => dur(v),
        },
        Unit::Default => num(v),
    }
}

/// `val.toFixed(prec)` after truncating, without trailing zeros (k6's helper).
pub fn trunc_fixed(v: f64, prec: i32) -> String {
    let m = 10f64.powi(prec);
    let t = (v * m + 1e-9 * v.signum()).trunc() / m;
    let s = format!("{t:.*}", prec as usize);
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// Milliseconds as k6 shows durations: ns, µs, ms, s, then m/h.
pub fn dur(ms: f64) -> String {
    if ms <= 0.0 {
        return "0s".into();
    }
    if ms < 0.001 {
        return format!("{}ns", (ms * 1e6).trunc());
    }
    if ms < 1.0 {
        return format!("{}µs", trunc_fixed(ms * 1000.0, 2));
    }
    if ms < 1000.0 {
        return format!("{}ms", trunc_fixed(ms, 2));
    }
    let mut out = format!(
        "{}s",
        trunc_fixed((ms % 60_000.0) / 1000.0, if ms > 60_000.0 { 0 } else { 2 })
    );
    let mut rem = (ms / 60_000.0).trunc() as u64;
    if rem < 1 {
        return out;
    }
    out = format!("{}m{out}", rem % 60);
    rem /= 60;
    if rem < 1 {
        return out;
    }
    format!("{rem}h{out}")
}

/// `toFixed(6)` without trailing zeros.
pub fn num(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        let s = format!("{v:.6}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// Bytes in k6's SI units (`humanizeBytes`).
pub fn bytes(v: f64) -> String {
    let units = ["B", "kB", "MB", "GB", "TB", "PB"];
    if v < 10.0 {
        return format!("{} B", num(v));
    }
    let e = ((v.ln() / 1000f64.ln()).floor() as usize).min(units.len() - 1);
    let val = ((v / 1000f64.powi(e as i32)) * 10.0 + 0.5).floor() / 10.0;
    if val < 10.0 {
        format!("{val:.1} {}", units[e])
    } else {
        format!("{val:.0} {}", units[e])
    }
}

/// A `time.Duration` as k6 (Go) prints it in option descriptions and progress lines: `30s`,
/// `1m30s`, `10m0s`, `1h0m0s`, `500ms`, `1.5s` (not the summary's truncated [`dur`]).
pub fn go_duration(d: std::time::Duration) -> String {
    let ms = d.as_millis();
    if ms < 1000 && ms > 0 {
        return format!("{ms}ms");
    }
    let secs = d.as_secs_f64();
    let (h, rest) = ((secs / 3600.0).floor(), secs % 3600.0);
    let (m, s) = ((rest / 60.0).floor(), rest % 60.0);
    let s = if s.fract() == 0.0 {
        format!("{s:.0}s")
    } else {
        format!("{}s", (s * 1000.0).round() / 1000.0)
    };
    if h > 0.0 {
        format!("{h:.0}h{m:.0}m{s}")
    } else if m > 0.0 {
        format!("{m:.0}m{s}")
    } else {
        s
    }
}

/// The elapsed-time clock of k6's running line: `0m31.0s`, `1m01.5s`.
pub fn clock(d: std::time::Duration) -> String {
    let s = d.as_secs_f64();
    format!("{}m{:04.1}s", (s / 60.0).floor(), s % 60.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_format_like_k6() {
        assert_eq!(dur(0.5123), "512.3µs");
        assert_eq!(dur(12.345), "12.34ms");
        assert_eq!(dur(1500.0), "1.5s");
        assert_eq!(dur(61_500.0), "1m1s");
        assert_eq!(bytes(2300.0), "2.3 kB");
        assert_eq!(bytes(23_000.0), "23 kB");
        assert_eq!(bytes(230.0), "230 B");
        assert_eq!(bytes(5.0), "5 B");
        assert_eq!(num(3.0), "3");
        assert_eq!(num(1.9926214), "1.992621");
        assert_eq!(pct(2, 3), "66.66%");
        assert_eq!(humanize(1.5, Unit::Time, "s"), "0.00s");
        assert_eq!(humanize(1.5, Unit::Time, "us"), "1500.00µs");
    }

    #[test]
    fn go_durations_and_the_progress_clock_read_like_k6() {
        use std::time::Duration;
        assert_eq!(go_duration(Duration::from_secs(30)), "30s");
        assert_eq!(go_duration(Duration::from_secs(90)), "1m30s");
        assert_eq!(go_duration(Duration::from_secs(600)), "10m0s");
        assert_eq!(go_duration(Duration::from_secs(3600)), "1h0m0s");
        assert_eq!(go_duration(Duration::from_millis(500)), "500ms");
        assert_eq!(go_duration(Duration::from_millis(1500)), "1.5s");
        assert_eq!(go_duration(Duration::ZERO), "0s");
        assert_eq!(clock(Duration::from_millis(31_000)), "0m31.0s");
        assert_eq!(clock(Duration::from_millis(61_500)), "1m01.5s");
    }
}
