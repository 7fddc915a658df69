//! The two step features that come from other crates: `bench = { ... }` (volley-bench's
//! options, checked as `volley bench` checks its flags) and a run step's `faults`/`proxies`
//! (volley-faults' grammar, with process faults naming suite services and network faults
//! naming the step's proxies).

use super::{command_strings, BenchDef, Checker, StepFaults};
use crate::file::interp::Ctx;
use crate::file::{RawBench, RawStep, DOCS};
use std::collections::BTreeSet;
use volley_faults::{Action, Schedule, Target};

/// A `bench` step's table → [`BenchDef`]; `None` (with errors) when it cannot run.
pub(super) fn bench(
    c: &mut Checker,
    ctx: &Ctx,
    at: usize,
    where_: &str,
    b: &RawBench,
    thresholds: Vec<(String, String)>,
) -> Option<BenchDef> {
    let Some(command) = b.command.clone() else {
        c.err(
            at,
            format!("{where_}: bench needs command"),
            "e.g. bench = { command = \"./harness --ops 1000\", runs = 5 }",
        );
        return None;
    };
    for v in command_strings(&command) {
        c.expand(ctx, at, &format!("{where_}.bench.command"), v);
    }
    for v in [&b.prepare, &b.cleanup].into_iter().flatten() {
        c.expand(ctx, at, &format!("{where_}.bench"), v);
    }
    if b.runs == Some(0) || b.runs.is_some_and(|n| n > volley_bench::MAX_RUNS) {
        c.err(
            at,
            format!("{where_}.bench.runs: give 1 to {}", volley_bench::MAX_RUNS),
            "runs = 5, or min_time = \"3s\" to run until that much time has passed",
        );
    }
    let parse = b.parse.as_ref().and_then(|p| {
        volley_bench::parse::Format::parse(p.get_ref())
            .map_err(|e| {
                c.err(
                    p.span().start,
                    format!("{where_}.bench.parse: {e}"),
                    "\"kv\" or \"json\"",
                )
            })
            .ok()
    });
    let mut params = Vec::new();
    for (k, v) in &b.params {
        let values: Vec<String> = v
            .list()
            .iter()
            .flat_map(|s| s.split(',').map(|x| x.trim().to_string()))
            .collect();
        if let Err(e) = volley_bench::Param::parse(&format!("{k}={}", values.join(","))) {
            c.err(
                at,
                format!("{where_}.bench.params: {e}"),
                format!("see {DOCS}, \"Bench steps\""),
            );
        }
        params.push((k.clone(), values));
    }
    Some(BenchDef {
        command,
        runs: b.runs,
        min_time: c.duration(&b.min_time, &format!("{where_}.bench.min_time")),
        warmup: b.warmup.unwrap_or(0),
        params,
        parse,
        prepare: b.prepare.clone(),
        cleanup: b.cleanup.clone(),
        shell: b.shell.clone(),
        timeout: c.duration(&b.timeout, &format!("{where_}.bench.timeout")),
        thresholds,
    })
}

/// A step's `faults` and `proxies`: the grammar, proxies in front of known services, process
/// faults on known services, network faults on the step's proxies.
pub(super) fn faults(c: &mut Checker, ctx: &Ctx, where_: &str, r: &RawStep) -> StepFaults {
    let mut out = StepFaults::default();
    for (name, up) in &r.proxies {
        let u = up.get_ref();
        let ok = match u.strip_prefix("services.") {
            Some(s) => ctx.services.contains_key(s),
            None => u
                .rsplit_once(':')
                .is_some_and(|(_, p)| p.parse::<u16>().is_ok()),
        };
        if !ok
            || volley_faults::ProxySpec::parse(&format!("{name}=127.0.0.1:0->127.0.0.1:1")).is_err()
        {
            c.err(
                up.span().start,
                format!("{where_}.proxies.{name} = \"{u}\": not a service or HOST:PORT"),
                format!(
                    "write proxies = {{ {name} = \"services.NAME\" }}; services: {}",
                    ctx.services.keys().cloned().collect::<Vec<_>>().join(", ")
                ),
            );
        }
        out.proxies.push((name.clone(), u.clone()));
    }
    let proxies: BTreeSet<&String> = r.proxies.keys().collect();
    for f in &r.faults {
        let text = f.get_ref();
        let at = f.span().start;
        let schedule = match Schedule::parse(std::slice::from_ref(text)) {
            Ok(s) => s,
            Err(e) => {
                c.err(
                    at,
                    format!("{where_}.faults: {e}"),
                    "see docs/faults.md, \"Grammar\"",
                );
                continue;
            }
        };
        for fault in &schedule.faults {
            match &fault.action {
                Action::Proxy { proxy, .. } if !proxies.contains(proxy) => c.err(
                    at,
                    format!("{where_}.faults '{text}': no proxy named '{proxy}' in this step"),
                    format!("add proxies = {{ {proxy} = \"services.NAME\" }} to the step"),
                ),
                Action::Process {
                    target: Target::Named(n),
                    ..
                } if !ctx.services.contains_key(n) => c.err(
                    at,
                    format!("{where_}.faults '{text}': no service named '{n}'"),
                    format!(
                        "process faults name a service: {}",
                        ctx.services.keys().cloned().collect::<Vec<_>>().join(", ")
                    ),
                ),
                _ => {}
            }
        }
        out.faults.push(text.clone());
    }
    out
}
