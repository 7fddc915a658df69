//! HDR histograms with Volley's fixed bounds, and their standard compressed text encoding.
//!
//! Trend values are stored as integers in thousandths of the user's unit: for time trends the
//! user's unit is the millisecond, so the histogram counts microseconds. The bounds cover
//! 1 µs .. 1 h at 3 significant digits; larger values saturate at the top bucket (the exact
//! maximum is still tracked beside the histogram).

use base64::Engine as _;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;

/// Highest trackable stored value: one hour in microseconds.
pub const HIGHEST: u64 = 3_600_000_000;
pub const SIGFIG: u8 = 3;
/// Stored integer units per user unit (ms → µs).
pub const SCALE: f64 = 1000.0;

pub type Hist = Histogram<u64>;

/// A histogram that starts small and grows to the range actually recorded (values are
/// capped at [`HIGHEST`] before recording). Allocating the whole 1 µs .. 1 h range up front
/// costs ~190 KB per series: with one series per URL or tag value that is most of a run's
/// memory, and snapshots would reallocate it every second.
pub fn new_hist() -> Hist {
    Histogram::new(SIGFIG).expect("static precision is valid")
}

/// Record a stored value, capped at the top of Volley's range.
#[inline]
pub fn record(h: &mut Hist, v: u64) {
    // Auto-resizing histograms grow to fit, so this cannot fail below HIGHEST.
    let _ = h.record(v.min(HIGHEST));
}

/// Encode as base64 of the V2 deflate-compressed form ("HISTFAAA..."), the format other HDR
/// tools read.
pub fn encode(h: &Hist) -> String {
    let mut buf = Vec::new();
    V2DeflateSerializer::new()
        .serialize(h, &mut buf)
        .expect("serialising into a Vec cannot fail");
    base64::engine::general_purpose::STANDARD.encode(buf)
}

/// Decode what [`encode`] wrote, resized into Volley's bounds so histograms from files merge.
pub fn decode(s: &str) -> Result<Hist, String> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(s.trim())
        .map_err(|e| format!("histogram is not valid base64: {e}"))?;
    let h: Hist = Deserializer::new()
        .deserialize(&mut bytes.as_slice())
        .map_err(|e| format!("histogram is not a valid HDR V2 encoding: {e:?}"))?;
    let mut out = new_hist();
    out.add(&h)
        .map_err(|e| format!("histogram does not fit Volley's bounds: {e:?}"))?;
    Ok(out)
}

/// Value at percentile `p` (0..=100) in user units.
pub fn percentile(h: &Hist, p: f64) -> f64 {
    if h.is_empty() {
        return 0.0;
    }
    h.value_at_percentile(p) as f64 / SCALE
}

/// Convert a user value to the stored integer; negatives clamp to 0 (HDR cannot hold them).
pub fn to_stored(v: f64) -> u64 {
    if v.is_nan() || v <= 0.0 {
        0
    } else {
        let s = (v * SCALE).round();
        if s >= HIGHEST as f64 {
            HIGHEST
        } else {
            s as u64
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encode_decode_round_trip_keeps_counts_and_percentiles() {
        let mut h = new_hist();
        for v in 1..=10_000u64 {
            h.record(v * 7).unwrap();
        }
        let s = encode(&h);
        assert!(
            s.starts_with("HISTF"),
            "standard compressed prefix, got {}",
            &s[..8]
        );
        let d = decode(&s).unwrap();
        assert_eq!(d.len(), 10_000);
        assert_eq!(d.value_at_percentile(99.0), h.value_at_percentile(99.0));
        assert_eq!(d.max(), h.max());
    }

    #[test]
    fn decode_rejects_garbage() {
        assert!(decode("not base64 !!").is_err());
        assert!(decode("aGVsbG8=").is_err());
    }

    #[test]
    fn stored_values_clamp() {
        assert_eq!(to_stored(-1.0), 0);
        assert_eq!(to_stored(1.5), 1500);
        assert_eq!(to_stored(1e12), HIGHEST);
        assert_eq!(to_stored(f64::NAN), 0);
    }

    #[test]
    fn histograms_stay_small_for_small_values_and_grow_on_demand() {
        let mut h = new_hist();
        record(&mut h, 900);
        let small = h.distinct_values();
        assert!(
            small <= 4096,
            "a sub-millisecond series needs few buckets: {small}"
        );
        record(&mut h, 2_000_000_000);
        record(&mut h, u64::MAX);
        assert_eq!(h.len(), 3);
        assert!(
            h.max() <= HIGHEST + HIGHEST / 500,
            "capped at one hour: {}",
            h.max()
        );
        assert!(h.distinct_values() > small, "grew to fit");
    }

    #[test]
    fn three_significant_digits_over_the_whole_range() {
        let mut h = new_hist();
        h.record(1_234_567).unwrap(); // 1.234567 s in µs
        let p = percentile(&h, 50.0);
        assert!((p - 1234.567).abs() / 1234.567 < 0.001, "{p}");
    }
}
