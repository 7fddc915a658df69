//! Checks an encoded HDR histogram from a file before anything is allocated by what it
//! declares (sizes, bounds, counts): a crafted or damaged result file gets an error, never a
//! huge allocation or an endless inflation. [`crate::hist`] decodes only what passed.

use base64::Engine as _;

/// Largest inflated V2 payload a histogram in a file may have. Volley's bounds need at most
/// 23,552 counts (≤ 9 bytes each, 207 KiB); the limit leaves room for other HDR tools'
/// histograms while keeping a deflate bomb from costing more than this.
pub const MAX_INFLATED: usize = 4 << 20;
/// Largest counts array (entries) a decoded histogram's declared bounds may need: 8 MiB.
/// 3 significant digits over the whole u64 range need ~55,000; only 5 digits over a wide
/// range exceed it.
pub const MAX_COUNTS: u64 = 1 << 20;
/// Largest total count a histogram in a file may hold: 2^53 samples (exact as an f64; 285
/// years at a million requests per second). More is a damaged or crafted file.
pub const MAX_TOTAL: u64 = 1 << 53;

const V2_COOKIE: u32 = 0x1c84_9313;
const V2_COMPRESSED_COOKIE: u32 = 0x1c84_9314;
/// cookie, payload length, normalizing offset, digits, low, high, int-to-double ratio.
const V2_HEADER: usize = 40;

fn be_u32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

fn be_u64(b: &[u8], at: usize) -> u64 {
    u64::from_be_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// Length of the counts array hdrhistogram allocates for these bounds (its own formula).
fn counts_len(low: u64, high: u64, digits: u32) -> u64 {
    let largest = 2 * 10u64.pow(digits);
    let sub_bucket_magnitude = 64 - (largest - 1).leading_zeros();
    let sub_bucket_count = 1u64 << sub_bucket_magnitude;
    let unit_magnitude = 63 - low.leading_zeros();
    if unit_magnitude + sub_bucket_magnitude > 63 {
        return u64::MAX; // hdrhistogram rejects such bounds too
    }
    let mut smallest_untrackable = sub_bucket_count << unit_magnitude;
    let mut buckets = 1u64;
    while smallest_untrackable <= high {
        if smallest_untrackable > u64::MAX / 2 {
            buckets += 1;
            break;
        }
        smallest_untrackable <<= 1;
        buckets += 1;
    }
    (buckets + 1) * (sub_bucket_count / 2)
}

/// The bounds in a V2 header, checked: at most [`MAX_COUNTS`] counts; returns that length.
fn checked_header(h: &[u8]) -> Result<u64, String> {
    if h.len() < V2_HEADER || be_u32(h, 0) != V2_COOKIE {
        return Err("histogram is not a valid HDR V2 encoding (bad header)".into());
    }
    let (digits, low, high) = (be_u32(h, 12), be_u64(h, 16), be_u64(h, 24));
    if digits > 5 || low < 1 || high < low.saturating_mul(2) {
        return Err(format!(
            "histogram has invalid bounds ({low}..{high}, {digits} significant digits)"
        ));
    }
    let len = counts_len(low, high, digits);
    if len > MAX_COUNTS {
        return Err(format!(
            "histogram's bounds ({low}..{high}, {digits} digits) need more than {MAX_COUNTS} counts"
        ));
    }
    Ok(len)
}

/// Base64 → the uncompressed V2 encoding, checked before anything is allocated by its
/// declared sizes: the compressed length must match the bytes present, the bounds must need
/// at most [`MAX_COUNTS`] counts, inflation stops at what those counts can take (and at
/// [`MAX_INFLATED`]), and the counts must add up to at most [`MAX_TOTAL`]. Returns the bytes
/// and the total count.
pub(crate) fn checked_v2(s: &str) -> Result<(Vec<u8>, u64), String> {
    use std::io::Read as _;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(s.trim())
        .map_err(|e| format!("histogram is not valid base64: {e}"))?;
    if bytes.len() < 8 {
        return Err(format!("histogram is truncated ({} bytes)", bytes.len()));
    }
    let (inner, len) = match be_u32(&bytes, 0) {
        V2_COMPRESSED_COOKIE => {
            let declared = be_u32(&bytes, 4) as usize;
            let present = bytes.len() - 8;
            if declared > present {
                return Err(format!(
                    "histogram is truncated: declares {declared} compressed bytes, holds {present}"
                ));
            }
            let damaged =
                |e: std::io::Error| format!("histogram's compressed data is damaged: {e}");
            let mut z = flate2::read::ZlibDecoder::new(&bytes[8..8 + declared]);
            let mut out = vec![0; V2_HEADER];
            z.read_exact(&mut out).map_err(damaged)?;
            let len = checked_header(&out)?;
            // A varint is at most 9 bytes: more payload than that is not a histogram.
            let limit = (len * 9).min(MAX_INFLATED as u64);
            z.take(limit + 1).read_to_end(&mut out).map_err(damaged)?;
            if out.len() - V2_HEADER > limit as usize {
                return Err(format!(
                    "histogram inflates to more than its bounds can hold ({limit} bytes)"
                ));
            }
            (out, len)
        }
        V2_COOKIE => {
            let len = checked_header(&bytes)?;
            (bytes, len)
        }
        c => {
            return Err(format!(
                "histogram is not an HDR V2 encoding (cookie {c:#x})"
            ))
        }
    };
    let payload_len = be_u32(&inner, 4) as usize;
    if payload_len != inner.len() - V2_HEADER {
        return Err(format!(
            "histogram declares {payload_len} payload bytes, holds {}",
            inner.len() - V2_HEADER
        ));
    }
    let total = counts(&inner[V2_HEADER..], len, |_, _| {})?;
    Ok((inner, total))
}

/// Walk a V2 payload as hdrhistogram does (zig-zag LEB128 varints: a count, or a negative
/// run of zero counts), calling `f(index, count)` for each non-zero count; checks that the
/// indexes stay within `len` and the total within [`MAX_TOTAL`], and returns the total.
pub(crate) fn counts(mut p: &[u8], len: u64, mut f: impl FnMut(u64, u64)) -> Result<u64, String> {
    let (mut index, mut total) = (0u64, 0u64);
    while !p.is_empty() {
        let mut v = 0u64;
        let mut i = 0;
        loop {
            let Some(&b) = p.get(i) else {
                return Err("histogram payload ends inside a number".into());
            };
            if i == 8 {
                v |= u64::from(b) << 56;
                i += 1;
                break;
            }
            v |= u64::from(b & 0x7f) << (7 * i);
            i += 1;
            if b & 0x80 == 0 {
                break;
            }
        }
        p = &p[i..];
        let n = ((v >> 1) as i64) ^ -((v & 1) as i64);
        if n < 0 {
            index = index.saturating_add(n.unsigned_abs());
        } else {
            total = total
                .checked_add(n as u64)
                .filter(|t| *t <= MAX_TOTAL)
                .ok_or_else(|| {
                    format!("histogram counts add up to more than 2^53 ({MAX_TOTAL})")
                })?;
            if n > 0 && index < len {
                f(index, n as u64);
            }
            index += 1;
        }
        if index > len {
            return Err("histogram holds more counts than its bounds allow".into());
        }
    }
    Ok(total)
}

/// Whether a checked V2 encoding has Volley's own layout (lowest value 1, 3 significant
/// digits), which [`crate::hist::decode_trend`] reads without building the HDR array.
pub(crate) fn volley_layout(v2: &[u8]) -> bool {
    be_u32(v2, 12) == crate::hist::SIGFIG as u32 && be_u64(v2, 16) == 1
}

/// The V2 payload (after the header) of a checked encoding, and its counts-array length.
pub(crate) fn payload(v2: &[u8]) -> (&[u8], u64) {
    let len = counts_len(be_u64(v2, 16), be_u64(v2, 24), be_u32(v2, 12));
    (&v2[V2_HEADER..], len)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hist::{HIGHEST, SIGFIG};

    /// A V2 header of Volley's bounds (or `digits`/`high`) declaring `payload_len` bytes.
    fn v2_header(payload_len: u32, digits: u32, high: u64) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend(V2_COOKIE.to_be_bytes());
        b.extend(payload_len.to_be_bytes());
        b.extend(0u32.to_be_bytes());
        b.extend(digits.to_be_bytes());
        b.extend(1u64.to_be_bytes());
        b.extend(high.to_be_bytes());
        b.extend(1.0f64.to_be_bytes());
        b
    }

    fn compressed(inner: &[u8]) -> String {
        use std::io::Write as _;
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
        z.write_all(inner).unwrap();
        let z = z.finish().unwrap();
        let mut b = V2_COMPRESSED_COOKIE.to_be_bytes().to_vec();
        b.extend((z.len() as u32).to_be_bytes());
        b.extend(z);
        base64::engine::general_purpose::STANDARD.encode(b)
    }

    #[test]
    fn a_deflate_bomb_is_refused_without_inflating_it() {
        // 64 MiB of zero counts in ~64 KiB: inflated whole (and then its declared payload
        // allocated) before; now inflation stops at what Volley's bounds can hold.
        let mut inner = v2_header(64 << 20, SIGFIG as u32, HIGHEST);
        inner.resize(inner.len() + (64 << 20), 0);
        let bomb = compressed(&inner);
        assert!(bomb.len() < 200_000, "{}", bomb.len());
        let e = crate::hist::decode_trend(&bomb).unwrap_err();
        assert!(e.contains("inflates to more than"), "{e}");
        // Bounds whose counts array alone is huge are refused from the header.
        let wide = compressed(&v2_header(1, 5, u64::MAX / 2));
        assert!(crate::hist::check(&wide)
            .unwrap_err()
            .contains("need more than"));
    }

    #[test]
    fn absurd_counts_and_lying_sizes_are_refused() {
        // Two counts of 2^62: a total no run can have.
        let mut inner = v2_header(18, SIGFIG as u32, HIGHEST);
        for _ in 0..2 {
            inner.extend([0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80]);
        }
        let e = crate::hist::check(&compressed(&inner)).unwrap_err();
        assert!(e.contains("2^53"), "{e}");
        // A payload length past the bytes present (allocated up front before).
        let mut liar = v2_header(u32::MAX, SIGFIG as u32, HIGHEST);
        liar.push(2);
        let e = crate::hist::check(&compressed(&liar)).unwrap_err();
        assert!(e.contains("declares 4294967295 payload bytes"), "{e}");
        // A compressed length past the bytes present, and cut-off base64.
        let mut h = crate::hist::new_hist();
        for v in [5, 7, 900] {
            crate::hist::record(&mut h, v);
        }
        let good = crate::hist::encode(&h);
        assert_eq!(crate::hist::check(&good), Ok(3));
        let mut raw = base64::engine::general_purpose::STANDARD
            .decode(&good)
            .unwrap();
        raw.truncate(raw.len() - 4);
        let cut = base64::engine::general_purpose::STANDARD.encode(raw);
        assert!(crate::hist::check(&cut).unwrap_err().contains("truncated"));
        assert!(crate::hist::check(&good[..good.len() - 3]).is_err());
    }

    #[test]
    fn decoding_allocates_for_the_counts_present_not_the_declared_bounds() {
        // Volley's layout over half the u64 range (a 440 KiB counts array in hdrhistogram)
        // holding two samples: 5 (slot 5) and 3000 (slot 2524: bucket 1, sub-bucket 1500),
        // each after a run of zero counts.
        let mut inner = v2_header(0, SIGFIG as u32, u64::MAX / 2);
        let zz = |n: i64| ((n << 1) ^ (n >> 63)) as u64;
        for n in [-5i64, 1, -(2048 + 476 - 6), 1] {
            let mut v = zz(n);
            while v >= 0x80 {
                inner.push(v as u8 | 0x80);
                v >>= 7;
            }
            inner.push(v as u8);
        }
        let plen = (inner.len() - V2_HEADER) as u32;
        inner[4..8].copy_from_slice(&plen.to_be_bytes());
        let t = crate::hist::decode_trend(&compressed(&inner)).unwrap();
        assert_eq!(t.len(), 2);
        assert!(t.heap_bytes() <= 64, "{}", t.heap_bytes());
        assert_eq!(t.value_at_percentile(0.0), 5);
        assert_eq!(
            t.value_at_percentile(100.0),
            crate::hist::highest_equivalent(3000)
        );
        // The same answers as hdrhistogram's own decoder.
        let h = crate::hist::decode(&compressed(&inner)).unwrap();
        assert_eq!(h.value_at_percentile(100.0), t.value_at_percentile(100.0));
        assert_eq!(h.value_at_percentile(0.0), t.value_at_percentile(0.0));
    }
}
