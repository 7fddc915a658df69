//! `volley`: the command-line front end. Thin by design: it parses flags, calls the library
//! crates (engine, js, monitor, suite, report, history, testserver, metrics) and maps
//! outcomes to documented exit codes. `volley demo`'s tour is `volley_suite`, `volley
//! monitor`'s loop `volley_monitor::watch`, k6's flags' meaning `volley_js::options::flags`.

/// `println!` that tolerates a closed stdout (`volley ... | head`) instead of panicking.
macro_rules! outln {
    ($($t:tt)*) => { $crate::exit::print(&format!("{}\n", format_args!($($t)*))) };
}

mod agent_cmd;
mod archive_cmd;
mod args;
mod bench_cmd;
mod capacity_cmd;
mod coordinator_cmd;
mod dashboard_cmd;
mod demo;
mod demo_service_cmd;
mod exit;
mod fault_flags;
mod grpc_cmd;
mod history_cmd;
mod http_cmd;
mod k6_flags;
mod k8s_cmd;
mod merge_cmd;
mod monitor_cmd;
mod output_flags;
mod quick_flags;
mod report_cmd;
mod run_cmd;
mod signals;
mod suite_cmd;
mod verify_cmd;
mod ws_cmd;

use clap::Parser;

/// Rust-side allocations (requests, responses, metric keys) go through mimalloc too: per
/// request of a k6 script its malloc/free cost a third of glibc's (bench/RESULTS.md, #4).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

extern "C" {
    // mimalloc's option API (libmimalloc-sys declares it only with its "extended" feature).
    fn mi_option_set(option: std::ffi::c_int, value: std::ffi::c_long);
}

/// `mi_option_arena_eager_commit` (mimalloc.h): committing each 1 GiB arena up front cost
/// 5,000 VUs up to 2.5 s of page faults at start and 6-10 MB more peak RSS.
const MI_OPTION_ARENA_EAGER_COMMIT: std::ffi::c_int = 4;

/// Set before Rust's runtime makes its first allocation (which creates mimalloc's first
/// arena): a constructor, not the start of `main`.
extern "C" fn mimalloc_options() {
    // SAFETY: a plain option store, before any thread exists.
    unsafe { mi_option_set(MI_OPTION_ARENA_EAGER_COMMIT, 0) };
}

#[cfg(target_os = "linux")]
#[used]
#[link_section = ".init_array"]
static MIMALLOC_OPTIONS: extern "C" fn() = mimalloc_options;

fn main() {
    let cli = args::Cli::parse();
    let code = match cli.command {
        args::Command::Http(a) => http_cmd::run(*a),
        args::Command::Target(a) => target_cmd(a),
        args::Command::Summary(a) => summary_cmd(a),
        args::Command::Demo(a) => match a.action {
            Some(action) => demo_service_cmd::run(action),
            None => demo::run(a),
        },
        args::Command::Run(a) => run_cmd::run(*a),
        args::Command::Report(a) => report_cmd::report(a),
        args::Command::Compare(a) => report_cmd::compare(a),
        args::Command::Monitor(a) => monitor_cmd::run(a),
        args::Command::History(a) => history_cmd::list(a),
        args::Command::Verify(a) => verify_cmd::run(a),
        args::Command::Archive(a) => archive_cmd::archive(*a),
        args::Command::Inspect(a) => archive_cmd::inspect(*a),
        args::Command::Merge(a) => merge_cmd::run(a),
        args::Command::Coordinator(a) => coordinator_cmd::run(*a),
        args::Command::Agent(a) => agent_cmd::run(*a),
        args::Command::Suite(a) => suite_cmd::run(a),
        args::Command::Bench(a) => bench_cmd::run(*a),
        args::Command::K8s(a) => k8s_cmd::run(a),
        args::Command::Ws(a) => ws_cmd::run(*a),
        args::Command::Grpc(a) => grpc_cmd::run(*a),
    };
    std::process::exit(code);
}

fn target_cmd(a: args::TargetArgs) -> i32 {
    let tls = match (&a.tls_cert, &a.tls_key) {
        (Some(c), Some(k)) => match (std::fs::read(c), std::fs::read(k)) {
            (Ok(cert_chain_pem), Ok(key_pem)) => Some(volley_testserver::TlsIdentity {
                cert_chain_pem,
                key_pem,
            }),
            (Err(e), _) => return exit::fail(&format!("{}: {e}", c.display())),
            (_, Err(e)) => return exit::fail(&format!("{}: {e}", k.display())),
        },
        (None, None) => None,
        _ => return exit::usage("--tls-cert and --tls-key go together"),
    };
    let cfg = volley_testserver::TargetConfig {
        listen: a.listen,
        threads: a.threads.max(1),
        tls,
        delay_all: a.delay.map(std::time::Duration::from_millis),
    };
    let scheme = if cfg.tls.is_some() { "https" } else { "http" };
    let limits = volley_testserver::Limits {
        workers: a.workers,
        fail_above: a.fail_above,
    };
    match volley_testserver::run_blocking_limited(cfg, limits, |addr| {
        outln!("volley target listening on {scheme}://{addr}");
    }) {
        Ok(()) => exit::OK,
        Err(e) => exit::fail(&format!("cannot serve on {}: {e}", a.listen)),
    }
}

fn summary_cmd(a: args::SummaryArgs) -> i32 {
    let r = match volley_metrics::RunResult::read(&a.file) {
        Ok(r) => r,
        Err(e) => return exit::fail(&e),
    };
    if r.meta.mode == "run" {
        return match volley_run::Summary::from_result(&r) {
            Ok(s) if a.json => {
                outln!(
                    "{}",
                    serde_json::to_string_pretty(&s.export()).unwrap_or_default()
                );
                exit::OK
            }
            Ok(s) => match crate::run_cmd::summary_mode(a.summary_mode.as_deref()) {
                Ok(m) => {
                    exit::print(&s.render(m));
                    fault_flags::print(&volley_metrics::events::summary_lines(&r.events), false);
                    exit::OK
                }
                Err(e) => exit::usage(&e),
            },
            Err(e) => exit::fail(&format!("{}: {e}", a.file.display())),
        };
    }
    if r.meta.mode == "bench" {
        return bench_cmd::summary(&r, a.json);
    }
    if r.meta.mode == volley_engine::quick_ws::RUN_KIND {
        return ws_cmd::summary(&r, a.json);
    }
    if r.meta.mode == volley_engine::quick_grpc::RUN_KIND {
        return grpc_cmd::summary(&r, a.json);
    }
    if r.meta.mode != "http" {
        return exit::fail(&format!(
            "{}: summaries of '{}' runs are not supported yet",
            a.file.display(),
            r.meta.mode
        ));
    }
    match volley_engine::QuickSummary::from_result(&r) {
        Ok(s) if a.json => {
            outln!(
                "{}",
                serde_json::to_string_pretty(&s.to_json()).unwrap_or_default()
            );
            exit::OK
        }
        Ok(s) => {
            exit::print(&s.render_text(exit::stdout_is_tty()));
            fault_flags::print(&volley_metrics::events::summary_lines(&r.events), false);
            exit::OK
        }
        Err(e) => exit::fail(&format!("{}: {e}", a.file.display())),
    }
}
