//! Cost of a trend's exact-sample buffer (#15 item 5) on the recording hot path: records the
//! same microsecond values through `TrendAgg::record_us` (with the buffer) and through the
//! record path as it was before it (histogram, count, sum, min, max), into a fresh trend per
//! "interval" as a worker's recorder does, and prints ns per sample (median of 5 runs).
//!
//! Not part of the workspace (no cargo build in CI). Build it against the metrics library of
//! a cargo target dir (release: `cargo build --release -p volley-metrics`; the #[inline]
//! record path is compiled into this program with its -O either way):
//!
//! ```sh
//! D=$CARGO_TARGET_DIR/debug/deps
//! rustc -O --edition 2021 bench/trend_buffer.rs -o /tmp/trend_buffer -L $D \
//!   --extern volley_metrics=$(ls -t $D/libvolley_metrics-*.rlib | head -1) && /tmp/trend_buffer
//! ```

use std::time::Instant;
use volley_metrics::agg::TrendAgg;

/// The record path before the exact buffer (crates/metrics/src/agg.rs at 1abdcc9).
#[inline]
fn old_record_us(t: &mut TrendAgg, us: u64) {
    t.hist.record(us);
    let v = us as f64 / 1000.0;
    t.count += 1;
    t.sum += v;
    if v < t.min {
        t.min = v;
    }
    if v > t.max {
        t.max = v;
    }
}

fn main() {
    let mut x: u64 = 42;
    // 1 ms .. 50 ms latencies in µs.
    let vals: Vec<u64> = (0..4096)
        .map(|_| {
            x = x * 48_271 % 2_147_483_647;
            1000 + x % 49_000
        })
        .collect();
    println!("| samples per series and interval | before (ns/sample) | with buffer (ns/sample) |");
    println!("|---|---|---|");
    for per in [1usize, 10, 100, 1000, 2048, 20_000] {
        let rounds = 4_000_000 / per;
        let mut runs = [[0.0; 5]; 2];
        for rep in 0..5 {
            for (k, new) in [false, true].into_iter().enumerate() {
                let t0 = Instant::now();
                for r in 0..rounds {
                    let mut t = TrendAgg::new();
                    for i in 0..per {
                        let v = vals[(r + i) & 4095];
                        if new {
                            t.record_us(v)
                        } else {
                            old_record_us(&mut t, v)
                        }
                    }
                    std::hint::black_box(&t);
                }
                runs[k][rep] = t0.elapsed().as_nanos() as f64 / (rounds * per) as f64;
            }
        }
        let med = |mut r: [f64; 5]| {
            r.sort_by(f64::total_cmp);
            r[2]
        };
        println!("| {per} | {:.1} | {:.1} |", med(runs[0]), med(runs[1]));
    }
}
