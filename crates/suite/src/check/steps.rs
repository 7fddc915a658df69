//! Steps and profiles of a suite file: each step is exactly one of run/http/command/sql with
//! the keys its kind takes; a profile's `extends` chain is applied (env and threshold metrics
//! merged, the rest replaced); every `${...}` and threshold expression is checked.

use super::{
    command_strings, extras, Checker, Http, Load, StepDef, StepFaults, StepKind, COMMAND_TIMEOUT,
};
use crate::file::interp::Ctx;
use crate::file::{CommandLine, OneOrMany, RawProfile, RawStage, RawStep, DOCS};
use std::collections::BTreeMap;
use std::time::Duration;
use toml::Spanned;

/// A profile with its `extends` chain applied: the parent's env and thresholds with the
/// child's on top; the child's load defaults and steps where it gives them.
pub(super) fn flatten(
    c: &mut Checker,
    all: &BTreeMap<String, Spanned<RawProfile>>,
    name: &str,
    p: &Spanned<RawProfile>,
) -> Option<RawProfile> {
    let mut chain = vec![(name.to_string(), p)];
    let mut cur = p;
    while let Some(parent) = &cur.get_ref().extends {
        let pn = parent.get_ref();
        let Some(pp) = all.get(pn) else {
            c.err(
                parent.span().start,
                format!("profiles.{name}: extends '{pn}', which does not exist"),
                format!(
                    "the suite has: {}",
                    all.keys().cloned().collect::<Vec<_>>().join(", ")
                ),
            );
            return None;
        };
        if chain.iter().any(|(n, _)| n == pn) {
            let names: Vec<&str> = chain.iter().map(|(n, _)| n.as_str()).collect();
            c.err(
                parent.span().start,
                format!(
                    "profiles.{name}: extends in a cycle: {} → {pn}",
                    names.join(" → ")
                ),
                "a profile cannot extend itself, directly or through others",
            );
            return None;
        }
        chain.push((pn.clone(), pp));
        cur = pp;
    }
    let mut flat = RawProfile::default();
    for (_, p) in chain.iter().rev() {
        let p = p.get_ref();
        flat.env.extend(p.env.clone());
        // A metric's thresholds in the child replace the parent's for that metric.
        flat.thresholds.extend(p.thresholds.clone());
        if p.vus.is_some() {
            flat.vus = p.vus;
        }
        if p.duration.is_some() {
            flat.duration = p.duration.clone();
        }
        if p.iterations.is_some() {
            flat.iterations = p.iterations;
        }
        if p.stages.is_some() {
            flat.stages = p.stages.clone();
        }
        if p.steps.is_some() {
            flat.steps = p.steps.clone();
        }
    }
    Some(flat)
}

fn stages(c: &mut Checker, s: &Option<Vec<RawStage>>, key: &str) -> Option<Vec<(Duration, u64)>> {
    let s = s.as_ref()?;
    Some(
        s.iter()
            .map(|st| {
                let d = c
                    .duration(&Some(st.duration.clone()), key)
                    .unwrap_or_default();
                (d, st.target)
            })
            .collect(),
    )
}

fn thresholds(map: &BTreeMap<String, OneOrMany>) -> Vec<(String, String)> {
    map.iter()
        .flat_map(|(k, v)| v.list().into_iter().map(move |e| (k.clone(), e)))
        .collect()
}

#[allow(clippy::too_many_arguments)]
pub(super) fn steps(
    c: &mut Checker,
    ctx: &Ctx,
    list: &[Spanned<RawStep>],
    prof: &RawProfile,
    pg: &[&str],
    seed: bool,
    section: &str,
) -> Vec<StepDef> {
    let mut out: Vec<StepDef> = Vec::new();
    for (i, s) in list.iter().enumerate() {
        let at = s.span().start;
        let r = s.get_ref();
        let set: Vec<&str> = [
            ("run", r.run.is_some()),
            ("http", r.http.is_some()),
            ("command", r.command.is_some()),
            ("sql", r.sql.is_some()),
            ("bench", r.bench.is_some()),
        ]
        .iter()
        .filter(|(_, on)| *on)
        .map(|(k, _)| *k)
        .collect();
        let where_ = format!("{section} step {}", i + 1);
        if set.len() != 1 {
            c.err(
                at,
                format!(
                    "{where_}: give exactly one of run, http, command, sql, bench (found {})",
                    if set.is_empty() {
                        "none".into()
                    } else {
                        set.join(", ")
                    }
                ),
                format!("see {DOCS}, \"Steps\""),
            );
            continue;
        }
        if r.sql.is_some() && !seed {
            c.err(
                at,
                format!("{where_}: sql steps are seed steps"),
                "move it to [[seed]]",
            );
            continue;
        }
        let name = r.name.clone().unwrap_or_else(|| match set[0] {
            "run" => r
                .run
                .as_deref()
                .map(|p| {
                    std::path::Path::new(p)
                        .file_stem()
                        .map_or("run".into(), |s| s.to_string_lossy().into_owned())
                })
                .unwrap_or_default(),
            _ if seed => format!("seed-{}", i + 1),
            other => format!("{other}-{}", i + 1),
        });
        if name.is_empty() || name.contains(['/', '\\']) || name.starts_with('.') {
            c.err(
                at,
                format!("{where_}: name '{name}' cannot name a file"),
                "use letters, digits, '-', '_' and '.'",
            );
        }
        if out.iter().any(|o| o.name == name) {
            c.err(
                at,
                format!("{where_}: another step of {section} is named '{name}'"),
                "give each step its own name = \"...\" (it names its result files)",
            );
        }
        let mut env = prof.env.clone();
        env.extend(r.env.clone());
        for (k, v) in &env {
            c.expand(ctx, at, &format!("{where_}.env.{k}"), v);
        }
        for v in [&r.run, &r.http, &r.vs, &r.sql, &r.cwd, &r.body]
            .into_iter()
            .flatten()
        {
            c.expand(ctx, at, &where_, v);
        }
        for v in r.headers.values() {
            c.expand(ctx, at, &format!("{where_}.headers"), v);
        }
        if let Some(cmd) = &r.command {
            for v in command_strings(cmd) {
                c.expand(ctx, at, &format!("{where_}.command"), v);
            }
        }
        // A profile's thresholds are for its scripts: quick mode records fewer metrics.
        let mut ths = if set[0] == "run" {
            thresholds(&prof.thresholds)
        } else {
            Vec::new()
        };
        ths.extend(thresholds(&r.thresholds));
        for (k, e) in ths.iter().filter(|_| set[0] != "bench") {
            // Drift and monitor checks (slope, drift(p95)) have their own grammar, judged
            // by the run layer; the rest is k6's.
            let special = volley_run::checks::is_check_flag(&format!("{k}:{e}"));
            if let (false, Err(msg)) = (special, volley_run::thresholds::parse_expression(e)) {
                c.err(
                    at,
                    format!("{where_}: threshold {k}: '{e}': {msg}"),
                    "e.g. http_req_duration = [\"p(95)<500\"], http_req_failed = \"rate<0.01\"",
                );
            }
        }
        let http_only = r.vs.is_some()
            || r.rounds.is_some()
            || r.connections.is_some()
            || r.requests.is_some()
            || r.rate.is_some()
            || r.pipeline.is_some()
            || r.http2.is_some()
            || r.method.is_some()
            || !r.headers.is_empty()
            || r.body.is_some();
        if set[0] == "bench" {
            let flags: Vec<String> = ths.iter().map(|(k, e)| format!("{k}:{e}")).collect();
            if let Err(e) = volley_bench::limits::parse_flags(&flags) {
                c.err(
                    at,
                    format!("{where_}: {e}"),
                    "e.g. thresholds = { wall = \"p(95)<200ms\", peak_rss = \"max<3MiB\" }",
                );
            }
        }
        let step_faults = if r.faults.is_empty() && r.proxies.is_empty() {
            StepFaults::default()
        } else if set[0] == "run" {
            extras::faults(c, ctx, &where_, r)
        } else {
            c.err(
                at,
                format!("{where_}: faults and proxies are for run steps"),
                format!("see {DOCS}, \"Faults\""),
            );
            StepFaults::default()
        };
        let kind = match set[0] {
            "bench" => {
                let b = r.bench.as_ref().expect("set");
                match extras::bench(c, ctx, b.span().start, &where_, b.get_ref(), ths) {
                    Some(d) => StepKind::Bench(d),
                    None => continue,
                }
            }
            "run" => {
                if http_only {
                    c.err(at, format!("{where_}: vs, rounds, connections, requests, rate, pipeline, http2, method, headers and body are for http steps"), "a script sets its own requests");
                }
                let (vus, iterations) = if seed
                    && r.vus.is_none()
                    && r.iterations.is_none()
                    && r.duration.is_none()
                    && r.stages.is_none()
                {
                    // A seed script runs once: setup(), one iteration, teardown().
                    (Some(1), Some(1))
                } else {
                    (r.vus.or(prof.vus), r.iterations.or(prof.iterations))
                };
                let own = r.duration.is_some() || r.stages.is_some() || r.iterations.is_some();
                StepKind::Run(Load {
                    script: r.run.clone().unwrap_or_default(),
                    vus,
                    duration: c
                        .duration(&r.duration, &format!("{where_}.duration"))
                        .or_else(|| {
                            if own {
                                None
                            } else {
                                c.duration(&prof.duration, "duration")
                            }
                        }),
                    iterations,
                    stages: stages(c, &r.stages, &format!("{where_}.stages")).or_else(|| {
                        if own {
                            None
                        } else {
                            stages(c, &prof.stages, "stages")
                        }
                    }),
                    thresholds: ths,
                    faults: step_faults,
                })
            }
            "http" => {
                if r.vus.is_some() || r.iterations.is_some() || r.stages.is_some() {
                    c.err(
                        at,
                        format!("{where_}: vus, iterations and stages are for run steps"),
                        "an http step takes connections, duration or requests, rate",
                    );
                }
                if let Some(rt) = r.rate {
                    if !(rt.is_finite() && rt > 0.0) {
                        c.err(
                            at,
                            format!("{where_}.rate {rt}: give requests per second, more than 0"),
                            "",
                        );
                    }
                }
                if r.pipeline.unwrap_or(1) > 1 && r.http2 == Some(true) {
                    c.err(
                        at,
                        format!("{where_}: pipeline is for HTTP/1.1"),
                        "remove pipeline or http2",
                    );
                }
                let duration = c.duration(&r.duration, &format!("{where_}.duration"));
                let capacity = super::capacity::plan(c, at, &where_, r);
                // Each step or probe of a capacity run: `volley http`'s default window.
                let duration = match (&capacity, duration) {
                    (Some(_), None) => Some(Duration::from_secs(5)),
                    (_, d) => d,
                };
                StepKind::Http(Http {
                    url: r.http.clone().unwrap_or_default(),
                    vs: r.vs.clone(),
                    rounds: r.rounds.unwrap_or(3).max(1),
                    connections: r.connections.unwrap_or(10).max(1),
                    duration: if duration.is_none() && r.requests.is_none() {
                        Some(Duration::from_secs(10))
                    } else {
                        duration
                    },
                    requests: r.requests,
                    rate: r.rate,
                    pipeline: r.pipeline.unwrap_or(1).max(1),
                    http2: r.http2.unwrap_or(false),
                    method: r
                        .method
                        .clone()
                        .unwrap_or_else(|| {
                            if r.body.is_some() {
                                "POST".into()
                            } else {
                                "GET".into()
                            }
                        })
                        .to_ascii_uppercase(),
                    headers: r
                        .headers
                        .iter()
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect(),
                    body: r.body.clone(),
                    thresholds: ths,
                    capacity,
                })
            }
            "command" => StepKind::Command {
                command: r
                    .command
                    .clone()
                    .unwrap_or(CommandLine::Shell(String::new())),
                cwd: r.cwd.clone(),
                timeout: c
                    .duration(&r.timeout, &format!("{where_}.timeout"))
                    .unwrap_or(COMMAND_TIMEOUT),
            },
            _ => {
                let service = match (&r.service, pg) {
                    (Some(s), _) if pg.contains(&s.get_ref().as_str()) => s.get_ref().clone(),
                    (Some(s), _) => {
                        c.err(
                            s.span().start,
                            format!(
                                "{where_}.service '{}': not a kind = \"postgres\" service",
                                s.get_ref()
                            ),
                            format!(
                                "postgres services: {}",
                                if pg.is_empty() {
                                    "none".into()
                                } else {
                                    pg.join(", ")
                                }
                            ),
                        );
                        continue;
                    }
                    (None, [one]) => one.to_string(),
                    (None, []) => {
                        c.err(
                            at,
                            format!("{where_}: an sql step needs a kind = \"postgres\" service"),
                            "add [services.db] kind = \"postgres\", or run psql in a command step",
                        );
                        continue;
                    }
                    (None, _) => {
                        c.err(
                            at,
                            format!("{where_}: several postgres services; say which"),
                            "add service = \"NAME\"",
                        );
                        continue;
                    }
                };
                StepKind::Sql {
                    file: r.sql.clone().unwrap_or_default(),
                    service,
                }
            }
        };
        let load = matches!(kind, StepKind::Run(_) | StepKind::Http(_));
        if (!load && !matches!(kind, StepKind::Bench(_)) && !r.thresholds.is_empty())
            || (!load && r.duration.is_some())
        {
            c.err(
                at,
                format!("{where_}: thresholds and duration are for run and http steps"),
                "a command step passes when it exits 0; limit it with timeout",
            );
        }
        if (r.sweep.is_some() || r.find_max_rate.is_some()) && !matches!(kind, StepKind::Http(_)) {
            c.err(
                at,
                format!("{where_}: sweep and find_max_rate are for http steps"),
                "a script's capacity: volley run script.js --find-max-rate (docs/capacity.md)",
            );
        }
        if r.service.is_some() && !matches!(kind, StepKind::Sql { .. }) {
            c.err(at, format!("{where_}: service is for sql steps"), "");
        }
        out.push(StepDef {
            name,
            kind,
            env,
            at: c.at(at),
        });
    }
    out
}
