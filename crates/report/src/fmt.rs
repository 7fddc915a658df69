//! Formatting shared by the report and the comparison: HTML escaping and human units.

/// Escape text for HTML element content and attribute values (both quote kinds).
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

/// Milliseconds with a unit that keeps 3-4 significant digits (as the terminal summary).
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

/// Bytes in binary units.
pub fn bytes(v: f64) -> String {
    const U: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = v;
    let mut i = 0;
    while v.abs() >= 1024.0 && i < U.len() - 1 {
        v /= 1024.0;
        i += 1;
    }
    if i == 0 {
        format!("{v:.0} {}", U[i])
    } else {
        format!("{v:.2} {}", U[i])
    }
}

/// Bytes for an axis tick: `2.5 MiB`, no trailing zeros.
pub fn bytes_tick(v: f64) -> String {
    const U: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let (mut v, mut i) = (v, 0);
    while v.abs() >= 1024.0 && i < U.len() - 1 {
        v /= 1024.0;
        i += 1;
    }
    format!("{} {}", trim(v), U[i])
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

fn trim(v: f64) -> String {
    let s = format!("{v:.2}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" {
        "0".into()
    } else {
        s.to_string()
    }
}

/// A signed percentage change, e.g. `+12.3%`.
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

    #[test]
    fn escapes_markup_and_quotes() {
        assert_eq!(
            esc(r#"<script>alert("x")</script>&'"#),
            "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;&#39;"
        );
    }

    #[test]
    fn units() {
        assert_eq!(ms(0.0123), "12µs");
        assert_eq!(ms(12.345), "12.35ms");
        assert_eq!(ms(1500.0), "1.50s");
        assert_eq!(bytes(2048.0), "2.00 KiB");
        assert_eq!(ms_tick(30.0), "30ms");
        assert_eq!(bytes_tick(10.0 * 1048576.0), "10 MiB");
        assert_eq!(ms_tick(0.25), "250µs");
        assert_eq!(ms_tick(2500.0), "2.5s");
        assert_eq!(short(15000.0), "15k");
        assert_eq!(short(0.25), "0.25");
        assert_eq!(pct_change(0.123), "+12.3%");
        assert_eq!(pct_change(-0.5), "-50.0%");
        assert_eq!(pct_change(2.0), "+200%");
    }
}
