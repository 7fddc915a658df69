//! `parse_duration` (CLI `-z`, `--timeout`, options.duration, stages, ...): never panics, and
//! what it accepts survives a round trip through k6's printed form and through splitting.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::time::Duration;
use volley_engine::executor::fmt_duration;
use volley_engine::parse_duration;

/// Float rounding: a microsecond, or a few ulps of the value in seconds for large ones.
fn close(a: Duration, b: Duration) -> bool {
    let tol = Duration::from_micros(1).max(Duration::from_secs_f64(a.as_secs_f64() * 1e-15));
    a.abs_diff(b) <= tol
}

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(d) = parse_duration(s) else {
        return;
    };
    // k6's printed form parses back to within a millisecond (it rounds to ms).
    let printed = fmt_duration(d);
    let back = parse_duration(&printed)
        .unwrap_or_else(|e| panic!("{s:?} → {d:?} printed as {printed:?} does not parse: {e}"));
    let diff = back.abs_diff(d);
    assert!(
        diff <= Duration::from_millis(1),
        "{s:?} → {d:?} → {printed:?} → {back:?}"
    );
    // Seconds with nanoseconds parse back to within float precision.
    let exact = format!("{}.{:09}s", d.as_secs(), d.subsec_nanos());
    let again = parse_duration(&exact).expect("seconds with a fraction parse");
    assert!(close(again, d), "{exact:?}: {again:?} != {d:?}");
    // A compound duration is the sum of its parts: split after each unit.
    let t = s.trim();
    if t.ends_with(|c: char| c.is_alphabetic()) {
        if let Some(i) = t
            .char_indices()
            .find(|&(i, c)| {
                c.is_alphabetic()
                    && t[i + c.len_utf8()..].starts_with(|n: char| n.is_ascii_digit() || n == '.')
            })
            .map(|(i, c)| i + c.len_utf8())
        {
            let (a, b) = t.split_at(i);
            let (pa, pb) = (parse_duration(a), parse_duration(b));
            let (pa, pb) = (pa.expect("prefix of a valid duration"), pb.expect("suffix"));
            assert!(close(pa + pb, d), "{a:?} + {b:?} != {s:?}");
        }
    }
});
