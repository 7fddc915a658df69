//! The VU HTTP client of script mode, JavaScript-free: a [`VuClient`] per VU takes a
//! protocol-neutral [`RequestSpec`], sends it hop by hop (redirects as k6 follows them) on
//! the VU's own keep-alive connections, and records each hop with k6's metric names and
//! system tags. The JS bindings (volley-js's `k6/http`) turn script values into a
//! `RequestSpec` and a finished hop ([`Done`]) into a k6 Response object.
//!
//! A hop is three calls, so the bindings can run many at once (`http.batch`,
//! `http.asyncRequest`) and put their own steps between them (cookies, `responseCallback`,
//! debug logging): [`VuClient::start`] (prepare, refuse or start the exchange future, which
//! the VU awaits), [`VuClient::finish`] (keep the connection and the address, find the
//! prepared request again), [`VuClient::record`] (the metrics); then
//! [`RequestSpec::follow`] says whether a redirect makes another hop.
//!
//! # Layout
//!
//! - [`settings`]: [`ClientSettings`], the run-wide options (a plain value, given at VU
//!   creation) and the host rules (`hosts`, `blockHostnames`, `blacklistIPs`).
//! - [`ipnet`]: CIDR ranges for `blacklistIPs`.
//! - [`prepared`]: requests parsed, serialised and tagged once per VU, with their series.
//! - [`pool`]: a VU's idle keep-alive connections by origin.
//! - [`dialing`]: a new https connection's requests wait for it when it may be HTTP/2.
//! - [`exchange`]: one request on a reused or new connection.
//! - [`redirect`]: `Location` resolution and k6's method rules.
//! - [`debug`]: `httpDebug`'s text of a request and a response.
//! - [`record`]: the metric handles of a request, k6's error codes, the per-worker caches.

pub mod debug;
pub mod dialing;
pub mod exchange;
pub mod ipnet;
pub mod pool;
pub mod prepared;
pub mod record;
pub mod redirect;
pub mod settings;

use std::cell::RefCell;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use volley_metrics::{Recorder, TagSet};

pub use exchange::Exchange;
pub use ipnet::IpNet;
pub use prepared::{Prepared, SeriesTags, HTTP10, HTTP11, HTTP2};
pub use record::{error_code, HopSample, HttpHandles, BODY_TOO_LARGE_CODE};
pub use settings::{ClientSettings, DEFAULT_MAX_RESPONSE_BODY, DEFAULT_REDIRECTS, DEFAULT_TIMEOUT};

use crate::h1::Request;
use crate::message::{BodyMode, ConnectTimings, Response};
use crate::url::{Scheme, Target};
use crate::HttpError;

/// One request as the script asked for it (a batch is a list of these); `method`, `url`
/// and `body` change as redirects are followed.
#[derive(Clone, Debug)]
pub struct RequestSpec {
    pub method: String,
    pub url: String,
    pub body: Option<Bytes>,
    /// Flattened `[name, value, ...]`: with `tags`, the key of the prepared request.
    pub headers: Vec<String>,
    /// `params.tags`, flattened `[key, value, ...]`.
    pub tags: Vec<String>,
    pub mode: BodyMode,
    pub timeout: Duration,
    pub max_redirects: u32,
    /// Redirects followed so far.
    pub hops: u32,
}

impl RequestSpec {
    /// After a finished hop: if it redirects (and redirects are left), point this spec at
    /// the next hop and say so.
    pub fn follow(&mut self, done: &Done) -> bool {
        let Ok(r) = &done.result else { return false };
        if self.hops >= self.max_redirects {
            return false;
        }
        let Some(next) = redirect::next(&done.target, &self.method, r) else {
            return false;
        };
        self.url = next.url;
        if next.to_get {
            self.method = "GET".into();
            self.body = None;
        }
        self.hops += 1;
        true
    }
}

/// The exchange future of a hop (awaited on the VU's thread: connections are not `Send`).
pub type ExchangeFuture = Pin<Box<dyn Future<Output = Exchange>>>;

/// A hop whose exchange is under way: what [`VuClient::finish`] needs once it is done.
pub struct Hop {
    /// The prepared request's slot and id (see [`Prepared::id`]).
    slot: (usize, u64),
    target: Rc<Target>,
    origin: Rc<str>,
    cached: Option<SocketAddr>,
    had_conn: bool,
}

/// What [`VuClient::start`] did.
pub enum Start {
    /// Nothing was sent: the URL does not parse (k6 error 1020) or its host is in
    /// `blockHostnames` (1111). No metrics.
    Refused {
        error: String,
        code: u32,
    },
    Go(Hop, ExchangeFuture),
}

/// Why a hop could not start (the script gets an exception, not a Response).
#[derive(Debug)]
pub enum StartError {
    /// The request cannot be written (bad method, header name or value).
    Request(String),
    /// The TLS configuration cannot be built.
    Tls(String),
}

/// A finished hop.
pub struct Done {
    pub result: Result<Response, HttpError>,
    pub connect: ConnectTimings,
    /// The address the request went to (`res.remote_ip`, `remote_port`).
    pub addr: Option<SocketAddr>,
    pub target: Rc<Target>,
    /// The prepared request's slot ([`VuClient::prepared`]).
    pub slot: usize,
    /// It went over HTTP/2.
    pub h2: bool,
}

impl Done {
    pub fn status(&self) -> u16 {
        self.result.as_ref().map_or(0, |r| r.status)
    }

    /// The response's own version (k6's `res.proto` and `proto` tag; none on error).
    pub fn version(&self) -> Option<&'static str> {
        match &self.result {
            Ok(_) if self.h2 => Some(HTTP2),
            Ok(r) if r.version_minor == 0 => Some(HTTP10),
            Ok(_) => Some(HTTP11),
            Err(_) => None,
        }
    }

    /// k6's error code (0: a response came).
    pub fn error_code(&self) -> u32 {
        self.result.as_ref().err().map_or(0, error_code)
    }
}

/// One VU's HTTP client: its idle connections and prepared requests, and the run's settings.
pub struct VuClient {
    settings: Arc<ClientSettings>,
    pool: pool::Pool,
    prepared: prepared::PreparedTable,
}

impl VuClient {
    pub fn new(settings: Arc<ClientSettings>) -> VuClient {
        VuClient {
            settings,
            pool: Default::default(),
            prepared: Default::default(),
        }
    }

    pub fn settings(&self) -> &Arc<ClientSettings> {
        &self.settings
    }

    /// The prepared request in `slot` (`res.url` is its `shown_url`).
    pub fn prepared(&self, slot: usize) -> Option<&Prepared> {
        self.prepared.get(slot)
    }

    /// A new iteration starts: with `noVUConnectionReuse`, the VU's connections are closed.
    pub fn new_iteration(&mut self) {
        if self.settings.no_vu_connection_reuse {
            self.pool.clear();
        }
    }

    /// The VU will be idle for a while (a long `sleep`): free its idle connections' buffers
    /// (they stay open; the next request allocates them again). The bytes freed.
    pub fn release_idle_buffers(&mut self) -> usize {
        self.pool.release_buffers()
    }

    /// Build the next hop's request and start its exchange (nothing waits here). `cookie`
    /// gives the `Cookie` header for the target (a request with one is never cached);
    /// `on_request` sees the request as it will be written (`httpDebug`).
    pub fn start(
        &mut self,
        spec: &RequestSpec,
        rec: &Rc<RefCell<Recorder>>,
        cookie: impl FnOnce(&Target) -> Option<String>,
        on_request: impl FnOnce(&Request),
    ) -> Result<Start, StartError> {
        let settings = &self.settings;
        let (method, url, body) = (&spec.method, &spec.url, &spec.body);
        let i = self
            .prepared
            .prepare(method, url, &spec.headers, &spec.tags);
        let p = &mut self.prepared.slots[i];
        let target = match &p.target {
            // k6's blockHostnames: refused before any connection.
            Ok(t) => match settings.blocked_hostname(&t.host) {
                Some(m) => {
                    let error = format!("hostname ({}) is in a blocked pattern ({m})", t.host);
                    let code = record::BLOCKED_HOSTNAME_CODE;
                    return Ok(Start::Refused { error, code });
                }
                None => t.clone(),
            },
            Err(e) => {
                let (error, code) = (e.clone(), record::INVALID_URL_CODE);
                return Ok(Start::Refused { error, code });
            }
        };
        if let Some(ua) = &settings.user_agent {
            if !p
                .header_pairs
                .iter()
                .any(|(k, _)| k.eq_ignore_ascii_case("user-agent"))
            {
                p.header_pairs.push(("User-Agent".into(), ua.clone()));
            }
        }
        let cookie = cookie(&target);
        let req = match (body, &p.bodyless, &cookie) {
            (None, Some(r), None) => r.clone(),
            _ => {
                let mut pairs;
                let headers = match &cookie {
                    Some(c) => {
                        pairs = p.header_pairs.clone();
                        pairs.retain(|(k, _)| !k.eq_ignore_ascii_case("cookie"));
                        pairs.push(("Cookie".into(), c.clone()));
                        &pairs
                    }
                    None => &p.header_pairs,
                };
                let b = body.clone().map_or(crate::Body::Empty, crate::Body::Bytes);
                let r =
                    Request::new(method, &target, headers, b, true).map_err(StartError::Request)?;
                if body.is_none() && cookie.is_none() {
                    p.bodyless = Some(r.clone());
                }
                r
            }
        };
        on_request(&req);
        // https: what the request needs should the origin speak HTTP/2.
        let h2 = (target.scheme == Scheme::Https).then(|| {
            let mut headers = p.header_pairs.clone();
            if let Some(c) = &cookie {
                headers.retain(|(k, _)| !k.eq_ignore_ascii_case("cookie"));
                headers.push(("Cookie".into(), c.clone()));
            }
            exchange::H2Parts {
                method: method.clone(),
                headers,
                body: body.clone().map_or(crate::Body::Empty, crate::Body::Bytes),
                announce: None,
                wait: None,
            }
        });
        let origin = p.origin.clone();
        let slot = (i, p.id);
        if let Some(parts) = h2 {
            if let Some((c, cached)) = self.pool.h2(&origin) {
                let (t, timeout, mode) = (target.clone(), spec.timeout, spec.mode);
                let fut =
                    async move { exchange::exchange_h2(c, &t, parts, timeout, mode, cached).await };
                let hop = Hop {
                    slot,
                    target,
                    origin,
                    cached,
                    had_conn: true,
                };
                return Ok(Start::Go(hop, Box::pin(fut)));
            }
            let mut parts = parts;
            if !self.settings.no_connection_reuse {
                // A new connection whose protocol is not known yet: wait for the one being
                // dialled (it may be h2), or be that one (dialing.rs).
                if let Some(d) = self.pool.dialing(&origin) {
                    parts.wait = Some(d);
                } else if !self.pool.has_idle(&origin) {
                    parts.announce = Some(self.pool.start_dialing(origin.clone()));
                }
            }
            return self.start_new(req, target, origin, slot, spec, rec, Some(parts));
        }
        self.start_new(req, target, origin, slot, spec, rec, None)
    }

    /// Start a hop on the origin's idle HTTP/1.1 connection or a new one.
    #[allow(clippy::too_many_arguments)]
    fn start_new(
        &mut self,
        req: Request,
        target: Rc<Target>,
        origin: Rc<str>,
        slot: (usize, u64),
        spec: &RequestSpec,
        rec: &Rc<RefCell<Recorder>>,
        h2: Option<exchange::H2Parts>,
    ) -> Result<Start, StartError> {
        let settings = &self.settings;
        let conn = self.pool.take(&origin);
        let tls = match target.scheme {
            Scheme::Https => Some(settings.tls().map_err(StartError::Tls)?),
            Scheme::Http => None,
        };
        let (conn, cached) = match conn {
            Some((c, a)) => (Some(c), a),
            None => {
                let pin = settings.pinned(&target.host, target.port);
                let cached = pin.or_else(|| record::cached_addr(rec, &target.host, target.port));
                (None, cached)
            }
        };
        let had_conn = conn.is_some();
        let fut = exchange::exchange(
            target.clone(),
            req,
            conn,
            cached,
            tls,
            spec.timeout,
            spec.mode,
            settings.clone(),
            h2,
        );
        let hop = Hop {
            slot,
            target,
            origin,
            cached,
            had_conn,
        };
        Ok(Start::Go(hop, Box::pin(fut)))
    }

    /// A hop's exchange is done: keep its connection and address for the next requests,
    /// and find its prepared request again (in a batch another request may have taken the
    /// slot meanwhile).
    pub fn finish(
        &mut self,
        spec: &RequestSpec,
        hop: Hop,
        ex: Exchange,
        rec: &Rc<RefCell<Recorder>>,
    ) -> Done {
        let target = hop.target;
        if let (Some(a), None, false) = (ex.addr, hop.cached, hop.had_conn) {
            record::cache_addr(rec, &target.host, target.port, a);
        }
        let h2 = ex.http2;
        if let Some(c) = ex.h2.filter(|_| !self.settings.no_connection_reuse) {
            self.pool.put_h2(hop.origin.clone(), c, ex.addr);
        }
        if let Some(c) = ex.conn.filter(|_| !self.settings.no_connection_reuse) {
            self.pool.put(hop.origin, c, ex.addr);
        }
        let (slot, id) = hop.slot;
        let same = self.prepared.get(slot).is_some_and(|p| p.id == id);
        let slot = if same {
            slot
        } else {
            self.prepared
                .prepare(&spec.method, &spec.url, &spec.headers, &spec.tags)
        };
        Done {
            result: ex.result,
            connect: ex.connect.unwrap_or_default(),
            addr: ex.addr,
            target,
            slot,
            h2,
        }
    }

    /// Record a finished hop (k6's `http_req_*`, `http_reqs`, `data_*`) in `group` with the
    /// tags `src` adds; `expected` is the `responseCallback`'s verdict.
    pub fn record(
        &mut self,
        done: &Done,
        rec: &Rc<RefCell<Recorder>>,
        src: &impl SeriesTags,
        group: u32,
        expected: bool,
    ) {
        let (status, code, version) = (done.status(), done.error_code(), done.version());
        let (h, raw) = self.prepared.slots[done.slot]
            .handles(rec, src, group, status, expected, code, version);
        let (timings, sent, received) = match &done.result {
            Ok(r) => (r.timings, r.bytes_sent, r.bytes_received),
            Err(e) => (Default::default(), e.bytes_sent, e.bytes_received),
        };
        let mut rec = rec.borrow_mut();
        let raw_out = raw.is_some();
        if raw_out {
            rec.set_sample_tags(raw);
        }
        let sample = HopSample {
            timings,
            connect: done.connect,
            failed: !expected,
            bytes_sent: sent,
            bytes_received: received,
        };
        h.record(&mut rec, &sample);
        if raw_out {
            rec.set_sample_tags(None);
        }
    }
}

/// Tags for callers with no VU context (tests, tools): nothing beyond the request's own.
pub struct NoVuTags;

impl SeriesTags for NoVuTags {
    fn cacheable(&self) -> bool {
        true
    }
    fn base_tags(&self) -> TagSet {
        TagSet::new()
    }
    fn filter_system_tags(&self, _: &mut TagSet) {}
    fn url_keys_series(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests;
