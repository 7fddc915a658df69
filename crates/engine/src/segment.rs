//! Execution segments: how one instance of a distributed test knows its share of the work.
//!
//! A test split over instances gives each one a *segment* of the unit interval (`1/4:2/4`)
//! inside a *sequence* that covers it (`0,1/4,2/4,3/4,1`), with k6's syntax and arithmetic
//! (`--execution-segment`, `--execution-segment-sequence`). Each instance derives, alone and
//! reproducibly, which units of anything countable are its own — VUs, iterations, arrivals —
//! so the pieces add up exactly to the whole with nothing scheduled centrally.
//!
//! The units are dealt out in *stripes*: the sequence's segments, largest first, take turns
//! over the first `lcd` units (the least common denominator of the segments' lengths), each
//! taking the next unit once it is "due" (it has taken fewer than its share of the units so
//! far); the pattern then repeats every `lcd` units. A segment of length 1/4 thus takes every
//! fourth unit rather than a contiguous quarter, so the instances' VUs ramp up together and
//! their arrivals interleave. This is k6's striping (lib/execution_segment.go), so a Volley
//! instance and a k6 instance with the same segment pick the same units.
//!
//! [`Tuple`] is a segment within its sequence: [`Tuple::scale`] (how many of `n` units are
//! this segment's), [`Tuple::global`] (the test-wide index of this segment's k-th unit, for
//! `exec.vu.idInTest` and `exec.scenario.iterationInTest`) and [`Tuple::owns`].

use crate::executor::Executor;
use std::fmt;
use std::sync::Arc;

/// Denominators beyond this are refused: the stripe pattern has `lcd` entries.
pub const MAX_LCD: u64 = 1_000_000;

/// A rational number in lowest terms, 0 ≤ n/d ≤ 1 for segments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ratio {
    pub num: u64,
    pub den: u64,
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

impl Ratio {
    pub const ZERO: Ratio = Ratio { num: 0, den: 1 };
    pub const ONE: Ratio = Ratio { num: 1, den: 1 };

    fn new(num: u64, den: u64) -> Result<Ratio, String> {
        if den == 0 {
            return Err("a fraction's denominator cannot be 0".into());
        }
        let g = gcd(num, den).max(1);
        Ok(Ratio {
            num: num / g,
            den: den / g,
        })
    }

    /// k6's forms: a percentage (`25%`), a fraction (`1/4`) or a decimal (`0.25`).
    pub fn parse(s: &str) -> Result<Ratio, String> {
        let t = s.trim();
        let bad = || {
            format!("'{s}' is not a valid percentage, decimal, fraction or interval value (e.g. 1/4, 0.25, 25%)")
        };
        let int = |x: &str| x.trim().parse::<u64>().map_err(|_| bad());
        if let Some(p) = t.strip_suffix('%') {
            return Ratio::new(int(p)?, 100);
        }
        if let Some((n, d)) = t.split_once('/') {
            return Ratio::new(int(n)?, int(d)?).map_err(|e| format!("'{s}': {e}"));
        }
        let (whole, frac) = t.split_once('.').unwrap_or((t, ""));
        if frac.len() > 9 || !frac.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad());
        }
        let den = 10u64.pow(frac.len() as u32);
        let w = if whole.is_empty() { 0 } else { int(whole)? };
        let f = if frac.is_empty() { 0 } else { int(frac)? };
        let num = w
            .checked_mul(den)
            .and_then(|x| x.checked_add(f))
            .ok_or_else(bad)?;
        Ratio::new(num, den)
    }

    fn lt(self, o: Ratio) -> bool {
        (self.num as u128) * (o.den as u128) < (o.num as u128) * (self.den as u128)
    }

    /// `o - self` for `self ≤ o`.
    fn until(self, o: Ratio) -> Ratio {
        let den = self.den as u128 * o.den as u128 / gcd(self.den, o.den) as u128;
        let num =
            o.num as u128 * (den / o.den as u128) - self.num as u128 * (den / self.den as u128);
        let g = gcd_u128(num, den).max(1);
        Ratio {
            num: (num / g) as u64,
            den: (den / g) as u64,
        }
    }
}

fn gcd_u128(mut a: u128, mut b: u128) -> u128 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

impl fmt::Display for Ratio {
    /// As Go's `RatString`: `1/4`, or `1` for whole numbers.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.den == 1 {
            write!(f, "{}", self.num)
        } else {
            write!(f, "{}/{}", self.num, self.den)
        }
    }
}

/// `(from, to]`, 0 ≤ from < to ≤ 1.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    pub from: Ratio,
    pub to: Ratio,
}

impl Segment {
    pub const WHOLE: Segment = Segment {
        from: Ratio::ZERO,
        to: Ratio::ONE,
    };

    pub fn new(from: Ratio, to: Ratio) -> Result<Segment, String> {
        if !from.lt(to) {
            return Err(format!(
                "segment start ({from}) should be less than its end ({to})"
            ));
        }
        if Ratio::ONE.lt(to) {
            return Err(format!(
                "segment end value shouldn't be more than 1 but was {to}"
            ));
        }
        Ok(Segment { from, to })
    }

    /// `1/4:2/4`, `0.25:0.5`, `25%:50%`; one value `x` means `0:x` (k6).
    pub fn parse(s: &str) -> Result<Segment, String> {
        let s = s.trim();
        if s.is_empty() {
            return Ok(Segment::WHOLE);
        }
        let (from, to) = match s.split_once(':') {
            Some((a, b)) => (Ratio::parse(a)?, Ratio::parse(b)?),
            None => (Ratio::ZERO, Ratio::parse(s)?),
        };
        Segment::new(from, to)
    }

    fn length(&self) -> Ratio {
        self.from.until(self.to)
    }

    pub fn is_whole(&self) -> bool {
        *self == Segment::WHOLE
    }
}

impl fmt::Display for Segment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.from, self.to)
    }
}

/// Segments end to end: `0,1/4,2/4,3/4,1`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sequence(pub Vec<Segment>);

impl Sequence {
    /// Comma-separated points, at least two, each greater than the one before.
    pub fn parse(s: &str) -> Result<Sequence, String> {
        let points = s
            .split(',')
            .map(Ratio::parse)
            .collect::<Result<Vec<_>, _>>()?;
        if points.len() < 2 {
            return Err(format!(
                "at least 2 points are needed for an execution segment sequence, {} given",
                points.len()
            ));
        }
        let segs = points
            .windows(2)
            .map(|w| Segment::new(w[0], w[1]))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Sequence(segs))
    }
}

impl fmt::Display for Sequence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, s) in self.0.iter().enumerate() {
            if i == 0 {
                write!(f, "{}", s.from)?;
            }
            write!(f, ",{}", s.to)?;
        }
        Ok(())
    }
}

/// A segment within its (filled) sequence, with its stripe: which of every `lcd` units are
/// its own.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tuple {
    pub segment: Segment,
    /// Covers 0..1 (gaps before the first and after the last point filled, as k6 does).
    pub sequence: Sequence,
    /// The segment's position in `sequence`.
    pub index: usize,
    lcd: u64,
    /// The segment's units among 0..lcd, ascending.
    stripe: Vec<u64>,
}

impl Tuple {
    /// The whole test (no segment).
    pub fn whole() -> Tuple {
        Tuple::new(Segment::WHOLE, None).expect("0:1 is always valid")
    }

    /// `segment` within `sequence` (None: the sequence is the segment and what is around it).
    pub fn new(segment: Segment, sequence: Option<&Sequence>) -> Result<Tuple, String> {
        let mut segs = match sequence {
            Some(s) if !s.0.is_empty() => s.0.clone(),
            _ => vec![segment],
        };
        if segs[0].from != Ratio::ZERO {
            segs.insert(0, Segment::new(Ratio::ZERO, segs[0].from)?);
        }
        let last = segs[segs.len() - 1].to;
        if last != Ratio::ONE {
            segs.push(Segment::new(last, Ratio::ONE)?);
        }
        let sequence = Sequence(segs);
        let index = sequence
            .0
            .iter()
            .position(|s| *s == segment)
            .ok_or_else(|| {
                format!(
                    "the execution segment {segment} is not one of the segment sequence \
                     {sequence}: give a segment between two consecutive points of the sequence"
                )
            })?;
        let mut lcd = 1u64;
        for s in &sequence.0 {
            let d = s.length().den;
            lcd = lcd / gcd(lcd, d) * d;
            if lcd > MAX_LCD {
                return Err(format!(
                    "the execution segment sequence {sequence} needs stripes of more than \
                     {MAX_LCD} units (the least common denominator of its lengths): use simpler \
                     fractions such as 1/4 or 1/10"
                ));
            }
        }
        let stripe = stripes(&sequence, lcd).swap_remove(index);
        Ok(Tuple {
            segment,
            sequence,
            index,
            lcd,
            stripe,
        })
    }

    /// From k6's option strings (`executionSegment`, `executionSegmentSequence`).
    pub fn parse(segment: Option<&str>, sequence: Option<&str>) -> Result<Tuple, String> {
        let seg = match segment {
            Some(s) => Segment::parse(s).map_err(|e| format!("execution segment '{s}': {e}"))?,
            None => Segment::WHOLE,
        };
        let seq = match sequence.filter(|s| !s.trim().is_empty()) {
            Some(s) => Some(
                Sequence::parse(s).map_err(|e| format!("execution segment sequence '{s}': {e}"))?,
            ),
            None => None,
        };
        Tuple::new(seg, seq.as_ref())
    }

    pub fn is_whole(&self) -> bool {
        self.segment.is_whole()
    }

    /// How many of the units `0..n` are this segment's. Over a sequence's segments these add
    /// up to `n` exactly.
    pub fn scale(&self, n: u64) -> u64 {
        let per = self.stripe.len() as u64;
        let rest = n % self.lcd;
        (n / self.lcd) * per + self.stripe.iter().take_while(|&&u| u < rest).count() as u64
    }

    /// The test-wide index (0-based) of this segment's `k`-th unit (0-based).
    pub fn global(&self, k: u64) -> u64 {
        let per = self.stripe.len() as u64;
        (k / per).saturating_mul(self.lcd) + self.stripe[(k % per) as usize]
    }

    /// Is test-wide unit `g` this segment's?
    pub fn owns(&self, g: u64) -> bool {
        self.stripe.binary_search(&(g % self.lcd)).is_ok()
    }
}

/// k6's striping: for each unit in 0..lcd, the first segment (largest first, ties in sequence
/// order) that has taken no more than its share so far (`taken × lcd / share ≤ unit`) takes it.
fn stripes(seq: &Sequence, lcd: u64) -> Vec<Vec<u64>> {
    let shares: Vec<u64> = seq
        .0
        .iter()
        .map(|s| {
            let l = s.length();
            l.num * (lcd / l.den)
        })
        .collect();
    let mut order: Vec<usize> = (0..shares.len()).collect();
    order.sort_by(|&a, &b| shares[b].cmp(&shares[a]));
    let mut taken = vec![0u64; shares.len()];
    let mut out = vec![Vec::new(); shares.len()];
    for unit in 0..lcd {
        for &i in &order {
            // Due when taken × lcd / share ≤ unit, in integers.
            if (taken[i] as u128) * (lcd as u128) <= (unit as u128) * (shares[i] as u128) {
                taken[i] += 1;
                out[i].push(unit);
                break;
            }
        }
    }
    out
}

impl fmt::Display for Tuple {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} of {}", self.segment, self.sequence)
    }
}

/// A plan's segment: the tuple and the scenarios' executors as the whole test has them (the
/// plan's own are this segment's share). Ramping VUs follow the whole test's ramp by their
/// test-wide ids; arrival-rate executors take their stripe of the whole test's arrivals.
#[derive(Clone, Debug)]
pub struct Segmented {
    pub tuple: Tuple,
    pub whole: Vec<Executor>,
}

/// This segment's share of an executor: VUs and iterations scaled by the stripe. Rates stay
/// the whole test's (the scheduler takes this segment's stripe of the arrivals).
pub fn scale_executor(e: &Executor, t: &Tuple) -> Executor {
    let mut e = e.clone();
    match &mut e {
        Executor::ConstantVus(c) => c.vus = t.scale(c.vus),
        Executor::RampingVus(r) => {
            r.start_vus = t.scale(r.start_vus);
            for s in &mut r.stages {
                s.target = t.scale(s.target);
            }
        }
        Executor::SharedIterations(s) => {
            s.vus = t.scale(s.vus);
            s.iterations = t.scale(s.iterations);
        }
        Executor::PerVuIterations(p) => p.vus = t.scale(p.vus),
        Executor::ConstantArrivalRate(c) => {
            c.pre_allocated_vus = t.scale(c.pre_allocated_vus);
            c.max_vus = t.scale(c.max_vus);
        }
        Executor::RampingArrivalRate(r) => {
            r.pre_allocated_vus = t.scale(r.pre_allocated_vus);
            r.max_vus = t.scale(r.max_vus);
        }
    }
    e
}

impl crate::vus::VuPlan {
    /// This plan cut to segment `t` (the whole segment leaves it as it is).
    pub fn segmented(mut self, t: Tuple) -> crate::vus::VuPlan {
        if t.is_whole() {
            return self;
        }
        let whole = self.scenarios.iter().map(|s| s.executor.clone()).collect();
        for s in &mut self.scenarios {
            let all = s.executor.max_vus();
            s.executor = scale_executor(&s.executor, &t);
            if all > 0 && s.executor.max_vus() == 0 {
                // As in k6 the scenario then does nothing here; say so rather than lose work.
                crate::log::warn(&format!(
                    "scenario {}: none of its {all} VUs fall in execution segment {}, so this \
                     instance runs none of its work; give it at least as many VUs as there \
                     are segments",
                    s.name, t.segment
                ));
            }
        }
        self.segment = Some(Arc::new(Segmented { tuple: t, whole }));
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(seq: &str) -> Vec<Tuple> {
        let s = Sequence::parse(seq).unwrap();
        s.0.iter()
            .map(|g| Tuple::new(*g, Some(&s)).unwrap())
            .collect()
    }

    #[test]
    fn parses_k6_forms() {
        let q = Segment::parse("1/4:2/4").unwrap();
        assert_eq!(q.to_string(), "1/4:1/2");
        assert_eq!(Segment::parse("25%:0.5").unwrap(), q);
        assert_eq!(Segment::parse("0.5").unwrap().to_string(), "0:1/2");
        assert_eq!(Segment::parse("").unwrap(), Segment::WHOLE);
        assert!(Segment::parse("1/2:1/4").unwrap_err().contains("less than"));
        assert!(Segment::parse("0:5/4").unwrap_err().contains("more than 1"));
        assert!(Segment::parse("a:b").unwrap_err().contains("not a valid"));
        assert!(Segment::parse("1/0").is_err());
        assert!(Sequence::parse("1/2").unwrap_err().contains("at least 2"));
        assert_eq!(
            Sequence::parse("0,1/4,2/4,3/4,1").unwrap().to_string(),
            "0,1/4,1/2,3/4,1"
        );
        let e = Tuple::parse(Some("0:1/3"), Some("0,1/4,1")).unwrap_err();
        assert!(e.contains("not one of"), "{e}");
        assert!(Tuple::parse(Some("0:1/1000003"), None)
            .unwrap_err()
            .contains("least common denominator"));
    }

    /// k6's documented example: thirds of 10 VUs are 4, 3, 3.
    #[test]
    fn thirds_of_ten_are_four_three_three() {
        let t = all("0,1/3,2/3,1");
        let got: Vec<u64> = t.iter().map(|t| t.scale(10)).collect();
        assert_eq!(got, [4, 3, 3]);
        // Striped, not contiguous: VU 1, 4, 7, 10 are the first third's.
        let first: Vec<u64> = (0..4).map(|k| t[0].global(k) + 1).collect();
        assert_eq!(first, [1, 4, 7, 10]);
    }

    /// Without a sequence the segment's neighbours fill it: 1/4:2/4 alone is in
    /// 0,1/4,1/2,1 (k6's fillSequence), where the 1/2 segment comes first in the stripe.
    #[test]
    fn a_segment_alone_is_filled_to_a_sequence() {
        let t = Tuple::parse(Some("1/4:2/4"), None).unwrap();
        assert_eq!(t.sequence.to_string(), "0,1/4,1/2,1");
        assert_eq!(t.index, 1);
        // 1/2:1 takes units 0 and 2 of each 4, 0:1/4 unit 1, 1/4:1/2 unit 3.
        assert_eq!(t.stripe, [3]);
        assert_eq!(t.scale(3), 0);
        assert_eq!(t.scale(4), 1);
    }

    #[test]
    fn the_pieces_add_up_to_the_whole() {
        for seq in [
            "0,1",
            "0,1/2,1",
            "0,1/3,2/3,1",
            "0,1/4,2/4,3/4,1",
            "0,1/10,3/10,6/10,1",
            "0,0.125,0.3,0.7,1",
            "0,1/7,2/5,1/2,9/11,1",
            "0,50%,75%,1",
        ] {
            let t = all(seq);
            for n in (0..200).chain([997, 10_000, 123_457]) {
                let sum: u64 = t.iter().map(|t| t.scale(n)).sum();
                assert_eq!(sum, n, "{seq} n={n}");
            }
            // Every test-wide unit belongs to exactly one segment, and global() enumerates
            // each segment's units in order.
            for g in 0..500 {
                assert_eq!(t.iter().filter(|t| t.owns(g)).count(), 1, "{seq} unit {g}");
            }
            for tu in &t {
                let mut prev = None;
                for k in 0..tu.scale(500) {
                    let g = tu.global(k);
                    assert!(g < 500 && tu.owns(g), "{seq} {tu} k={k} g={g}");
                    assert!(prev.is_none_or(|p| g > p));
                    prev = Some(g);
                    assert_eq!(tu.scale(g + 1), k + 1, "{seq} {tu} k={k}");
                }
            }
        }
    }

    /// Equal segments deal the units round-robin: at every prefix each has ⌊n/N⌋ or ⌈n/N⌉,
    /// so ramps and arrival rates split evenly at every moment, not only at the end.
    #[test]
    fn equal_segments_split_every_prefix_evenly() {
        for parts in 2..=8u64 {
            let seq: Vec<String> = (0..=parts).map(|i| format!("{i}/{parts}")).collect();
            for tu in all(&seq.join(",")) {
                for n in 0..300u64 {
                    let got = tu.scale(n);
                    assert!(
                        got == n / parts || got == n.div_ceil(parts),
                        "{tu} n={n}: {got}"
                    );
                }
            }
        }
    }
}
