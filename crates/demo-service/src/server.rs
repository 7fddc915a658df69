//! The shared application state, the accept loop and the hyper service (which times every
//! request and records it in [`Metrics`]).

use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use hyper::body::Incoming;
use hyper::service::Service;
use hyper::Request;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use tokio::net::TcpListener;

use crate::auth::{Principal, Sessions};
use crate::body::Resp;
use crate::db::Db;
use crate::metrics::Metrics;
use crate::store::Store;
use crate::DemoConfig;

/// Everything handlers share.
pub(crate) struct App {
    pub(crate) db: Db,
    pub(crate) store: Store,
    pub(crate) sessions: Sessions,
    pub(crate) metrics: Metrics,
    pub(crate) max_upload: u64,
    pub(crate) max_json: u64,
    /// WebDAV Basic credentials already verified (the whole `Authorization` value → user),
    /// so WebDAV benchmarks do not measure argon2 on every request. Bounded, short-lived.
    pub(crate) dav_cache: Mutex<HashMap<String, (Principal, Instant)>>,
    /// When stale chunked uploads were last swept (Unix ms).
    pub(crate) last_sweep_ms: std::sync::atomic::AtomicI64,
    http: auto::Builder<TokioExecutor>,
}

impl App {
    pub(crate) fn open(config: &DemoConfig) -> io::Result<App> {
        if config.data_dir.exists() && !config.data_dir.is_dir() {
            return Err(io::Error::other(format!(
                "{} is a file, not a directory (the data directory holds the database and \
                 the files; it is created if missing)",
                config.data_dir.display()
            )));
        }
        std::fs::create_dir_all(&config.data_dir)?;
        let store = Store::open(&config.data_dir)?;
        let db = crate::db::open(&config.data_dir, config.database.as_deref())
            .map_err(io::Error::other)?;
        let mut http = auto::Builder::new(TokioExecutor::new());
        // A head that does not arrive in time closes the connection (hyper needs a timer for it).
        http.http1()
            .keep_alive(true)
            .timer(hyper_util::rt::TokioTimer::new())
            .header_read_timeout(config.header_read_timeout);
        http.http2().max_concurrent_streams(256);
        Ok(App {
            db,
            store,
            sessions: Sessions::default(),
            metrics: Metrics::default(),
            max_upload: config.max_upload_bytes,
            max_json: config.max_json_bytes,
            dav_cache: Mutex::new(HashMap::new()),
            last_sweep_ms: std::sync::atomic::AtomicI64::new(0),
            http,
        })
    }
}

pub(crate) async fn serve(listener: TcpListener, app: Arc<App>, stop: impl Future<Output = ()>) {
    volley_testserver::harness::accept_until(listener, stop, |tcp| {
        let app = app.clone();
        tokio::spawn(async move {
            let service = AppService { app: app.clone() };
            let _ = app.http.serve_connection(TokioIo::new(tcp), service).await;
        });
    })
    .await
}

struct AppService {
    app: Arc<App>,
}

impl Service<Request<Incoming>> for AppService {
    type Response = Resp;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Resp, Infallible>> + Send>>;

    fn call(&self, req: Request<Incoming>) -> Self::Future {
        let app = self.app.clone();
        Box::pin(async move {
            let start = Instant::now();
            // Known methods only, so odd clients cannot grow the metrics' label sets.
            let method: &'static str = match req.method().as_str() {
                "GET" => "GET",
                "HEAD" => "HEAD",
                "POST" => "POST",
                "PUT" => "PUT",
                "DELETE" => "DELETE",
                "OPTIONS" => "OPTIONS",
                "PATCH" => "PATCH",
                "PROPFIND" => "PROPFIND",
                "MKCOL" => "MKCOL",
                _ => "OTHER",
            };
            let (route, resp) = crate::router::handle(&app, req).await;
            app.metrics
                .observe(route, method, resp.status().as_u16(), start.elapsed());
            Ok(resp)
        })
    }
}
