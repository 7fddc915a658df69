//! Human durations as k6, oha and wrk users write them.

use std::time::Duration;

/// `10s`, `1m30s`, `500ms`, `2h`, or a bare number of seconds.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let hint = || format!("invalid duration '{s}': use e.g. 30s, 1m30s, 500ms or 2h");
    if s.is_empty() {
        return Err(hint());
    }
    if let Ok(secs) = s.parse::<f64>() {
        return if secs.is_finite() && secs >= 0.0 {
            Ok(Duration::from_secs_f64(secs))
        } else {
            Err(hint())
        };
    }
    let mut total = 0f64;
    let mut rest = s;
    while !rest.is_empty() {
        let num_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(hint)?;
        if num_len == 0 {
            return Err(hint());
        }
        let n: f64 = rest[..num_len].parse().map_err(|_| hint())?;
        rest = &rest[num_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let mult = match &rest[..unit_len] {
            "ms" => 0.001,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            "us" | "µs" => 0.000_001,
            _ => return Err(hint()),
        };
        total += n * mult;
        rest = &rest[unit_len..];
    }
    Ok(Duration::from_secs_f64(total))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("1m30s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("2"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_duration("1h"), Ok(Duration::from_secs(3600)));
        for bad in ["", "s", "10x", "-1", "1m30", "ten"] {
            assert!(parse_duration(bad).is_err(), "{bad} should fail");
        }
    }
}
