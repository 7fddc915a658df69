//! volley-monitor: watching the target while it is loaded, on the run's own timeline.
//!
//! A soak test exists to catch what grows. This crate samples the target's resources once per
//! interval and records them as gauges named `monitor_*` (tagged `target`) into a
//! [`volley_metrics::Recorder`], so they travel like any worker's metrics: into the run's
//! totals and its per-second series, the summary, the HTML report and comparisons. It then
//! judges drift from those series. It depends on std and the metrics core only: everything is
//! read from `/proc`, cgroup v2 files or a Prometheus endpoint over a plain TCP socket.
//!
//! Layout:
//! - [`spec`]: the `--monitor` grammar (`pid:N`, `cmd:NAME`, `cgroup:/path`, `url:...`,
//!   optionally `NAME=spec`).
//! - [`procfs`]: one process's RSS, private dirty memory, CPU ticks, threads, fds, I/O and
//!   context switches; finding a process tree by name.
//! - [`cgroup`]: memory.current/stat, cpu.stat and pressure of a cgroup v2 directory.
//! - [`prom`]: the Prometheus text format parser and a small blocking scraper.
//! - [`sampler`]: [`Monitor`], which samples every target, turns CPU ticks into percent and
//!   records the gauges; notes targets that went away.
//! - [`drift`]: least-squares slope per hour, `drift(p95)` and the checks `slope<5MB/h`,
//!   `max<2GB`, `drift(p95)<10%` evaluated on a finished run (also for script thresholds).
//! - [`summary`]: the "Target" section of end-of-run summaries (start, peak, end, slope, CPU).
//! - [`mod@watch`]: `volley monitor`'s run: sample every interval, live table and CSV, the result.

pub mod cgroup;
pub mod drift;
pub mod procfs;
pub mod prom;
pub mod sampler;
pub mod spec;
pub mod summary;
pub mod watch;

pub use drift::{evaluate, is_drift_check, Check, Outcome};
pub use sampler::{spawn_sampler, validate, Monitor, Reading, Tick};
pub use spec::{MonitorSpec, Source};
pub use summary::{summarize, TargetSummary};
pub use watch::{watch, WatchPlan, Watched};
