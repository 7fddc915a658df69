//! Recording a request as k6 does: the series (handles) of its eleven built-in metrics
//! (`http_reqs`, `http_req_*`, `data_*`), resolved once per tag set per worker thread, k6's
//! error codes, and the per-worker caches (handles and DNS) the VUs of a thread share.

use std::cell::RefCell;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::rc::Rc;
use std::time::Duration;

use volley_metrics::names;
use volley_metrics::{Handle, MetricKey, MetricKind, Recorder, TagSet, Unit};

use crate::message::{ConnectTimings, Timings};
use crate::{ErrorClass, HttpError};

/// Volley's error code for a response body over `maxResponseBodySize` (in k6's content
/// error range 17xx, which k6 uses only for 1701).
pub const BODY_TOO_LARGE_CODE: u32 = 1790;
/// k6's error code for a URL that does not parse.
pub const INVALID_URL_CODE: u32 = 1020;
/// k6's error code for a host name in `blockHostnames`.
pub const BLOCKED_HOSTNAME_CODE: u32 = 1111;

/// k6's error codes for failed requests.
pub fn error_code(e: &HttpError) -> u32 {
    if e.is_body_too_large() {
        return BODY_TOO_LARGE_CODE;
    }
    if e.class == ErrorClass::Other && e.message.contains(") is in a blacklisted range (") {
        return 1110;
    }
    match e.class {
        ErrorClass::Refused => 1212,
        ErrorClass::Timeout => 1050,
        ErrorClass::Reset => 1220,
        ErrorClass::Tls => 1300,
        ErrorClass::Dns => 1100,
        ErrorClass::Protocol | ErrorClass::Other => 1000,
    }
}

/// The series one request records into, resolved once per tag set per worker.
#[derive(Clone, Copy)]
pub struct HttpHandles {
    reqs: Handle,
    duration: Handle,
    blocked: Handle,
    connecting: Handle,
    tls: Handle,
    sending: Handle,
    waiting: Handle,
    receiving: Handle,
    failed: Handle,
    sent: Handle,
    received: Handle,
}

/// What one hop adds to the metrics.
pub struct HopSample {
    pub timings: Timings,
    pub connect: ConnectTimings,
    pub failed: bool,
    pub bytes_sent: u64,
    pub bytes_received: u64,
}

impl HttpHandles {
    fn all(&self) -> [Handle; 11] {
        [
            self.reqs,
            self.duration,
            self.blocked,
            self.connecting,
            self.tls,
            self.sending,
            self.waiting,
            self.receiving,
            self.failed,
            self.sent,
            self.received,
        ]
    }

    /// Whether any of the metrics folded this tag set: each metric has its own guard count,
    /// and workers resolving at once can fold one metric of a request but not another.
    pub fn any_overflow(&self, rec: &Recorder) -> bool {
        self.all().into_iter().any(|h| rec.is_overflow(h))
    }

    pub fn resolve(rec: &mut Recorder, tags: &TagSet) -> HttpHandles {
        let mut h = |name: &str, kind, unit| {
            rec.handle(
                MetricKey {
                    name: name.to_string(),
                    tags: tags.clone(),
                },
                kind,
                unit,
            )
        };
        let t = |h: &mut dyn FnMut(&str, MetricKind, Unit) -> Handle, n: &str| {
            h(n, MetricKind::Trend, Unit::Time)
        };
        HttpHandles {
            reqs: h(names::HTTP_REQS, MetricKind::Counter, Unit::Default),
            duration: t(&mut h, names::HTTP_REQ_DURATION),
            blocked: t(&mut h, names::HTTP_REQ_BLOCKED),
            connecting: t(&mut h, names::HTTP_REQ_CONNECTING),
            tls: t(&mut h, names::HTTP_REQ_TLS_HANDSHAKING),
            sending: t(&mut h, names::HTTP_REQ_SENDING),
            waiting: t(&mut h, names::HTTP_REQ_WAITING),
            receiving: t(&mut h, names::HTTP_REQ_RECEIVING),
            failed: h(names::HTTP_REQ_FAILED, MetricKind::Rate, Unit::Default),
            sent: h(names::DATA_SENT, MetricKind::Counter, Unit::Data),
            received: h(names::DATA_RECEIVED, MetricKind::Counter, Unit::Data),
        }
    }

    /// Add one hop's samples (`blocked` is 0: a VU never waits for a free connection).
    pub fn record(&self, rec: &mut Recorder, s: &HopSample) {
        let us = |d: Duration| d.as_micros() as u64;
        rec.add(self.reqs, 1.0);
        rec.trend_us(self.duration, us(s.timings.duration()));
        rec.trend_us(self.blocked, 0);
        rec.trend_us(self.connecting, us(s.connect.connecting));
        rec.trend_us(self.tls, us(s.connect.tls_handshaking));
        rec.trend_us(self.sending, us(s.timings.sending));
        rec.trend_us(self.waiting, us(s.timings.waiting));
        rec.trend_us(self.receiving, us(s.timings.receiving));
        rec.rate(self.failed, s.failed);
        rec.add(self.sent, s.bytes_sent as f64);
        rec.add(self.received, s.bytes_received as f64);
    }
}

/// Tag sets whose handles a worker remembers (cleared when full: bounded, not an LRU).
const HANDLES_MAX: usize = 4096;
/// Host names whose address a worker remembers (cleared when full).
const DNS_MAX: usize = 1024;

/// Per worker thread: handle and DNS caches (VUs of a worker share its recorder).
#[derive(Default)]
struct WorkerCache {
    /// The recorder these handles belong to.
    owner: usize,
    handles: HashMap<TagSet, HttpHandles>,
    dns: HashMap<(String, u16), SocketAddr>,
}

thread_local! {
    static CACHE: RefCell<WorkerCache> = RefCell::new(WorkerCache::default());
}

fn with_cache<R>(rec: &Rc<RefCell<Recorder>>, f: impl FnOnce(&mut WorkerCache) -> R) -> R {
    CACHE.with(|c| {
        let mut c = c.borrow_mut();
        let owner = Rc::as_ptr(rec) as usize;
        if c.owner != owner {
            *c = WorkerCache {
                owner,
                ..WorkerCache::default()
            };
        }
        f(&mut c)
    })
}

/// The handles of tag set `t` on this worker (resolved and remembered on first use).
pub(super) fn handles_for(rec: &Rc<RefCell<Recorder>>, t: TagSet) -> HttpHandles {
    with_cache(rec, |c| {
        if let Some(h) = c.handles.get(&t) {
            return *h;
        }
        let h = HttpHandles::resolve(&mut rec.borrow_mut(), &t);
        // Overflowed tag sets are not remembered: they would fill the cache for nothing.
        if !h.any_overflow(&rec.borrow()) {
            if c.handles.len() >= HANDLES_MAX {
                c.handles.clear();
            }
            c.handles.insert(t, h);
        }
        h
    })
}

/// The address this worker last connected to for `host:port`.
pub(super) fn cached_addr(
    rec: &Rc<RefCell<Recorder>>,
    host: &str,
    port: u16,
) -> Option<SocketAddr> {
    with_cache(rec, |c| c.dns.get(&(host.to_string(), port)).copied())
}

/// Remember `addr` for `host:port` on this worker.
pub(super) fn cache_addr(rec: &Rc<RefCell<Recorder>>, host: &str, port: u16, addr: SocketAddr) {
    with_cache(rec, |c| {
        if c.dns.len() >= DNS_MAX {
            c.dns.clear();
        }
        c.dns.insert((host.to_string(), port), addr);
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_codes_are_k6s() {
        let e = |c| HttpError::new(c, "x");
        assert_eq!(error_code(&e(ErrorClass::Refused)), 1212);
        assert_eq!(error_code(&e(ErrorClass::Timeout)), 1050);
        assert_eq!(error_code(&e(ErrorClass::Dns)), 1100);
        let b = HttpError::new(
            ErrorClass::Other,
            "IP (1.2.3.4) is in a blacklisted range (1.0.0.0/8)",
        );
        assert_eq!(error_code(&b), 1110);
    }

    #[test]
    fn a_hop_records_every_builtin_metric_once() {
        let rec = Rc::new(RefCell::new(Recorder::default()));
        let mut tags = TagSet::new();
        tags.insert("name".into(), "a".into());
        let h = handles_for(&rec, tags.clone());
        // Found again in the worker's cache: the same series.
        assert_eq!(handles_for(&rec, tags).reqs, h.reqs);
        h.record(
            &mut rec.borrow_mut(),
            &HopSample {
                timings: Timings {
                    sending: Duration::from_millis(1),
                    waiting: Duration::from_millis(2),
                    receiving: Duration::from_millis(3),
                },
                connect: ConnectTimings::default(),
                failed: true,
                bytes_sent: 10,
                bytes_received: 20,
            },
        );
        let snap = rec.borrow_mut().snapshot();
        let mut names: Vec<&str> = snap
            .entries
            .iter()
            .map(|(d, _)| d.key.name.as_str())
            .collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), 11, "{names:?}");
    }
}
