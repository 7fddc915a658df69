//! What a sleeping VU keeps on the Rust heap (docs/vus.md, "Outside QuickJS"): this test
//! binary counts every allocation of the global allocator (QuickJS allocates through
//! mimalloc directly, so only Rust's side is counted), runs 1 and then 1 + `EXTRA` VUs that
//! each GET once and sleep, and compares the live heap while they all sleep. The target
//! runs in a child process so its connections do not count.
//!
//! `cargo test -p volley-js --test vu_rust_heap -- --nocapture` prints the bytes per VU and
//! the sizes of the blocks each VU keeps.

mod common;
use common::*;
use std::alloc::{GlobalAlloc, Layout, System};
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Live blocks by size: 16-byte steps up to 4 KiB, then one bucket for larger blocks.
const BUCKETS: usize = 257;

struct Counting;

static LIVE: AtomicI64 = AtomicI64::new(0);
static BY_SIZE: [AtomicI64; BUCKETS] = [const { AtomicI64::new(0) }; BUCKETS];

fn bucket(size: usize) -> usize {
    (size.saturating_sub(1) / 16).min(BUCKETS - 1)
}

// SAFETY: forwards to the system allocator; the counters never allocate.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        LIVE.fetch_add(l.size() as i64, Relaxed);
        BY_SIZE[bucket(l.size())].fetch_add(1, Relaxed);
        unsafe { System.alloc(l) }
    }

    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        LIVE.fetch_sub(l.size() as i64, Relaxed);
        BY_SIZE[bucket(l.size())].fetch_sub(1, Relaxed);
        unsafe { System.dealloc(p, l) }
    }

    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        LIVE.fetch_add(l.size() as i64, Relaxed);
        BY_SIZE[bucket(l.size())].fetch_add(1, Relaxed);
        unsafe { System.alloc_zeroed(l) }
    }

    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        LIVE.fetch_add(new as i64 - l.size() as i64, Relaxed);
        BY_SIZE[bucket(l.size())].fetch_sub(1, Relaxed);
        BY_SIZE[bucket(new)].fetch_add(1, Relaxed);
        unsafe { System.realloc(p, l, new) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// The child of [`a_sleeping_vu_keeps_little_on_the_rust_heap`]: a target on loopback that
/// lives until its parent closes its stdin.
#[test]
#[ignore = "run by a_sleeping_vu_keeps_little_on_the_rust_heap as its target process"]
fn target_child() {
    let t = target();
    println!("ADDR {}", t.local_addr());
    let mut line = String::new();
    let _ = std::io::stdin().read_line(&mut line);
}

type Snapshot = (i64, Vec<i64>);

fn snapshot() -> Snapshot {
    (
        LIVE.load(Relaxed),
        BY_SIZE.iter().map(|b| b.load(Relaxed)).collect(),
    )
}

/// The live heap while `n` VUs all sleep: the middle sample of the longest stretch in which
/// the heap moved by less than 0.5 % between samples 20 ms apart (the sleep).
fn sleeping_heap(base: &str, n: usize) -> Snapshot {
    let samples: Arc<Mutex<Vec<Snapshot>>> = Arc::default();
    let done = Arc::new(AtomicBool::new(false));
    let sampler = {
        let (samples, done) = (samples.clone(), done.clone());
        std::thread::spawn(move || {
            // Bounded: a run is ~2 s; 30 s at most.
            for _ in 0..1500 {
                if done.load(Relaxed) {
                    break;
                }
                let s = snapshot();
                samples.lock().unwrap().push(s);
                std::thread::sleep(Duration::from_millis(20));
            }
        })
    };
    let out = run_script_at("vu_rust_heap.js", base, &[("N", &n.to_string())])
        .unwrap_or_else(|e| panic!("{e}"));
    done.store(true, Relaxed);
    sampler.join().unwrap();
    assert_eq!(counter(&out.result, "http_reqs", &[]), n as f64);
    let samples = std::mem::take(&mut *samples.lock().unwrap());
    let (mut best, mut start) = ((0, 0), 0);
    for i in 1..=samples.len() {
        let stable = i < samples.len() && {
            let (a, b) = (samples[i - 1].0, samples[i].0);
            (a - b).abs() * 200 <= a.abs().max(1)
        };
        if !stable {
            if i - start > best.1 - best.0 {
                best = (start, i);
            }
            start = i;
        }
    }
    samples[(best.0 + best.1) / 2].clone()
}

#[test]
fn a_sleeping_vu_keeps_little_on_the_rust_heap() {
    const EXTRA: usize = 200;
    let exe = std::env::current_exe().unwrap();
    let mut child = Command::new(exe)
        .args(["--ignored", "--exact", "target_child", "--nocapture"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("the target process starts");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let addr = lines
        .by_ref()
        .take(50)
        .map_while(Result::ok)
        .find_map(|l| l.strip_prefix("ADDR ").map(str::to_string))
        .expect("the target prints its address");
    let base = format!("http://{addr}");
    let one = sleeping_heap(&base, 1);
    let many = sleeping_heap(&base, 1 + EXTRA);
    drop(child.stdin.take());
    let _ = child.wait();
    let per_vu = (many.0 - one.0) as f64 / EXTRA as f64;
    eprintln!("Rust heap per sleeping VU: {per_vu:.0} bytes requested");
    for (i, (m, o)) in many.1.iter().zip(&one.1).enumerate() {
        let blocks = (m - o) as f64 / EXTRA as f64;
        if blocks.abs() >= 0.5 {
            let size = if i == BUCKETS - 1 {
                "> 4096".to_string()
            } else {
                format!("{}..={}", i * 16 + 1, i * 16 + 16)
            };
            eprintln!("  {blocks:5.2} blocks of {size} bytes");
        }
    }
    // Measured 2026-11-28 (opt-level 2): 8,793 bytes before the prepared requests grew from
    // one slot and the stop token's rare waits were boxed, 7,036 after (docs/vus.md). A VU
    // that keeps a request's buffers or a response while sleeping is KiBs more.
    assert!(per_vu > 500.0, "{per_vu} bytes per VU: nothing counted?");
    assert!(per_vu < 8000.0, "{per_vu} bytes per sleeping VU");
}
