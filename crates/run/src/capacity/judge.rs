//! A probe's verdict. Besides the SLO, two findings end a search at once: the target failing
//! *hard* (connections refused, or an error rate far over the SLO's budget), and the load
//! generator being the limit — then the numbers describe Volley, not the server, and saying
//! "capacity" would be wrong.

use super::slo::Slo;
use volley_metrics::capacity::Step;

/// Throughput below this share of the offered rate: the load was not sustained.
pub const SUSTAINED: f64 = 0.9;
/// Volley's worker threads busy (running or waiting for a CPU) over this share of the
/// window: the generator is saturated. Measured on a loaded 2-core machine: 0.78-0.88 for
/// one worker thread offered 200,000/s, 0.04-0.11 while a slow target was the limit (a
/// thread also sleeps in epoll between bursts, so a saturated one rarely shows 1.0).
pub const BUSY_SATURATED: f64 = 0.7;
/// Hard failure: an error rate over this many times the SLO's budget (and at least
/// [`HARD_ERROR_FLOOR`]).
pub const HARD_ERROR_FACTOR: f64 = 10.0;
pub const HARD_ERROR_FLOOR: f64 = 0.05;

#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    /// Within the SLO, the offered rate sustained.
    Pass,
    /// Broke the SLO; why.
    Fail(String),
    /// The target failed hard; stop.
    Hard(String),
    /// Volley could not generate the load; stop.
    GeneratorBound(String),
}

/// Judge `s`, a probe at `offered` requests/s run on `threads` worker threads.
pub fn judge(slo: &Slo, s: &Step, offered: f64, threads: usize) -> Verdict {
    if s.refused > 0 && s.refused * 100 >= s.requests.max(1) {
        return Verdict::Hard(format!(
            "connections refused ({} of {} requests)",
            s.refused, s.requests
        ));
    }
    let hard = (slo.error_budget() * HARD_ERROR_FACTOR).max(HARD_ERROR_FLOOR);
    if s.error_rate > hard {
        return Verdict::Hard(format!(
            "error rate {:.1}% (the SLO allows {}%)",
            s.error_rate * 100.0,
            volley_metrics::fmt::short(slo.error_budget() * 100.0)
        ));
    }
    let mut why = slo.check(s).err().into_iter().collect::<Vec<_>>();
    if s.dropped * 100 > s.requests.max(1) {
        why.push(format!(
            "{} starts dropped (the load was not sustained)",
            s.dropped
        ));
    }
    if offered > 0.0 && s.throughput < SUSTAINED * offered {
        why.push(format!(
            "throughput {} below {:.0}% of the offered {}",
            super::rate_text(s.throughput),
            SUSTAINED * 100.0,
            super::rate_text(offered)
        ));
    }
    if why.is_empty() {
        return Verdict::Pass;
    }
    if let Some(g) = generator_bound(s, threads) {
        return Verdict::GeneratorBound(g);
    }
    Verdict::Fail(why.join(", "))
}

/// Why the generator, not the target, limited this step (None: it did not, as far as can be
/// told). The latency was mostly spent *before* requests were sent — the service time (send
/// to response) p99 under a quarter of the p99 measured from the due times — and Volley was
/// short of something: its worker threads saturated ([`super::busy`]: running or waiting for
/// a CPU), or starts late or dropped (no connection free in time). A slow target shows the
/// opposite: its service time is most of the latency.
fn generator_bound(s: &Step, threads: usize) -> Option<String> {
    if s.p99_ms <= 0.0 || s.service_p99_ms >= s.p99_ms / 4.0 {
        return None;
    }
    let waited = format!(
        "requests waited in Volley (p99 {} from their due time, {} from their send)",
        volley_metrics::fmt::ms(s.p99_ms),
        volley_metrics::fmt::ms(s.service_p99_ms)
    );
    if let Some(b) = s.generator_busy.filter(|b| *b >= BUSY_SATURATED) {
        return Some(format!(
            "{waited}; its {threads} worker thread(s) were busy {:.0}% of the time (running \
             or waiting for a CPU)",
            b * 100.0
        ));
    }
    let late = s.missed_starts + s.dropped;
    if late * 100 >= s.requests.max(1) {
        return Some(format!("{waited}; {late} requests started late or never"));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capacity::tests::step;

    #[test]
    fn a_probe_is_judged_on_the_slo_and_on_sustaining_the_offered_rate() {
        let slo = Slo::parse("p99<50ms,error_rate<1%").unwrap();
        assert_eq!(
            judge(&slo, &step(400.0, 398.0, 20.0, 0.0), 400.0, 2),
            Verdict::Pass
        );
        let Verdict::Fail(why) = judge(&slo, &step(400.0, 300.0, 20.0, 0.0), 400.0, 2) else {
            panic!()
        };
        assert!(why.contains("below 90%"), "{why}");
        let mut slow = step(800.0, 400.0, 900.0, 0.0);
        slow.service_p99_ms = 600.0;
        slow.missed_starts = 1000;
        assert!(matches!(judge(&slo, &slow, 800.0, 2), Verdict::Fail(_)));
    }

    #[test]
    fn hard_failures_and_a_saturated_generator_are_told_apart_from_a_broken_slo() {
        let slo = Slo::parse("p99<50ms,error_rate<0.1%").unwrap();
        let errors = step(800.0, 800.0, 5.0, 0.4);
        assert!(matches!(judge(&slo, &errors, 800.0, 2), Verdict::Hard(m) if m.contains("40.0%")));
        let mut refused = step(800.0, 800.0, 5.0, 0.0);
        refused.refused = 50;
        assert!(
            matches!(judge(&slo, &refused, 800.0, 2), Verdict::Hard(m) if m.contains("refused"))
        );
        let mut cpu = step(100_000.0, 40_000.0, 900.0, 0.0);
        cpu.service_p99_ms = 20.0;
        cpu.generator_busy = Some(0.97);
        assert!(
            matches!(judge(&slo, &cpu, 100_000.0, 1), Verdict::GeneratorBound(m) if m.contains("busy 97%"))
        );
        let mut late = step(100_000.0, 40_000.0, 900.0, 0.0);
        late.service_p99_ms = 1.2;
        late.missed_starts = 150_000;
        assert!(
            matches!(judge(&slo, &late, 100_000.0, 2), Verdict::GeneratorBound(m) if m.contains("late"))
        );
    }
}
