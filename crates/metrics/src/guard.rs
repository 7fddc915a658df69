//! The per-metric cardinality guard (issue #13): a script that tags samples with values it
//! makes up (a URL per request, an id per check) would otherwise create a series per value,
//! and memory would grow with the number of distinct values. One guard is shared by every
//! worker's [`Recorder`](crate::Recorder) of a run: each metric admits at most `limit` tag
//! sets; samples with a tag set beyond that go to the metric's overflow series (tagged
//! [`OVERFLOW_TAG`]`=true` plus the few [`OVERFLOW_KEEPS`] tags, so the summary's
//! `{expected_response:true}` and per-status or per-scenario thresholds still count them),
//! and the guard warns once per metric, naming the tag with the most distinct values.
//!
//! The guard remembers hashes, not tag sets: a metric at its limit costs a few tens of KiB.

use crate::{MetricKey, TagSet};
use std::collections::hash_map::DefaultHasher;
use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::sync::Mutex;

/// Tag sets a metric keeps by default (`maxSeriesPerMetric`, `--max-series`).
pub const DEFAULT_MAX_SERIES: usize = 1000;

/// The tag that marks a metric's overflow series (its only tag, with the value `true`).
pub const OVERFLOW_TAG: &str = "overflow";

/// Tags an overflow series keeps: their values are few (true/false, the script's scenarios,
/// status codes), and [`OVERFLOW_VARIANTS`] caps them anyway.
pub const OVERFLOW_KEEPS: [&str; 3] = ["expected_response", "scenario", "status"];

/// Overflow series a metric may have (beyond, the one without kept tags takes the rest).
pub const OVERFLOW_VARIANTS: usize = 64;

/// Receives the one warning per overflowing metric.
pub type WarnFn = Box<dyn Fn(&str) + Send + Sync>;

pub struct SeriesGuard {
    limit: usize,
    metrics: Mutex<HashMap<String, Seen>>,
    warn: WarnFn,
    /// Tags already named in a warning: later metrics that overflow for the same tag (the
    /// eleven `http_req*` metrics of one request) get a short line.
    blamed: Mutex<HashSet<String>>,
}

/// What one metric has admitted.
#[derive(Default)]
struct Seen {
    sets: HashSet<u64>,
    /// Hashes of the overflow series' tag sets.
    overflow: HashSet<u64>,
    /// Per tag name: hashes of the distinct values among the admitted sets.
    values: HashMap<String, HashSet<u64>>,
    warned: bool,
}

fn hash<T: Hash + ?Sized>(v: &T) -> u64 {
    let mut h = DefaultHasher::new();
    v.hash(&mut h);
    h.finish()
}

impl std::fmt::Debug for SeriesGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SeriesGuard({})", self.limit)
    }
}

impl SeriesGuard {
    /// A guard admitting `limit` tag sets per metric (at least 1); `warn` gets the warnings.
    pub fn new(limit: usize, warn: WarnFn) -> SeriesGuard {
        SeriesGuard {
            limit: limit.max(1),
            metrics: Mutex::new(HashMap::new()),
            warn,
            blamed: Mutex::new(HashSet::new()),
        }
    }

    pub fn limit(&self) -> usize {
        self.limit
    }

    /// The overflow series a key that was not admitted goes to: its metric, `overflow=true`
    /// and the key's [`OVERFLOW_KEEPS`] tags (none once the metric has
    /// [`OVERFLOW_VARIANTS`] overflow series).
    pub fn overflow_key(&self, key: &MetricKey) -> MetricKey {
        let mut tags: TagSet = OVERFLOW_KEEPS
            .iter()
            .filter_map(|k| key.tags.get_key_value(*k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        tags.insert(OVERFLOW_TAG.to_string(), "true".to_string());
        let h = hash(&tags);
        let mut metrics = self.metrics.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(seen) = metrics.get_mut(&key.name) {
            if !seen.overflow.contains(&h) {
                if seen.overflow.len() >= OVERFLOW_VARIANTS {
                    tags.retain(|k, _| k == OVERFLOW_TAG);
                } else {
                    seen.overflow.insert(h);
                }
            }
        }
        MetricKey {
            name: key.name.clone(),
            tags,
        }
    }

    /// Is `key` an overflow series? (Only a marker for views: a script's own `overflow`
    /// tag is still subject to the guard.)
    pub fn is_overflow(key: &MetricKey) -> bool {
        key.tags.get(OVERFLOW_TAG).is_some_and(|v| v == "true")
    }

    /// May `key` have a series of its own? Called once per new key per worker; admitting a
    /// key twice (from two workers) counts it once.
    pub fn admit(&self, key: &MetricKey) -> bool {
        let h = hash(&key.tags);
        let mut metrics = self.metrics.lock().unwrap_or_else(|e| e.into_inner());
        let seen = match metrics.get_mut(&key.name) {
            Some(s) => s,
            None => metrics.entry(key.name.clone()).or_default(),
        };
        if seen.sets.contains(&h) {
            return true;
        }
        if seen.sets.len() < self.limit {
            seen.sets.insert(h);
            for (k, v) in &key.tags {
                match seen.values.get_mut(k) {
                    Some(s) => s.insert(hash(v)),
                    None => seen.values.entry(k.clone()).or_default().insert(hash(v)),
                };
            }
            return true;
        }
        if !seen.warned {
            seen.warned = true;
            let tag = culprit(&seen.values);
            drop(metrics);
            let first = tag.as_ref().is_none_or(|(t, _)| {
                let mut b = self.blamed.lock().unwrap_or_else(|e| e.into_inner());
                b.insert(t.clone())
            });
            let tag = tag.as_ref().map(|(t, n)| (t.as_str(), *n));
            let msg = if first {
                warning(&key.name, self.limit, tag, &key.tags)
            } else {
                format!(
                    "metric '{}' also reached {} tag sets (tag '{}'): folded into {}{{{OVERFLOW_TAG}:true}}",
                    key.name,
                    self.limit,
                    tag.map_or("", |t| t.0),
                    key.name
                )
            };
            (self.warn)(&msg);
        }
        false
    }
}

/// The tag with the most distinct values, and how many: `url` rather than `name` on a tie
/// (an unnamed request's name is its URL).
fn culprit(values: &HashMap<String, HashSet<u64>>) -> Option<(String, usize)> {
    values
        .iter()
        .max_by_key(|(k, v)| (v.len(), k.as_str() == "url", std::cmp::Reverse(k.as_str())))
        .map(|(k, v)| (k.clone(), v.len()))
}

/// The warning for metric `name`: which tag exploded, and how to fix it.
fn warning(name: &str, limit: usize, culprit: Option<(&str, usize)>, example: &TagSet) -> String {
    let mut msg = format!(
        "metric '{name}' reached {limit} tag sets (maxSeriesPerMetric / --max-series): new tag \
         sets are folded into its overflow series {name}{{{OVERFLOW_TAG}:true}}"
    );
    if let Some((tag, n)) = culprit {
        let example = example.get(tag).map(String::as_str).unwrap_or("");
        let example: String = example.chars().take(80).collect();
        msg.push_str(&format!(
            "; tag '{tag}' has {n} distinct values (e.g. '{example}')"
        ));
        msg.push_str(match tag {
            "url" | "name" => {
                ": give such requests one name, e.g. http.get(url, { tags: { name: 'get' } }) \
                 or http.get(http.url`.../${id}`)"
            }
            _ => {
                ": give this tag fewer distinct values (put ids in the URL or the log, not in tags)"
            }
        });
    }
    msg
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    #[test]
    fn admits_up_to_the_limit_then_warns_once_naming_the_tag() {
        let warnings = Arc::new(Mutex::new(Vec::<String>::new()));
        let w = warnings.clone();
        let g = SeriesGuard::new(3, Box::new(move |m| w.lock().unwrap().push(m.into())));
        let key =
            |i: u32| MetricKey::tagged("checks", &[("check", &format!("c{i}")), ("group", "")]);
        assert!((0..3).all(|i| g.admit(&key(i))));
        assert!(g.admit(&key(1)), "an admitted set stays admitted");
        assert!(!g.admit(&key(3)));
        assert!(!g.admit(&key(4)));
        assert!(g.admit(&MetricKey::new("other")), "the limit is per metric");
        // The overflow series keeps the few-valued tags only.
        let k = MetricKey::tagged("checks", &[("check", "c9"), ("status", "200")]);
        let o = g.overflow_key(&k);
        assert!(SeriesGuard::is_overflow(&o));
        assert_eq!(o.tags.len(), 2, "{:?}", o.tags);
        assert_eq!(o.tags.get("status").map(String::as_str), Some("200"));
        // ... and at most OVERFLOW_VARIANTS variants of it.
        for i in 0..2 * OVERFLOW_VARIANTS {
            let k = MetricKey::tagged("checks", &[("status", &i.to_string())]);
            assert!(g.overflow_key(&k).tags.len() <= 2);
        }
        let k = MetricKey::tagged("checks", &[("status", "999999")]);
        assert_eq!(g.overflow_key(&k).tags.len(), 1, "variants are capped");
        let w = warnings.lock().unwrap();
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].contains("'checks'") && w[0].contains("tag 'check'"),
            "{}",
            w[0]
        );
    }
}
