//! Prepared requests: a request as the script spelt it (method, URL, headers, tags), parsed,
//! serialised and tagged once, so a VU that repeats it pays none of that again (see
//! bench/k6.sh). Each also remembers the metric series its samples went to, per (group,
//! status, expected, error code).

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

use volley_metrics::{Recorder, TagSet};

use super::record::{handles_for, HttpHandles};
use crate::h1::Request;
use crate::url::Target;

/// How many distinct requests a VU keeps prepared (scripts usually repeat a handful).
pub const PREPARED_MAX: usize = 32;
/// Series (group, status, error) remembered per prepared request.
const SERIES_MAX: usize = 16;

/// `res.proto` and the `proto` tag: the version the response came with.
pub const HTTP11: &str = "HTTP/1.1";
pub const HTTP10: &str = "HTTP/1.0";
pub const HTTP2: &str = "HTTP/2.0";

/// Where a request's series tags come from beyond the request itself: the VU's tags
/// (scenario, group, `tags` option, VU tags a script set) and the run's tag rules.
pub trait SeriesTags {
    /// May series be remembered per prepared request? Not while the script sets VU tags
    /// (they can change at any time).
    fn cacheable(&self) -> bool;
    /// The tags every sample of the VU carries (already filtered by `systemTags`).
    fn base_tags(&self) -> TagSet;
    /// Drop the system tags `systemTags` leaves out.
    fn filter_system_tags(&self, tags: &mut TagSet);
    /// Does the `url` tag key the series of a request that has a `name`? (Only when a
    /// threshold selects by `url`: k6 groups by `name`.)
    fn url_keys_series(&self) -> bool;
}

/// (group id, status, expected, error code, handles, raw tags): see [`Prepared::series`].
type SeriesEntry = (u32, u16, bool, u32, HttpHandles, Option<Arc<TagSet>>);

pub struct Prepared {
    /// Tells a slot's occupants apart (a hop finds its entry again without searching).
    pub id: u64,
    pub method: String,
    pub url: String,
    pub headers: Vec<String>,
    pub tags: Vec<String>,
    /// `Err`: the URL does not parse (k6 error 1020, no metrics).
    pub target: Result<Rc<Target>, String>,
    pub header_pairs: Vec<(String, String)>,
    /// The serialised request without a body, made on first use.
    pub bodyless: Option<Request>,
    pub origin: Rc<str>,
    /// Shared with every Response of this request (`res.url`, `res.request.url`).
    pub shown_url: Rc<str>,
    name_tag: Option<String>,
    user_tags: Vec<(String, String)>,
    /// (group id, status, expected, error code) → the series its samples go to, and the
    /// samples' full tags for raw outputs (only when the run has one).
    series: Vec<SeriesEntry>,
}

impl Prepared {
    fn new(method: &str, url: &str, headers: &[String], tags: &[String]) -> Prepared {
        let pairs = |v: &[String]| -> Vec<(String, String)> {
            v.chunks(2)
                .filter(|c| c.len() == 2)
                .map(|c| (c[0].clone(), c[1].clone()))
                .collect()
        };
        let mut user_tags = pairs(tags);
        let name_tag = user_tags
            .iter()
            .position(|(k, _)| k == "name")
            .map(|i| user_tags.remove(i).1);
        let target = Target::parse(url).map(Rc::new).map_err(|e| e.0);
        let (origin, shown_url) = match &target {
            Ok(t) => (format!("{}://{}", t.scheme.as_str(), t.authority), t.url()),
            Err(_) => (String::new(), url.to_string()),
        };
        Prepared {
            id: 0,
            method: method.to_string(),
            url: url.to_string(),
            headers: headers.to_vec(),
            tags: tags.to_vec(),
            target,
            header_pairs: pairs(headers),
            bodyless: None,
            origin: origin.into(),
            shown_url: shown_url.into(),
            name_tag,
            user_tags,
            series: Vec::new(),
        }
    }

    /// The handles for this request's samples with `status` / `err` in `group`, and their
    /// full tags when raw outputs (`--out json/csv`) need them.
    #[allow(clippy::too_many_arguments)]
    pub fn handles(
        &mut self,
        rec: &Rc<RefCell<Recorder>>,
        src: &impl SeriesTags,
        group: u32,
        status: u16,
        expected: bool,
        err: u32,
        proto: Option<&'static str>,
    ) -> (HttpHandles, Option<Arc<TagSet>>) {
        // VU tags set by the script can change at any time: no caching then; nor for the
        // rare HTTP/1.0 response, nor HTTP/2 (the cache key has no protocol).
        let cacheable = src.cacheable() && !matches!(proto, Some(HTTP10 | HTTP2));
        if let Some(s) = self
            .series
            .iter()
            .find(|s| cacheable && s.1 == status && s.2 == expected && s.3 == err && s.0 == group)
        {
            return (s.4, s.5.clone());
        }
        // Tags as k6: method, url, name, status, expected_response, proto, group, scenario.
        let mut t = src.base_tags();
        t.insert("method".into(), self.method.clone());
        t.insert("url".into(), self.shown_url.to_string());
        t.insert(
            "name".into(),
            self.name_tag
                .clone()
                .unwrap_or_else(|| self.shown_url.to_string()),
        );
        // No response, no version: k6 leaves the tag out of a failed request's samples.
        if let Some(p) = proto {
            t.insert("proto".into(), p.into());
        }
        for (k, v) in &self.user_tags {
            t.insert(k.clone(), v.clone());
        }
        t.insert("status".into(), status.to_string());
        t.insert("expected_response".into(), expected.to_string());
        if err != 0 {
            t.insert("error_code".into(), err.to_string());
        }
        src.filter_system_tags(&mut t);
        let full = rec.borrow().has_sink().then(|| t.clone());
        // k6 groups by `name`: a named request's URL does not key its series (memory must
        // not grow with distinct URLs), unless a threshold selects by `url`. Raw outputs
        // still get it through `raw`.
        let keyed_by_url = self.name_tag.is_none() || src.url_keys_series();
        if !keyed_by_url {
            t.remove("url");
        }
        let h = handles_for(rec, t);
        // Raw outputs need the full tags only when the series' key differs from them.
        let raw = full
            .filter(|_| !keyed_by_url || h.any_overflow(&rec.borrow()))
            .map(Arc::new);
        if cacheable {
            if self.series.len() >= SERIES_MAX {
                self.series.remove(0);
            } else if self.series.len() == self.series.capacity() {
                // One series per request is the usual case: room for 1, then 2, 4...
                self.series.reserve_exact(self.series.len().max(1));
            }
            self.series
                .push((group, status, expected, err, h, raw.clone()));
        }
        (h, raw)
    }
}

/// A VU's prepared requests: at most [`PREPARED_MAX`], replaced round-robin.
#[derive(Default)]
pub struct PreparedTable {
    /// Every origin this VU has prepared a request for, so equal origins share one `Rc`.
    origins: Vec<Rc<str>>,
    pub(super) slots: Vec<Prepared>,
    /// Round-robin slot to replace when `slots` is full.
    next_slot: usize,
    /// Prepared requests made so far (each one's `id`).
    made: u64,
}

impl PreparedTable {
    /// The index of the prepared form of this request (made now if it is new).
    pub fn prepare(
        &mut self,
        method: &str,
        url: &str,
        headers: &[String],
        tags: &[String],
    ) -> usize {
        if let Some(i) = self.slots.iter().position(|p| {
            p.url == url && p.method == method && p.headers == headers && p.tags == tags
        }) {
            return i;
        }
        let mut p = Prepared::new(method, url, headers, tags);
        // Equal origins share one Rc (idle connections are found by pointer).
        match self.origins.iter().find(|o| ***o == *p.origin) {
            Some(o) => p.origin = o.clone(),
            None if self.origins.len() < 4 * PREPARED_MAX => self.origins.push(p.origin.clone()),
            None => {}
        }
        self.made += 1;
        p.id = self.made;
        if self.slots.len() < PREPARED_MAX {
            // Grow 1, 2, 4...: a Vec's first push makes room for 4 (1.4 KB), and most VUs
            // keep one or two requests for their whole life (docs/vus.md, "Outside QuickJS").
            if self.slots.len() == self.slots.capacity() {
                self.slots.reserve_exact(self.slots.len().max(1));
            }
            self.slots.push(p);
            self.slots.len() - 1
        } else {
            let i = self.next_slot;
            self.next_slot = (i + 1) % PREPARED_MAX;
            self.slots[i] = p;
            i
        }
    }

    pub fn get(&self, i: usize) -> Option<&Prepared> {
        self.slots.get(i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_repeated_request_is_prepared_once_and_origins_are_shared() {
        let mut t = PreparedTable::default();
        let a = t.prepare("GET", "http://h:1/a", &[], &[]);
        assert_eq!(t.prepare("GET", "http://h:1/a", &[], &[]), a);
        let b = t.prepare("GET", "http://h:1/b", &[], &["name".into(), "b".into()]);
        assert_ne!(a, b);
        assert!(Rc::ptr_eq(&t.slots[a].origin, &t.slots[b].origin));
        assert_eq!(t.slots[b].name_tag.as_deref(), Some("b"));
        // Bounded: the oldest slots are replaced.
        for n in 0..2 * PREPARED_MAX {
            t.prepare("GET", &format!("http://h:1/{n}"), &[], &[]);
        }
        assert_eq!(t.slots.len(), PREPARED_MAX);
    }

    /// A VU that repeats one request keeps room for one prepared request, not four
    /// (352 bytes each, for every VU's whole life); more grow by doubling, up to the bound.
    #[test]
    fn one_request_takes_one_slot_and_more_double() {
        let mut t = PreparedTable::default();
        t.prepare("GET", "http://h:1/a", &[], &[]);
        t.prepare("GET", "http://h:1/a", &[], &[]);
        assert_eq!(t.slots.capacity(), 1);
        for n in 0..4 {
            t.prepare("GET", &format!("http://h:1/{n}"), &[], &[]);
        }
        assert_eq!((t.slots.len(), t.slots.capacity()), (5, 8));
        for n in 0..2 * PREPARED_MAX {
            t.prepare("GET", &format!("http://h:2/{n}"), &[], &[]);
        }
        assert_eq!(t.slots.capacity(), PREPARED_MAX);
    }
}
