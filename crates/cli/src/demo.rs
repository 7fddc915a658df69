//! `volley demo`: start the built-in target on a free loopback port and run a short quick
//! test against it, so a newcomer sees the whole loop with no server of their own.

use crate::args::DemoArgs;
use crate::{exit, http_cmd};
use std::io::IsTerminal;
use volley_engine::{run_quick, QuickConfig, RunControl};
use volley_http::{Body, TlsOptions};

pub fn run(a: DemoArgs) -> i32 {
    let target = match volley_target::spawn(volley_target::TargetConfig {
        listen: "127.0.0.1:0".parse().expect("static address"),
        threads: 1,
        tls: None,
        delay_all: None,
    }) {
        Ok(t) => t,
        Err(e) => return exit::fail(&format!("cannot start the built-in target: {e}")),
    };
    let url = format!("{}/", target.url());
    outln!("volley demo: built-in target listening on {}", target.url());
    outln!(
        "volley demo: {} connections for {:.0}s against {url}  (same as: volley http -c {} -z {}s {url})\n",
        a.connections,
        a.duration.as_secs_f64(),
        a.connections,
        a.duration.as_secs()
    );
    let cfg = QuickConfig {
        url: url.clone(),
        method: "GET".into(),
        headers: Vec::new(),
        body: Body::Empty,
        connections: a.connections.max(1),
        duration: Some(a.duration),
        requests: None,
        timeout: std::time::Duration::from_secs(10),
        connect_timeout: std::time::Duration::from_secs(5),
        keepalive: true,
        tls: TlsOptions {
            insecure: false,
            cacert: None,
        },
        threads: 0,
        pipeline: 1,
        http2: false,
        h2_streams: 1,
        rate: None,
        max_connections: a.connections.max(1),
        command: std::env::args().collect(),
    };
    let ctl = RunControl::new();
    crate::signals::install(ctl.clone());
    let live = std::io::stderr().is_terminal();
    let result = run_quick(&cfg, &ctl, |p| {
        if live {
            eprint!(
                "\r\x1b[2K{:>4.0}s  {} requests  {:.0} req/s",
                p.elapsed.as_secs_f64(),
                p.requests,
                p.rate
            );
        }
    });
    if live {
        eprint!("\r\x1b[2K");
    }
    let served = target.stats();
    target.shutdown();
    let result = match result {
        Ok(r) => r,
        Err(e) => return exit::fail(&e),
    };
    let code = http_cmd::finish(&result, false, false, a.save.as_deref());
    let counted = result.counter_sum("http_reqs") as u64;
    outln!(
        "\nThe target counted {} requests; Volley counted {counted}{}.",
        served.requests,
        if served.requests == counted {
            " (exact match)"
        } else {
            ""
        }
    );
    outln!(
        "Next: `volley http URL` against your own service; `volley http --help` for every flag."
    );
    code
}
