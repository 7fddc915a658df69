//! HDR histograms with Volley's fixed bounds, and their standard compressed text encoding.
//!
//! Trend values are stored as integers in thousandths of the user's unit: for time trends the
//! user's unit is the millisecond, so the histogram counts microseconds. The bounds cover
//! 1 µs .. 1 h at 3 significant digits; larger values saturate at the top bucket (the exact
//! maximum is still tracked beside the histogram).

use base64::Engine as _;
use hdrhistogram::iterators::{recorded, HistogramIterator, IterationValue};
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;
use std::borrow::Cow;

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

/// An HDR histogram exactly sized for values up to `high` (no spare capacity), still
/// auto-resizing past it.
fn hist_up_to(high: u64) -> Hist {
    let mut h = Histogram::new_with_bounds(1, high.clamp(2, HIGHEST), SIGFIG)
        .expect("static precision and bounds are valid");
    h.auto(true);
    h
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

/// The histogram [`encode`] wrote, as it was written (checked by
/// [`crate::hist_check::checked_v2`] first, so a hostile file cannot make it allocate).
fn deserialize(s: &str) -> Result<Hist, String> {
    let (v2, _) = crate::hist_check::checked_v2(s)?;
    Deserializer::new()
        .deserialize(&mut v2.as_slice())
        .map_err(|e| format!("histogram is not a valid HDR V2 encoding: {e}"))
}

/// Check an encoded histogram without building it; returns how many samples it holds.
pub fn check(s: &str) -> Result<u64, String> {
    crate::hist_check::checked_v2(s).map(|(_, total)| total)
}

/// Decode what [`encode`] wrote into a trend histogram of Volley's bounds (the short form
/// when it holds few distinct values, as most per-URL series do).
///
/// Volley's own layout (lowest value 1, 3 digits) is read straight into the trend
/// histogram: memory follows the counts present, not the array the header's bounds declare.
pub fn decode_trend(s: &str) -> Result<TrendHist, String> {
    let (v2, _) = crate::hist_check::checked_v2(s)?;
    if !crate::hist_check::volley_layout(&v2) {
        let h = Deserializer::new()
            .deserialize(&mut v2.as_slice())
            .map_err(|e| format!("histogram is not a valid HDR V2 encoding: {e}"))?;
        return Ok(TrendHist::from_hist(&h));
    }
    let (payload, len) = crate::hist_check::payload(&v2);
    let mut t = TrendHist::new();
    crate::hist_check::counts(payload, len, |i, n| t.record_n(value_for_index(i), n))?;
    Ok(t)
}

/// The lowest value of counts-array slot `i` in Volley's layout (hdrhistogram's
/// `value_for`: 1024 half sub-buckets; slots past one hour saturate, as recording does).
fn value_for_index(i: u64) -> u64 {
    const HALF: u64 = 1024; // half of the 2048 sub-buckets
    let half = HALF;
    let (bucket, sub) = match (i / half).checked_sub(1) {
        None => (0, i % half),
        Some(b) => (b, i % half + half),
    };
    if bucket >= 32 {
        return HIGHEST;
    }
    (sub << bucket).min(HIGHEST)
}

/// Decode what [`encode`] wrote, resized into Volley's bounds so histograms from files merge.
pub fn decode(s: &str) -> Result<Hist, String> {
    let h = deserialize(s)?;
    let mut out = new_hist();
    out.add(&h)
        .map_err(|e| format!("histogram does not fit Volley's bounds: {e:?}"))?;
    Ok(out)
}

/// Value at percentile `p` (0..=100) in user units.
pub fn percentile(h: &TrendHist, p: f64) -> f64 {
    if h.is_empty() {
        return 0.0;
    }
    h.value_at_percentile(p) as f64 / SCALE
}

/// k6's percentile formula (`q` in 0..=1: interpolate between the samples at ranks ⌊q(n−1)⌋
/// and ⌈q(n−1)⌉) over a histogram, in stored units. A bucket's `c` samples are taken as
/// spread evenly across it (the j-th at `lo + (hi − lo)(j + ½)/c`), so the estimate is off by
/// at most half a bucket (0.05 % at 3 significant digits) instead of a nearest-rank bucket's
/// upper edge (up to 0.1 %, always high); buckets of width 1 (below 2,048) are exact.
pub fn interpolated(h: &TrendHist, q: f64) -> f64 {
    let n = h.len();
    if n == 0 {
        return 0.0;
    }
    let r = q.clamp(0.0, 1.0) * (n - 1) as f64;
    let (want_lo, want_hi) = (r.floor() as u64, (r.ceil() as u64).min(n - 1));
    let (mut lo_v, mut hi_v) = (None, None);
    let mut before = 0u64;
    for b in h.iter_recorded() {
        let c = b.count_at_value();
        if c == 0 {
            continue;
        }
        let top = b.value_iterated_to();
        let bottom = lowest_equivalent(top);
        let at =
            |k: u64| bottom as f64 + (top - bottom) as f64 * ((k - before) as f64 + 0.5) / c as f64;
        if lo_v.is_none() && want_lo < before + c {
            lo_v = Some(at(want_lo));
        }
        if want_hi < before + c {
            hi_v = Some(at(want_hi));
            break;
        }
        before += c;
    }
    match (lo_v, hi_v) {
        (Some(j), Some(k)) => j + (k - j) * (r - r.floor()),
        _ => h.value_at_percentile(q * 100.0) as f64,
    }
}

/// Bits of the sub-bucket index: HDR at 3 significant digits and a lowest value of 1 has
/// 2048 sub-buckets, so values below 2048 are exact and each power of two above keeps 1024
/// steps.
const SUB_BUCKET_MASK: u64 = 2047;
const LEADING_ZERO_BASE: u32 = 53;

/// The HDR bucket of `v` as `(lowest equivalent value, bucket width exponent)`: exactly what
/// [`Hist`] (Volley's bounds) computes, without a histogram at hand.
#[inline]
fn bucket(v: u64) -> (u64, u32) {
    let shift = LEADING_ZERO_BASE - (v | SUB_BUCKET_MASK).leading_zeros();
    ((v >> shift) << shift, shift)
}

/// The lowest value HDR counts together with `v`.
#[inline]
pub fn lowest_equivalent(v: u64) -> u64 {
    bucket(v).0
}

/// The highest value HDR counts together with `v`.
#[inline]
pub fn highest_equivalent(v: u64) -> u64 {
    let (lo, shift) = bucket(v);
    lo + (1 << shift) - 1
}

/// Distinct buckets a [`TrendHist`] keeps as a sorted list before it becomes an HDR array:
/// 256 × 8 bytes = 2 KiB, against 16 KiB (sub-millisecond values) to 64 KiB (values up to
/// 100 ms) for the smallest HDR array that holds them.
pub const SPARSE_MAX: usize = 256;

/// A trend's histogram: HDR semantics (3 significant digits, Volley's bounds) in a form that
/// costs bytes, not kilobytes, while a series has few distinct values.
///
/// With one series per URL or tag value, most series see a handful of samples, and an HDR
/// counts array per series (and per interval, and per worker) was most of a run's memory. A
/// sparse histogram holds the sorted `(bucket, count)` pairs HDR would hold non-zero, so its
/// percentiles, iteration and encoding are identical to the HDR array it turns into once it
/// has more than [`SPARSE_MAX`] distinct buckets.
#[derive(Clone, Debug)]
pub enum TrendHist {
    /// Sorted by bucket: `(lowest equivalent value, count)`. Stored values are capped at
    /// [`HIGHEST`], which fits a `u32`.
    Sparse(Vec<(u32, u32)>),
    Hdr(Box<Hist>),
}

impl Default for TrendHist {
    fn default() -> Self {
        TrendHist::Sparse(Vec::new())
    }
}

/// What [`TrendHist::iter_recorded`] yields, as `Hist::iter_recorded` does.
pub type Recorded = IterationValue<u64>;

/// Iterator over the recorded buckets of a [`TrendHist`], in value order.
pub enum RecordedIter<'a> {
    Sparse {
        it: std::slice::Iter<'a, (u32, u32)>,
        seen: u64,
        total: u64,
    },
    Hdr(HistogramIterator<'a, u64, recorded::Iter>),
}

impl Iterator for RecordedIter<'_> {
    type Item = Recorded;

    fn next(&mut self) -> Option<Recorded> {
        match self {
            RecordedIter::Sparse { it, seen, total } => {
                let &(v, c) = it.next()?;
                *seen += c as u64;
                let q = *seen as f64 / *total as f64;
                Some(IterationValue::new(
                    highest_equivalent(v as u64),
                    q,
                    q,
                    c as u64,
                    c as u64,
                ))
            }
            RecordedIter::Hdr(it) => it.next(),
        }
    }
}

impl TrendHist {
    pub fn new() -> Self {
        Self::default()
    }

    /// Record a stored value, capped at the top of Volley's range.
    #[inline]
    pub fn record(&mut self, v: u64) {
        let v = v.min(HIGHEST);
        match self {
            // Auto-resizing histograms grow to fit, so this cannot fail below HIGHEST.
            TrendHist::Hdr(h) => {
                let _ = h.record(v);
            }
            TrendHist::Sparse(e) => {
                // The common case: a bucket seen before.
                let lo = lowest_equivalent(v) as u32;
                if let Ok(i) = e.binary_search_by_key(&lo, |x| x.0) {
                    if let Some(c) = e[i].1.checked_add(1) {
                        e[i].1 = c;
                        return;
                    }
                }
                self.record_n(v, 1)
            }
        }
    }

    /// Record `n` samples of one stored value, capped at the top of Volley's range.
    pub fn record_n(&mut self, v: u64, n: u64) {
        if n == 0 {
            return;
        }
        let v = v.min(HIGHEST);
        if let TrendHist::Sparse(e) = self {
            let lo = lowest_equivalent(v) as u32;
            match e.binary_search_by_key(&lo, |x| x.0) {
                Ok(i) => {
                    if let Ok(c) = u32::try_from(e[i].1 as u64 + n) {
                        e[i].1 = c;
                        return;
                    }
                }
                Err(i) => {
                    if e.len() < SPARSE_MAX && n <= u32::MAX as u64 {
                        e.insert(i, (lo, n as u32));
                        return;
                    }
                }
            }
        }
        // Auto-resizing histograms grow to fit, so this cannot fail below HIGHEST.
        let _ = self.make_hdr().record_n(v, n);
    }

    /// Turn into the HDR form (if not already) and return the histogram.
    fn make_hdr(&mut self) -> &mut Hist {
        if let TrendHist::Sparse(e) = self {
            let mut h = hist_up_to(e.last().map_or(2, |x| highest_equivalent(x.0 as u64)));
            for &(v, c) in e.iter() {
                let _ = h.record_n(v as u64, c as u64);
            }
            *self = TrendHist::Hdr(Box::new(h));
        }
        match self {
            TrendHist::Hdr(h) => h,
            TrendHist::Sparse(_) => unreachable!("converted above"),
        }
    }

    /// Add all of `o`'s counts (histograms of Volley's bounds add exactly).
    pub fn add(&mut self, o: &TrendHist) {
        match o {
            TrendHist::Sparse(oe) => {
                if let TrendHist::Sparse(e) = self {
                    if let Some(merged) = merge_sparse(e, oe) {
                        *e = merged;
                        return;
                    }
                }
                let h = self.make_hdr();
                for &(v, c) in oe {
                    let _ = h.record_n(v as u64, c as u64);
                }
            }
            TrendHist::Hdr(oh) => match self {
                TrendHist::Sparse(e) => {
                    let mut h = oh.clone();
                    for &(v, c) in e.iter() {
                        let _ = h.record_n(v as u64, c as u64);
                    }
                    *self = TrendHist::Hdr(h);
                }
                // Both sides share Volley's bounds, so adding cannot fail.
                TrendHist::Hdr(h) => {
                    let _ = h.add(&**oh);
                }
            },
        }
    }

    /// Number of samples recorded.
    pub fn len(&self) -> u64 {
        match self {
            TrendHist::Sparse(e) => e.iter().map(|x| x.1 as u64).sum(),
            TrendHist::Hdr(h) => h.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        match self {
            TrendHist::Sparse(e) => e.is_empty(),
            TrendHist::Hdr(h) => h.is_empty(),
        }
    }

    /// Forget all samples. An HDR array keeps its allocation (a series that was busy is
    /// likely to be busy again); a sparse list is released.
    pub fn reset(&mut self) {
        match self {
            TrendHist::Sparse(e) => *e = Vec::new(),
            TrendHist::Hdr(h) => h.reset(),
        }
    }

    /// The stored value at percentile `p` (0..=100), exactly as `Hist::value_at_percentile`.
    pub fn value_at_percentile(&self, p: f64) -> u64 {
        match self {
            TrendHist::Hdr(h) => h.value_at_percentile(p),
            TrendHist::Sparse(e) => {
                // The same walk as hdrhistogram's value_at_quantile.
                let q = (p / 100.0).min(1.0);
                let total = self.len();
                let want = ((q * total as f64).ceil() as u64).max(1);
                let mut seen = 0u64;
                for &(v, c) in e {
                    seen += c as u64;
                    if seen >= want {
                        return if q == 0.0 {
                            v as u64
                        } else {
                            highest_equivalent(v as u64)
                        };
                    }
                }
                0
            }
        }
    }

    /// The recorded buckets in value order, as `Hist::iter_recorded` yields them.
    pub fn iter_recorded(&self) -> RecordedIter<'_> {
        match self {
            TrendHist::Sparse(e) => RecordedIter::Sparse {
                it: e.iter(),
                seen: 0,
                total: self.len().max(1),
            },
            TrendHist::Hdr(h) => RecordedIter::Hdr(h.iter_recorded()),
        }
    }

    /// As a standard HDR histogram (borrowed when it already is one).
    pub fn to_hist(&self) -> Cow<'_, Hist> {
        match self {
            TrendHist::Hdr(h) => Cow::Borrowed(h),
            TrendHist::Sparse(_) => {
                let mut c = self.clone();
                c.make_hdr();
                match c {
                    TrendHist::Hdr(h) => Cow::Owned(*h),
                    TrendHist::Sparse(_) => unreachable!("converted above"),
                }
            }
        }
    }

    /// From an HDR histogram (e.g. decoded from a file): sparse when it has few distinct
    /// buckets, otherwise an HDR array sized to its range.
    pub fn from_hist(h: &Hist) -> TrendHist {
        if h.iter_recorded().nth(SPARSE_MAX).is_some() {
            let mut out = hist_up_to(h.max());
            // Same bounds and precision: adding cannot fail.
            let _ = out.add(h);
            return TrendHist::Hdr(Box::new(out));
        }
        let mut out = TrendHist::new();
        for v in h.iter_recorded() {
            out.record_n(v.value_iterated_to(), v.count_at_value());
        }
        out
    }

    /// The standard compressed base64 encoding (see [`encode`]).
    pub fn encode(&self) -> String {
        encode(&self.to_hist())
    }

    /// Heap bytes held (allocated capacity for the sparse form, the counts array for HDR):
    /// what one series' histogram costs.
    pub fn heap_bytes(&self) -> usize {
        match self {
            TrendHist::Sparse(e) => e.capacity() * std::mem::size_of::<(u32, u32)>(),
            TrendHist::Hdr(h) => {
                std::mem::size_of::<Hist>() + h.distinct_values() * std::mem::size_of::<u64>()
            }
        }
    }
}

/// Merge two sorted sparse lists, or None when the result would not stay sparse.
fn merge_sparse(a: &[(u32, u32)], b: &[(u32, u32)]) -> Option<Vec<(u32, u32)>> {
    let mut out = Vec::with_capacity((a.len() + b.len()).min(SPARSE_MAX));
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        let next = match (a.get(i), b.get(j)) {
            (Some(x), Some(y)) if x.0 == y.0 => {
                i += 1;
                j += 1;
                (x.0, x.1.checked_add(y.1)?)
            }
            (Some(x), Some(y)) if x.0 < y.0 => {
                i += 1;
                *x
            }
            (Some(x), None) => {
                i += 1;
                *x
            }
            (_, Some(y)) => {
                j += 1;
                *y
            }
            (None, None) => unreachable!("loop condition"),
        };
        if out.len() == SPARSE_MAX {
            return None;
        }
        out.push(next);
    }
    Some(out)
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
        assert!(decode_trend("aGVsbG8=").is_err());
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
        let mut h = TrendHist::new();
        h.record(1_234_567); // 1.234567 s in µs
        let p = percentile(&h, 50.0);
        assert!((p - 1234.567).abs() / 1234.567 < 0.001, "{p}");
        h.make_hdr();
        assert_eq!(percentile(&h, 50.0), p, "both forms");
    }

    /// A small deterministic generator (xorshift) so the tests need no dependency.
    fn values(seed: u64, n: usize, max: u64) -> Vec<u64> {
        let mut x = seed.max(1);
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                // Skewed towards small values, as latencies are.
                let m = 1 + (x >> 40) % max.max(1);
                (x >> 3) % m
            })
            .collect()
    }

    fn hdr_of(vs: &[u64]) -> Hist {
        let mut h = new_hist();
        for &v in vs {
            record(&mut h, v);
        }
        h
    }

    fn sparse_of(vs: &[u64]) -> TrendHist {
        let mut t = TrendHist::new();
        for &v in vs {
            t.record(v);
        }
        t
    }

    fn assert_same(t: &TrendHist, h: &Hist) {
        assert_eq!(t.len(), h.len());
        for p in [
            0.0, 0.1, 1.0, 25.0, 50.0, 75.0, 90.0, 95.0, 99.0, 99.9, 99.99, 100.0,
        ] {
            assert_eq!(t.value_at_percentile(p), h.value_at_percentile(p), "p{p}");
        }
        let a: Vec<(u64, u64)> = t
            .iter_recorded()
            .map(|v| (v.value_iterated_to(), v.count_since_last_iteration()))
            .collect();
        let b: Vec<(u64, u64)> = h
            .iter_recorded()
            .map(|v| (v.value_iterated_to(), v.count_since_last_iteration()))
            .collect();
        assert_eq!(a, b);
    }

    #[test]
    fn bucket_bounds_match_hdr() {
        let h = new_hist();
        let mut probes: Vec<u64> = (0..5000).collect();
        for b in 10..33 {
            let p = 1u64 << b;
            probes.extend([p - 1, p, p + 1, p + p / 3]);
        }
        probes.extend(values(3, 20_000, HIGHEST));
        probes.push(HIGHEST);
        for v in probes {
            assert_eq!(lowest_equivalent(v), h.lowest_equivalent(v), "{v}");
            assert_eq!(highest_equivalent(v), h.highest_equivalent(v), "{v}");
        }
    }

    #[test]
    fn sparse_histograms_answer_exactly_like_hdr() {
        for (seed, n, max) in [
            (1, 1, 100),
            (2, 7, 5_000),
            (3, 200, 2_000_000),
            (4, 5_000, 200),         // many repeats, few buckets: stays sparse
            (5, 5_000, 300_000_000), // many buckets: turns into HDR
        ] {
            let vs = values(seed, n, max);
            let t = sparse_of(&vs);
            assert_same(&t, &hdr_of(&vs));
            let roundtrip = decode(&t.encode()).unwrap();
            assert_same(&t, &roundtrip);
            let back = decode_trend(&t.encode()).unwrap();
            assert_same(&back, &roundtrip);
        }
        let few = sparse_of(&values(4, 5_000, 200));
        assert!(
            matches!(few, TrendHist::Sparse(_)),
            "< 200 distinct values stay sparse"
        );
    }

    #[test]
    fn sparse_turns_into_hdr_past_the_limit_and_keeps_counts() {
        let mut t = TrendHist::new();
        for v in 0..SPARSE_MAX as u64 {
            t.record(v * 3);
        }
        assert!(matches!(t, TrendHist::Sparse(_)));
        t.record(1_000_000);
        assert!(matches!(t, TrendHist::Hdr(_)));
        assert_eq!(t.len(), SPARSE_MAX as u64 + 1);
        assert_eq!(t.value_at_percentile(100.0), highest_equivalent(1_000_000));
        // A count that no longer fits the sparse form's u32 goes to HDR too.
        let mut big = TrendHist::new();
        big.record_n(5, u32::MAX as u64);
        big.record(5);
        assert_eq!(big.len(), u32::MAX as u64 + 1);
        assert!(matches!(big, TrendHist::Hdr(_)));
    }

    #[test]
    fn adding_any_two_forms_equals_recording_everything() {
        let small = values(11, 20, 50_000);
        let large = values(12, 3_000, 50_000_000);
        for (a, b) in [
            (&small, &small),
            (&small, &large),
            (&large, &small),
            (&large, &large),
        ] {
            let mut t = sparse_of(a);
            t.add(&sparse_of(b));
            let all: Vec<u64> = a.iter().chain(b.iter()).copied().collect();
            assert_same(&t, &hdr_of(&all));
        }
        // Two sparse lists whose union has too many buckets.
        let a: Vec<u64> = (0..200).map(|v| v * 2).collect();
        let b: Vec<u64> = (0..200).map(|v| v * 2 + 1).collect();
        let mut t = sparse_of(&a);
        t.add(&sparse_of(&b));
        assert!(matches!(t, TrendHist::Hdr(_)));
        let all: Vec<u64> = a.iter().chain(b.iter()).copied().collect();
        assert_same(&t, &hdr_of(&all));
    }

    #[test]
    fn a_rarely_hit_histogram_costs_bytes_not_kilobytes() {
        let mut t = TrendHist::new();
        assert_eq!(t.heap_bytes(), 0, "an empty trend allocates nothing");
        t.record(1234);
        t.record(98_765);
        assert!(t.heap_bytes() <= 64, "{}", t.heap_bytes());
        let full = sparse_of(&values(5, 5_000, 300_000_000));
        assert!(
            full.heap_bytes() >= 16 * 1024,
            "the HDR form is counted too"
        );
        // Decoding a file's histogram of few values gives the small form back.
        let back = decode_trend(&t.encode()).unwrap();
        assert!(back.heap_bytes() <= 64, "{}", back.heap_bytes());
        assert_same(&back, &hdr_of(&[1234, 98_765]));
    }

    #[test]
    fn reset_forgets_samples() {
        let mut t = sparse_of(&[1, 2, 3]);
        t.reset();
        assert!(t.is_empty());
        assert_eq!(t.heap_bytes(), 0);
        let mut h = sparse_of(&values(5, 5_000, 300_000_000));
        h.reset();
        assert!(h.is_empty());
        assert_eq!(h.len(), 0);
    }
}
