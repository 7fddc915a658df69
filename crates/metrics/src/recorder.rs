//! Per-worker recording. A worker thread owns one [`Recorder`]; the hot path indexes a `Vec`
//! through a [`Handle`] resolved once, so recording a sample is a few arithmetic operations
//! with no lock, atomic, hash or channel send.

use crate::agg::{Agg, MetricKind, Unit};
use crate::guard::SeriesGuard;
use crate::{MetricKey, TagSet};
use std::collections::HashMap;
use std::sync::Arc;

/// Everything that identifies and describes one time series.
#[derive(Clone, Debug, PartialEq)]
pub struct MetricDesc {
    pub key: MetricKey,
    pub kind: MetricKind,
    pub unit: Unit,
}

/// A series' description as a map key that compares, orders and hashes by its [`MetricKey`]:
/// lets maps look series up by key without holding a second copy of the name and tags.
#[derive(Clone, Debug)]
pub(crate) struct DescKey(pub(crate) Arc<MetricDesc>);

impl std::borrow::Borrow<MetricKey> for DescKey {
    fn borrow(&self) -> &MetricKey {
        &self.0.key
    }
}

impl PartialEq for DescKey {
    fn eq(&self, o: &Self) -> bool {
        self.0.key == o.0.key
    }
}

impl Eq for DescKey {}

impl std::hash::Hash for DescKey {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.0.key.hash(state)
    }
}

impl PartialOrd for DescKey {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}

impl Ord for DescKey {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        self.0.key.cmp(&o.0.key)
    }
}

/// Index of a series inside one [`Recorder`]; only valid for the recorder that issued it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Handle(u32);

/// The aggregates one worker recorded during one interval.
#[derive(Debug, Default)]
pub struct Snapshot {
    pub entries: Vec<(Arc<MetricDesc>, Agg)>,
}

/// Receives every sample as it is recorded: only for raw outputs the user asked for
/// (`--out json`). Without one, recording costs a single untaken branch more.
pub trait SampleSink {
    /// `series` is the handle's index; values are in the metric's unit (ms for time trends).
    /// `tags`, when given, are the sample's own tags, which the series' key leaves out or
    /// folds (the `url` of a named request, an overflowed tag set): raw outputs show these.
    fn sample(&mut self, series: u32, desc: &MetricDesc, tags: Option<&Arc<TagSet>>, value: f64);
    /// Called with every snapshot (once per interval) and should write out what is buffered.
    fn flush(&mut self);
}

#[derive(Default)]
pub struct Recorder {
    descs: Vec<Arc<MetricDesc>>,
    /// Shares the descriptions in `descs`: each series' name and tags are held once.
    index: HashMap<DescKey, Handle>,
    current: Vec<Agg>,
    sink: Option<Box<dyn SampleSink>>,
    /// The run's cardinality guard (shared by every worker), if it has one.
    guard: Option<Arc<SeriesGuard>>,
    /// The raw tags of the samples being recorded (see [`Recorder::set_sample_tags`]).
    sample_tags: Option<Arc<TagSet>>,
}

impl Recorder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Resolve (or create) the series for `key`. Resolving a key again returns the same
    /// handle; the first definition's kind and unit win.
    ///
    /// With a guard, a key beyond its metric's limit is not kept: it resolves to the metric's
    /// overflow series, so the recorder's size does not depend on the keys it is asked for.
    pub fn handle(&mut self, key: MetricKey, kind: MetricKind, unit: Unit) -> Handle {
        if let Some(h) = self.index.get(&key) {
            return *h;
        }
        if let Some(g) = &self.guard {
            if !g.admit(&key) {
                let key = g.overflow_key(&key);
                if let Some(h) = self.index.get(&key) {
                    return *h;
                }
                return self.insert(key, kind, unit);
            }
        }
        self.insert(key, kind, unit)
    }

    /// Resolve `key` and record into it with `record`: when the guard folds `key` into the
    /// overflow series, raw outputs still see `key`'s own tags (for callers that resolve per
    /// sample: checks, custom metrics, groups).
    pub fn record_keyed(
        &mut self,
        key: MetricKey,
        kind: MetricKind,
        unit: Unit,
        record: impl FnOnce(&mut Recorder, Handle),
    ) -> Handle {
        let raw = (self.sink.is_some() && self.guard.is_some() && !self.index.contains_key(&key))
            .then(|| Arc::new(key.tags.clone()));
        let h = self.handle(key, kind, unit);
        let folded = raw.is_some() && self.is_overflow(h);
        if folded {
            self.sample_tags = raw;
        }
        record(self, h);
        if folded {
            self.sample_tags = None;
        }
        h
    }

    /// Is `h` a metric's overflow series?
    pub fn is_overflow(&self, h: Handle) -> bool {
        SeriesGuard::is_overflow(&self.descs[h.0 as usize].key)
    }

    /// Fold keys beyond `guard`'s per-metric limit into overflow series from now on.
    pub fn set_guard(&mut self, guard: Arc<SeriesGuard>) {
        self.guard = Some(guard);
    }

    pub fn has_guard(&self) -> bool {
        self.guard.is_some()
    }

    /// The tags raw outputs show for the samples recorded next, until set to `None`: the
    /// caller's full tag set when the series' key leaves some out. Only worth setting when
    /// [`Recorder::has_sink`].
    pub fn set_sample_tags(&mut self, tags: Option<Arc<TagSet>>) {
        self.sample_tags = tags;
    }

    fn insert(&mut self, key: MetricKey, kind: MetricKind, unit: Unit) -> Handle {
        let h = Handle(self.descs.len() as u32);
        self.current.push(Agg::empty(kind));
        let desc = Arc::new(MetricDesc { key, kind, unit });
        self.descs.push(desc.clone());
        self.index.insert(DescKey(desc), h);
        h
    }

    pub fn desc(&self, h: Handle) -> &MetricDesc {
        &self.descs[h.0 as usize]
    }

    /// Also hand every sample to `sink` from now on.
    pub fn set_sink(&mut self, sink: Box<dyn SampleSink>) {
        self.sink = Some(sink);
    }

    pub fn has_sink(&self) -> bool {
        self.sink.is_some()
    }

    #[inline]
    fn emit(&mut self, h: Handle, v: f64) {
        if let Some(s) = self.sink.as_mut() {
            s.sample(h.0, &self.descs[h.0 as usize], self.sample_tags.as_ref(), v);
        }
    }

    /// Record one sample of the series' kind (rates: non-zero is true).
    #[inline]
    pub fn add(&mut self, h: Handle, v: f64) {
        self.current[h.0 as usize].add(v);
        self.emit(h, v);
    }

    #[inline]
    pub fn rate(&mut self, h: Handle, b: bool) {
        self.emit(h, b as u8 as f64);
        if let Agg::Rate { trues, total } = &mut self.current[h.0 as usize] {
            *trues += b as u64;
            *total += 1;
        }
    }

    /// Record a duration in microseconds into a time trend.
    #[inline]
    pub fn trend_us(&mut self, h: Handle, us: u64) {
        self.emit(h, us as f64 / crate::hist::SCALE);
        if let Agg::Trend(t) = &mut self.current[h.0 as usize] {
            t.record_us(us);
        }
    }

    /// Hand over everything recorded since the last snapshot and start a new interval.
    /// Series with no samples are left out, so idle series cost nothing downstream.
    pub fn snapshot(&mut self) -> Snapshot {
        if let Some(s) = self.sink.as_mut() {
            s.flush();
        }
        let mut entries = Vec::new();
        for (i, agg) in self.current.iter_mut().enumerate() {
            if agg.samples() == 0 {
                continue;
            }
            let taken = match agg {
                // Move the histogram out: what stays behind is an empty (allocation-free)
                // sparse histogram, so a series touched once costs nothing more here.
                Agg::Trend(t) => Agg::Trend(Box::new(std::mem::take(&mut **t))),
                other => {
                    let c = other.clone();
                    other.reset();
                    c
                }
            };
            entries.push((self.descs[i].clone(), taken));
        }
        Snapshot { entries }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_are_stable_and_snapshots_reset() {
        let mut r = Recorder::new();
        let a = r.handle(
            MetricKey::new("http_reqs"),
            MetricKind::Counter,
            Unit::Default,
        );
        let b = r.handle(
            MetricKey::new("http_reqs"),
            MetricKind::Counter,
            Unit::Default,
        );
        assert_eq!(a, b);
        let t = r.handle(
            MetricKey::new("http_req_duration"),
            MetricKind::Trend,
            Unit::Time,
        );
        let idle = r.handle(MetricKey::new("idle"), MetricKind::Rate, Unit::Default);
        r.add(a, 1.0);
        r.add(a, 1.0);
        r.trend_us(t, 1500);
        let s = r.snapshot();
        assert_eq!(s.entries.len(), 2, "idle series must be left out");
        assert!(!s.entries.iter().any(|(d, _)| d.key.name == "idle"));
        let (_, c) = s
            .entries
            .iter()
            .find(|(d, _)| d.key.name == "http_reqs")
            .unwrap();
        assert!(matches!(c, Agg::Counter { sum, n: 2 } if *sum == 2.0));
        let s2 = r.snapshot();
        assert!(s2.entries.is_empty(), "second snapshot must start empty");
        r.rate(idle, true);
        assert_eq!(r.snapshot().entries.len(), 1);
    }

    /// (series, the series' tags, the sample's raw tags).
    type Sample = (u32, TagSet, Option<TagSet>);

    /// Keeps what a sink saw.
    struct Seen(std::rc::Rc<std::cell::RefCell<Vec<Sample>>>);

    impl SampleSink for Seen {
        fn sample(&mut self, s: u32, d: &MetricDesc, t: Option<&Arc<TagSet>>, _: f64) {
            let raw = t.map(|t| (**t).clone());
            self.0.borrow_mut().push((s, d.key.tags.clone(), raw));
        }
        fn flush(&mut self) {}
    }

    #[test]
    fn guard_folds_keys_beyond_the_limit_and_sinks_keep_their_tags() {
        let mut r = Recorder::new();
        let seen = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
        r.set_sink(Box::new(Seen(seen.clone())));
        r.set_guard(Arc::new(SeriesGuard::new(2, Box::new(|_| {}))));
        let key = |i: usize| MetricKey::tagged("checks", &[("check", &format!("c{i}"))]);
        for i in 0..1000 {
            r.record_keyed(key(i), MetricKind::Rate, Unit::Default, |r, h| {
                r.rate(h, true)
            });
        }
        // Two admitted series and one overflow series, whatever the number of keys.
        assert_eq!(r.descs.len(), 3);
        assert_eq!(r.index.len(), 3);
        let s = r.snapshot();
        let over = s
            .entries
            .iter()
            .find(|(d, _)| SeriesGuard::is_overflow(&d.key))
            .unwrap();
        assert!(matches!(
            over.1,
            Agg::Rate {
                trues: 998,
                total: 998
            }
        ));
        // The sink saw every sample with its own check name.
        let seen = seen.borrow();
        assert_eq!(seen.len(), 1000);
        let last = &seen[999];
        assert_eq!(
            last.1.get(crate::OVERFLOW_TAG).map(String::as_str),
            Some("true")
        );
        assert_eq!(
            last.2
                .as_ref()
                .and_then(|t| t.get("check"))
                .map(String::as_str),
            Some("c999")
        );
        assert!(seen[0].2.is_none(), "an admitted key needs no raw tags");
    }
}
