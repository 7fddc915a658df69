//! Human durations as k6, oha and wrk users write them, and the one checked conversion from
//! seconds to a [`Duration`] every user-supplied number goes through.

use std::time::Duration;

/// The longest duration Volley accepts anywhere (flags, options, stages, timeouts): 365 days.
/// Longer ones are refused with this limit in the message; they would overflow timers, and
/// `Duration::from_secs_f64` panics on what does not fit.
pub const MAX_DURATION: Duration = Duration::from_secs(365 * 24 * 3600);

/// [`MAX_DURATION`] as messages spell it.
pub const MAX_DURATION_TEXT: &str = "8760h (365 days)";

/// Seconds to a `Duration`: an error for NaN, negative or more than [`MAX_DURATION`] (the
/// message names the limit; callers prefix what the value was).
pub fn duration_from_secs(secs: f64) -> Result<Duration, String> {
    if secs.is_nan() || secs < 0.0 {
        return Err(format!("a duration cannot be negative, got {secs}"));
    }
    if secs > MAX_DURATION.as_secs_f64() {
        return Err(too_long(secs));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// Seconds to a `Duration` for waits a script asks for (`sleep`, timers, request timeouts):
/// NaN and negatives are zero, anything longer waits [`MAX_DURATION`]. Never panics.
pub fn clamp_secs(secs: f64) -> Duration {
    if secs.is_nan() || secs <= 0.0 {
        Duration::ZERO
    } else if secs >= MAX_DURATION.as_secs_f64() {
        MAX_DURATION
    } else {
        Duration::from_secs_f64(secs)
    }
}

fn too_long(secs: f64) -> String {
    let secs = if secs < 1e12 {
        format!("{secs}")
    } else {
        format!("{secs:e}")
    };
    format!("a duration of {secs} s is too long: the maximum is {MAX_DURATION_TEXT}")
}

/// `10s`, `1m30s`, `500ms`, `2h`, or a bare number of seconds; at most [`MAX_DURATION`].
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let hint = || format!("invalid duration '{s}': use e.g. 30s, 1m30s, 500ms or 2h");
    let limit = || format!("duration '{s}' is too long: the maximum is {MAX_DURATION_TEXT}");
    if s.is_empty() {
        return Err(hint());
    }
    if let Ok(secs) = s.parse::<f64>() {
        return if secs.is_nan() || secs < 0.0 || secs == f64::NEG_INFINITY {
            Err(hint())
        } else {
            duration_from_secs(secs).map_err(|_| limit())
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
    duration_from_secs(total).map_err(|_| limit())
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
        assert_eq!(parse_duration("8760h"), Ok(MAX_DURATION));
        for bad in ["", "s", "10x", "-1", "1m30", "ten", "NaN", "-inf"] {
            assert!(parse_duration(bad).is_err(), "{bad} should fail");
        }
    }

    #[test]
    fn huge_durations_are_refused_with_the_limit_not_a_panic() {
        for huge in [
            "8761h",
            "1e300",
            "inf",
            "99999999999999999999999h",
            &"9".repeat(400),
        ] {
            let e = parse_duration(huge).unwrap_err();
            assert!(e.contains("maximum is 8760h"), "{huge}: {e}");
        }
        assert!(duration_from_secs(1e300).unwrap_err().contains("8760h"));
        assert!(duration_from_secs(f64::NAN).is_err());
        assert_eq!(clamp_secs(1e300), MAX_DURATION);
        assert_eq!(clamp_secs(f64::INFINITY), MAX_DURATION);
        assert_eq!(clamp_secs(f64::NAN), Duration::ZERO);
        assert_eq!(clamp_secs(-5.0), Duration::ZERO);
    }

    /// Deterministic xorshift64* (a fixed seed: failures reproduce; no dev-dependency).
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
    }

    /// Property: a duration written as parts (`1h2m3.5s`) is the sum of its parts, prints in
    /// k6's form (`fmt_duration`) that parses back to within a millisecond, and its seconds
    /// with nanoseconds parse back exactly (to float precision). The same ground as
    /// `fuzz/fuzz_targets/duration.rs`, on the stable toolchain.
    #[test]
    fn property_compound_durations_are_sums_and_round_trip() {
        let mut rng = Rng(0x5eed_d0d0);
        const UNITS: [(&str, f64); 6] = [
            ("h", 3600.0),
            ("m", 60.0),
            ("s", 1.0),
            ("ms", 0.001),
            ("us", 0.000_001),
            ("µs", 0.000_001),
        ];
        for _ in 0..5000 {
            let mut text = String::new();
            let mut secs = 0f64;
            for _ in 0..1 + rng.below(4) {
                let whole = rng.below(10_000);
                let n = if rng.below(3) == 0 {
                    format!("{whole}.{}", rng.below(1000))
                } else {
                    whole.to_string()
                };
                let (unit, mult) = UNITS[rng.below(UNITS.len() as u64) as usize];
                secs += n.parse::<f64>().unwrap() * mult;
                text.push_str(&n);
                text.push_str(unit);
            }
            if secs > MAX_DURATION.as_secs_f64() {
                // Beyond the documented maximum: refused, not a panic.
                assert!(
                    parse_duration(&text).is_err(),
                    "{text} should exceed the maximum"
                );
                continue;
            }
            let d = parse_duration(&text).unwrap_or_else(|e| panic!("{text}: {e}"));
            let want = Duration::from_secs_f64(secs);
            assert!(
                d.abs_diff(want) <= Duration::from_micros(1),
                "{text}: {d:?} != {want:?}"
            );

            let printed = crate::executor::fmt_duration(d);
            let back = parse_duration(&printed).unwrap_or_else(|e| panic!("{printed}: {e}"));
            assert!(
                back.abs_diff(d) <= Duration::from_millis(1),
                "{text} → {printed}"
            );

            let exact = format!("{}.{:09}s", d.as_secs(), d.subsec_nanos());
            let again = parse_duration(&exact).unwrap();
            assert!(again.abs_diff(d) <= Duration::from_micros(1), "{exact}");
        }
    }

    /// Property: arbitrary short strings over the grammar's alphabet never panic, and what
    /// they parse to is unchanged by surrounding whitespace.
    #[test]
    fn property_random_duration_text_never_panics() {
        let mut rng = Rng(0xd00d_5eed);
        // 'e' and long digit runs reach the huge values that are refused, never a panic.
        let alphabet: Vec<char> = "0123456789..smhuµ +-xe".chars().collect();
        for _ in 0..20_000 {
            let len = rng.below(9) as usize;
            let s: String = (0..len)
                .map(|_| alphabet[rng.below(alphabet.len() as u64) as usize])
                .collect();
            let r = parse_duration(&s);
            assert_eq!(r, parse_duration(&format!("  {s}\t")), "{s:?}");
            if let Ok(d) = r {
                let printed = crate::executor::fmt_duration(d);
                let back = parse_duration(&printed).unwrap_or_else(|e| panic!("{s:?}: {e}"));
                assert!(
                    back.abs_diff(d) <= Duration::from_millis(1),
                    "{s:?} → {printed}"
                );
            }
        }
    }
}
