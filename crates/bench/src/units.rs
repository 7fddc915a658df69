//! Numbers with optional units, as harnesses print them (`73.76`, `2.5MiB`, `12ms`,
//! `3.1k ops/s`) and as `--threshold` limits are written (`max<3MiB`, `p(95)<20ms`).
//!
//! Sizes become bytes and durations milliseconds (Volley's units for data and time, so the
//! report and the summary format them as such); any other unit is kept as a label and the
//! number as printed, after an optional SI multiplier (`k`, `M`, `G`).

use volley_metrics::Unit;

/// A parsed quantity: the value in its class's base unit and what the unit was.
#[derive(Clone, Debug, PartialEq)]
pub struct Quantity {
    pub value: f64,
    pub class: Class,
}

/// What kind of unit a quantity had.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Class {
    /// No unit: a plain number.
    Plain,
    /// A size, now in bytes.
    Bytes,
    /// A duration, now in milliseconds.
    Time,
    /// Any other unit, kept as written (`MiB/s`, `ops/s`, `%`).
    Other(String),
}

impl Class {
    /// The result file's unit for a metric of this class.
    pub fn unit(&self) -> Unit {
        match self {
            Class::Bytes => Unit::Data,
            Class::Time => Unit::Time,
            _ => Unit::Default,
        }
    }

    /// The unit label shown beside values (`""` for plain numbers, bytes and times, which
    /// the formatters name themselves).
    pub fn label(&self) -> &str {
        match self {
            Class::Other(u) => u,
            _ => "",
        }
    }
}

/// Longest unit accepted (longer words are not units).
const MAX_UNIT: usize = 16;

fn size_factor(u: &str) -> Option<f64> {
    Some(match u {
        "B" => 1.0,
        "KiB" => 1024.0,
        "MiB" => 1024.0 * 1024.0,
        "GiB" => 1024.0 * 1024.0 * 1024.0,
        "TiB" => 1024.0f64.powi(4),
        "kB" | "KB" => 1e3,
        "MB" => 1e6,
        "GB" => 1e9,
        "TB" => 1e12,
        _ => return None,
    })
}

fn time_factor(u: &str) -> Option<f64> {
    Some(match u {
        "ns" => 1e-6,
        "us" | "µs" => 1e-3,
        "ms" => 1.0,
        "s" => 1e3,
        "min" => 60e3,
        "h" => 3600e3,
        _ => return None,
    })
}

/// Is `u` a unit this module knows by name (sizes, durations)?
pub fn is_known_unit(u: &str) -> bool {
    size_factor(u).is_some() || time_factor(u).is_some()
}

/// Could `u` be a unit at all: letters, `/`, `%`, `µ`, short, starting with a letter, `%` or
/// `µ`.
pub fn is_unit_word(u: &str) -> bool {
    !u.is_empty()
        && u.chars().count() <= MAX_UNIT
        && u.chars()
            .all(|c| c.is_ascii_alphabetic() || matches!(c, '/' | '%' | 'µ' | '_'))
        && u.chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '%' || c == 'µ')
}

/// The numeric prefix of `s` (sign, digits, one point, exponent) and the rest.
pub fn split_number(s: &str) -> Option<(f64, &str)> {
    let b = s.as_bytes();
    let mut i = 0;
    if i < b.len() && (b[i] == b'-' || b[i] == b'+') {
        i += 1;
    }
    let digits_start = i;
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
    }
    if i < b.len() && b[i] == b'.' {
        i += 1;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
    }
    let mantissa = &s[digits_start..i];
    if mantissa.is_empty() || mantissa == "." {
        return None;
    }
    // An exponent only when digits follow it (`2e5`, not the `e` of a unit).
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        let mut j = i + 1;
        if j < b.len() && (b[j] == b'-' || b[j] == b'+') {
            j += 1;
        }
        let exp_digits = j;
        while j < b.len() && b[j].is_ascii_digit() {
            j += 1;
        }
        if j > exp_digits {
            i = j;
        }
    }
    let v: f64 = s[..i].parse().ok()?;
    v.is_finite().then_some((v, &s[i..]))
}

/// `unit` (possibly empty) applied to `v`: sizes to bytes, durations to ms, SI multipliers
/// (`k`, `M`, `G`) on anything else; `next` is a separate word that may name the unit
/// (`3.1k ops/s`). Returns the quantity and whether `next` was used.
pub fn apply_unit(v: f64, unit: &str, next: Option<&str>) -> Option<(Quantity, bool)> {
    let q = |value: f64, class: Class| Quantity { value, class };
    if unit.is_empty() {
        return match next {
            Some(n) if n.contains('/') || is_known_unit(n) => {
                Some((apply_unit(v, n, None)?.0, true))
            }
            _ => Some((q(v, Class::Plain), false)),
        };
    }
    if let Some(f) = size_factor(unit) {
        return Some((q(v * f, Class::Bytes), false));
    }
    if let Some(f) = time_factor(unit) {
        return Some((q(v * f, Class::Time), false));
    }
    let si = match unit.chars().next() {
        Some('k') | Some('K') => Some(1e3),
        Some('M') => Some(1e6),
        Some('G') => Some(1e9),
        _ => None,
    };
    if let Some(m) = si.filter(|_| unit.len() == 1) {
        return match next {
            Some(n) if is_unit_word(n) && (n.contains('/') || is_known_unit(n)) => {
                Some((apply_unit(v * m, n, None)?.0, true))
            }
            _ => Some((q(v * m, Class::Plain), false)),
        };
    }
    is_unit_word(unit).then(|| (q(v, Class::Other(unit.to_string())), false))
}

/// One token as a quantity: `73.76`, `2.5MiB`, `12ms`, `3.1k`, `40%`, `60MiB/s`. `None` when
/// it does not start with a number or has trailing characters that are not a unit.
pub fn parse(s: &str) -> Option<Quantity> {
    let (v, rest) = split_number(s.trim())?;
    let (unit, next) = match rest.split_once(' ') {
        Some((u, n)) => (u, Some(n.trim())),
        None => (rest, None),
    };
    match apply_unit(v, unit, next)? {
        (q, true) => Some(q),
        (q, false) if next.is_none_or(str::is_empty) => Some(q),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> (f64, Class) {
        let q = parse(s).unwrap_or_else(|| panic!("{s}"));
        (q.value, q.class)
    }

    #[test]
    fn sizes_become_bytes_and_times_milliseconds() {
        assert_eq!(p("2.5MiB"), (2.5 * 1048576.0, Class::Bytes));
        assert_eq!(p("3MB"), (3e6, Class::Bytes));
        assert_eq!(p("12ms"), (12.0, Class::Time));
        assert_eq!(p("0.074s"), (74.0, Class::Time));
        assert_eq!(p("250us"), (0.25, Class::Time));
        assert_eq!(p("73.76"), (73.76, Class::Plain));
        assert_eq!(p("-1e3"), (-1000.0, Class::Plain));
    }

    #[test]
    fn other_units_are_kept_and_si_prefixes_multiply() {
        assert_eq!(p("3.1k ops/s"), (3100.0, Class::Other("ops/s".into())));
        assert_eq!(p("3.1k"), (3100.0, Class::Plain));
        assert_eq!(p("60MiB/s"), (60.0, Class::Other("MiB/s".into())));
        assert_eq!(p("40%"), (40.0, Class::Other("%".into())));
        assert_eq!(p("2e5"), (2e5, Class::Plain));
        assert_eq!(p("5 ms"), (5.0, Class::Time));
    }

    #[test]
    fn not_quantities() {
        for s in [
            "",
            "abc",
            "1.2.3",
            "0x1F",
            "12 apples and pears",
            ".",
            "-",
            "inf",
            "NaN",
        ] {
            assert_eq!(parse(s), None, "{s}");
        }
    }
}
