//! What a run prints around itself on stderr (stdout stays the summary). `volley run`, as k6
//! does: the execution header (one line per scenario), a live line per scenario while it runs
//! (terminals only), and the scenarios' final counts ([`Progress`]). `volley http`: one live
//! line of requests, rate, p99 and errors ([`QuickLine`]). Both are [`Observer`](crate::Observer)s
//! of the same per-second ticks.

use std::fmt::Write as _;
use std::io::Write as _;
use std::sync::Arc;
use std::time::Duration;
use volley_engine::executor::{fmt_duration, Scenario};
use volley_engine::quick::QuickFactory;
use volley_engine::vus::{ScenarioState, Tick, VuRunResult};
use volley_metrics::fmt::k6::clock;

/// k6's header: script, then "scenarios: (100.00%) N scenarios, V max VUs, D max duration
/// (incl. graceful stop):" and one `* name: description` line each.
pub fn header(script: &str, scenarios: &[Scenario]) -> String {
    let vus: u64 = scenarios.iter().map(|s| s.executor.max_vus()).sum();
    let max = scenarios
        .iter()
        .map(Scenario::max_end)
        .max()
        .unwrap_or_default();
    let n = scenarios.len();
    let mut out = String::new();
    let _ = writeln!(out, "\n     execution: local\n        script: {script}\n");
    let _ = writeln!(
        out,
        "     scenarios: (100.00%) {n} scenario{}, {vus} max VUs, {} max duration (incl. graceful stop):",
        if n == 1 { "" } else { "s" },
        fmt_duration(max)
    );
    for s in scenarios {
        let _ = writeln!(out, "              * {}: {}", s.name, s.describe());
    }
    out.push('\n');
    out
}

/// One line for a scenario: name, a bar, VUs, time and iterations.
fn line(st: &ScenarioState, width: usize) -> String {
    let p = st.progress();
    let bar_len = 30usize;
    let filled = ((p * bar_len as f64).round() as usize).min(bar_len);
    let bar: String = if filled == bar_len {
        "=".repeat(bar_len)
    } else {
        format!(
            "{}>{}",
            "=".repeat(filled),
            " ".repeat(bar_len - filled - 1)
        )
    };
    let mark = if st.has_ended() { '✓' } else { ' ' };
    let elapsed = st
        .started()
        .map_or(Duration::ZERO, |(t, _)| t.elapsed())
        .min(st.spec.executor.duration());
    let mut s = format!(
        "{:<width$} {mark} [{bar}] {:>3}/{} VUs  {}/{}  {} complete, {} interrupted",
        st.spec.name,
        st.active(),
        st.spec.executor.max_vus(),
        fmt_duration(Duration::from_secs(elapsed.as_secs())),
        fmt_duration(st.spec.executor.duration()),
        st.completed(),
        st.interrupted(),
    );
    if st.spec.executor.arrivals().is_some() {
        let _ = write!(s, ", {} dropped", st.dropped());
    }
    s
}

/// Redraws the scenario lines once per tick on a terminal, as the logger's live area
/// ([`volley_engine::log::draw_live`]): a log line printed between two ticks erases the lines
/// and stays, and the next tick draws them below it.
pub struct Live {
    on: bool,
}

impl Live {
    pub fn new(on: bool) -> Live {
        Live { on }
    }

    pub fn draw(&mut self, tick: &Tick<'_>) {
        if !self.on {
            return;
        }
        let width = tick
            .scenarios
            .iter()
            .map(|s| s.spec.name.len())
            .max()
            .unwrap_or(0);
        let done: u64 = tick.scenarios.iter().map(ScenarioState::completed).sum();
        let cut: u64 = tick.scenarios.iter().map(ScenarioState::interrupted).sum();
        let mut out = String::new();
        let _ = writeln!(
            out,
            "\x1b[2Krunning ({}), {:02}/{:02} VUs, {done} complete and {cut} interrupted iterations",
            clock(tick.elapsed),
            tick.vus,
            tick.scenarios
                .iter()
                .map(|s| s.spec.executor.max_vus())
                .sum::<u64>()
        );
        for st in tick.scenarios {
            let _ = writeln!(out, "\x1b[2K{}", line(st, width));
        }
        volley_engine::log::draw_live(&out);
    }

    /// Remove the live lines (the final ones are printed by [`finished`]).
    pub fn clear(&mut self) {
        if self.on {
            volley_engine::log::clear_live();
        }
    }
}

/// The progress of a script-style run as an [`Observer`](crate::Observer): the live lines
/// while it runs (on a terminal), k6's final lines per scenario when the scheduler returns.
pub struct Progress {
    live: Live,
    /// Print the final lines (not with `--quiet`).
    show: bool,
}

impl Progress {
    pub fn new(show: bool, live: bool) -> Progress {
        Progress {
            live: Live::new(show && live),
            show,
        }
    }
}

impl crate::Observer for Progress {
    fn tick(&mut self, tick: &Tick<'_>) {
        self.live.draw(tick);
    }

    fn ended(&mut self, run: &VuRunResult, plan: &volley_engine::vus::VuPlan) {
        self.live.clear();
        if self.show {
            eprint!("{}", finished(run, &plan.scenarios));
        }
    }
}

/// k6's progress for a script run: the execution header now (when `show`), then its live and
/// final lines as an observer of `spec`.
pub fn attach<F: volley_engine::vus::VuFactory>(
    spec: &mut crate::RunSpec<F>,
    show: bool,
    live: bool,
) {
    if show {
        eprint!("{}", header(&spec.meta.name, &spec.plan.scenarios));
    }
    spec.observers.push(Box::new(Progress::new(show, live)));
}

/// Quick mode's live line (terminals only): elapsed, requests, the last second's rate and p99,
/// errors, time left of `-z`.
pub struct QuickLine {
    factory: Arc<QuickFactory>,
    live: bool,
}

impl QuickLine {
    pub fn new(factory: Arc<QuickFactory>, live: bool) -> QuickLine {
        QuickLine { factory, live }
    }
}

/// One quick-mode progress line (without the terminal's line reset).
pub fn quick_line(p: &volley_engine::Progress) -> String {
    let left = p
        .remaining
        .map(|r| format!("  {:.0}s left", r.as_secs_f64().ceil()))
        .unwrap_or_default();
    format!(
        "{:>5.0}s  {} requests  {:.0} req/s  p99 {}  errors {}{left}",
        p.elapsed.as_secs_f64(),
        p.requests,
        p.rate,
        volley_metrics::fmt::ms(p.p99_ms),
        p.errors,
    )
}

impl crate::Observer for QuickLine {
    fn tick(&mut self, tick: &Tick<'_>) {
        if self.live {
            eprint!("\r\x1b[2K{}", quick_line(&self.factory.progress(tick)));
            let _ = std::io::stderr().flush();
        }
    }

    fn ended(&mut self, _run: &VuRunResult, _plan: &volley_engine::vus::VuPlan) {
        if self.live {
            eprint!("\r\x1b[2K");
        }
    }
}

/// The final line per scenario: what ran, complete / interrupted / dropped iterations.
pub fn finished(r: &VuRunResult, scenarios: &[Scenario]) -> String {
    let width = scenarios.iter().map(|s| s.name.len()).max().unwrap_or(0);
    let done: u64 = r.scenarios.iter().map(|s| s.completed).sum();
    let cut: u64 = r.scenarios.iter().map(|s| s.interrupted).sum();
    let vus: u64 = scenarios.iter().map(|s| s.executor.max_vus()).sum();
    let mut out = format!(
        "\nrunning ({}), 00/{vus:02} VUs, {done} complete and {cut} interrupted iterations\n",
        clock(r.elapsed)
    );
    for (st, sc) in r.scenarios.iter().zip(scenarios) {
        let mut l = format!(
            "{:<width$} ✓ {} complete, {} interrupted iterations",
            st.name, st.completed, st.interrupted
        );
        if sc.executor.arrivals().is_some() {
            let _ = write!(l, ", {} dropped", st.dropped);
        }
        let _ = writeln!(out, "{l}  ({})", sc.executor.describe().0);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use volley_engine::executor::{ConstantVus, Executor, PerVuIterations};

    #[test]
    fn header_lists_every_scenario_like_k6() {
        let mut a = Scenario::new(
            "read",
            Executor::ConstantVus(ConstantVus {
                vus: 10,
                duration: Duration::from_secs(30),
            }),
        );
        a.exec = Some("read".into());
        let b = Scenario::new(
            "write",
            Executor::PerVuIterations(PerVuIterations {
                vus: 3,
                iterations: 5,
                max_duration: Duration::from_secs(60),
            }),
        );
        let h = header("s.js", &[a, b]);
        assert!(
            h.contains("scenarios: (100.00%) 2 scenarios, 13 max VUs, 1m30s max duration (incl. graceful stop):"),
            "{h}"
        );
        assert!(
            h.contains("* read: 10 looping VUs for 30s (exec: read, gracefulStop: 30s)"),
            "{h}"
        );
        assert!(h.contains("* write: 5 iterations for each of 3 VUs"), "{h}");
    }

    #[test]
    fn clock_reads_like_k6() {
        assert_eq!(clock(Duration::from_millis(31_000)), "0m31.0s");
        assert_eq!(clock(Duration::from_millis(61_500)), "1m01.5s");
    }
}
