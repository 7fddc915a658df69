//! Pooled stacks: one mapping for many, a guard page that faults, dead pages released.

use super::*;
use corosensei::{Coroutine, CoroutineResult};
use std::os::unix::process::ExitStatusExt;
use std::process::Command;

/// Pooled stacks need MADV_GUARD_INSTALL (Linux 6.13+): say so and skip without it.
fn pooled_or_skip(s: &VuStack) -> bool {
    if !s.is_pooled() {
        eprintln!("skipped: this kernel has no MADV_GUARD_INSTALL (stacks are mmaps of their own)");
    }
    s.is_pooled()
}

fn mappings() -> usize {
    std::fs::read_to_string("/proc/self/maps")
        .map(|m| m.lines().count())
        .unwrap_or(0)
}

#[test]
fn two_hundred_stacks_take_a_few_mappings_not_four_hundred() {
    let first = VuStack::new().unwrap();
    if !pooled_or_skip(&first) {
        return;
    }
    let before = mappings();
    let stacks: Vec<VuStack> = (0..200).map(|_| VuStack::new().unwrap()).collect();
    let grown = mappings().saturating_sub(before);
    // 200 stacks are at most 4 new chunks (tests running meanwhile map a little too); with a
    // mapping and a guard per stack they were 400.
    assert!(grown <= 40, "200 stacks added {grown} mappings");
    assert!(stacks.iter().all(VuStack::is_pooled));
    // Each stack is usable from its base down to its limit, and no two overlap.
    let mut ranges: Vec<(usize, usize)> = stacks
        .iter()
        .map(|s| (s.limit().get(), s.base().get()))
        .collect();
    ranges.sort();
    for w in ranges.windows(2) {
        assert!(w[0].1 < w[1].0, "stacks overlap or touch: {w:?}");
    }
    for s in &stacks {
        let (lo, hi) = (s.limit().get() as *mut u8, (s.base().get() - 1) as *mut u8);
        // SAFETY: both ends are inside the stack's writable pages.
        unsafe {
            lo.write_volatile(1);
            hi.write_volatile(2);
            assert_eq!((lo.read_volatile(), hi.read_volatile()), (1, 2));
        }
    }
}

/// Resident pages of `[lo, hi)` (mincore).
fn resident(lo: usize, hi: usize) -> usize {
    let page = page();
    let n = (hi - lo) / page;
    let mut v = vec![0u8; n];
    // SAFETY: a page-aligned range of one of our mappings; `v` has a byte per page.
    let r = unsafe { libc::mincore(lo as *mut libc::c_void, n * page, v.as_mut_ptr()) };
    assert_eq!(r, 0, "mincore: {}", io::Error::last_os_error());
    v.iter().filter(|b| **b & 1 == 1).count()
}

/// Recurse `n` frames of 1 KiB, each checking its own bytes after the inner calls return.
#[inline(never)]
fn deep(n: usize, f: &mut dyn FnMut() -> u64) -> u64 {
    let mut buf = [n as u8; 1024];
    std::hint::black_box(&mut buf);
    let inner = if n == 0 { f() } else { deep(n - 1, f) };
    assert!(
        buf.iter().all(|b| *b == n as u8),
        "frame {n} was overwritten"
    );
    inner + 1
}

#[test]
fn a_long_wait_gives_back_the_pages_below_it_and_keeps_the_frames_above() {
    let stack = VuStack::new().unwrap();
    let frames = stack.frames();
    let mark = std::rc::Rc::new(std::cell::Cell::new(0usize));
    let m = mark.clone();
    let mut co = Coroutine::with_stack(stack, move |y: &corosensei::Yielder<(), ()>, ()| {
        // Touch ~200 KiB, return, then suspend 20 frames (20 KiB) deep, twice.
        deep(200, &mut || 0);
        deep(20, &mut || {
            for _ in 0..2 {
                let here = std::hint::black_box(0u8);
                m.set(std::ptr::addr_of!(here) as usize);
                y.suspend(());
            }
            7
        })
    });
    for round in 0..2 {
        assert!(matches!(co.resume(()), CoroutineResult::Yield(())));
        let before = resident(frames.low, frames.high);
        // SAFETY: suspended, its stack alive in `co`, the mark taken just before suspending.
        unsafe { frames.release_below(mark.get()) };
        let after = resident(frames.low, frames.high);
        if round == 0 {
            assert!(
                before >= 50,
                "{before} pages resident after 200 KiB of frames"
            );
        }
        assert!(
            after <= 16,
            "{after} pages resident 20 KiB deep (were {before})"
        );
    }
    // Every frame above the mark kept its bytes (`deep` asserts them on the way back).
    assert!(matches!(co.resume(()), CoroutineResult::Return(28)));
}

/// The child of [`a_native_recursion_past_the_stack_faults_on_its_guard_page`].
#[test]
#[ignore = "run by a_native_recursion_past_the_stack_faults_on_its_guard_page in a child"]
fn overflow_child() {
    if std::env::var_os("VOLLEY_STACK_OVERFLOW_CHILD").is_none() {
        return;
    }
    // Two neighbours: the recursion on `upper` must stop at the guard between them.
    let (lower, upper) = (VuStack::new().unwrap(), VuStack::new().unwrap());
    assert_eq!(
        lower.base().get() + page(),
        upper.limit().get(),
        "not neighbours"
    );
    let guard = upper.limit().get() - page();
    GUARD.store(guard, Ordering::SeqCst);
    let canary = (lower.base().get() - 8) as *mut u64;
    // SAFETY: the top word of `lower`, writable.
    unsafe { canary.write_volatile(0x5AFE) };
    CANARY.store(canary as usize, Ordering::SeqCst);
    on_fault_check_the_address();
    let mut co = Coroutine::with_stack(upper, |_: &corosensei::Yielder<(), ()>, ()| {
        deep(usize::MAX / 2, &mut || 0)
    });
    let _ = co.resume(());
    std::process::exit(4); // not reached: the recursion cannot end
}

static GUARD: AtomicU64Usize = AtomicU64Usize::new(0);
static CANARY: AtomicU64Usize = AtomicU64Usize::new(0);
type AtomicU64Usize = std::sync::atomic::AtomicUsize;

/// A SIGSEGV handler (on its own stack) that lets the fault kill the process only if it hit
/// the guard page with the neighbour's canary intact; otherwise exit code 3 or 5.
fn on_fault_check_the_address() {
    extern "C" fn handler(_: libc::c_int, info: *mut libc::siginfo_t, _: *mut libc::c_void) {
        // SAFETY: the kernel passes a valid siginfo for SA_SIGINFO handlers.
        let addr = unsafe { (*info).si_addr() } as usize;
        let guard = GUARD.load(Ordering::SeqCst);
        // SAFETY: the canary's address was written before the recursion started.
        let canary = unsafe { (CANARY.load(Ordering::SeqCst) as *const u64).read_volatile() };
        // SAFETY: async-signal-safe calls only.
        unsafe {
            if !(guard..guard + page()).contains(&addr) {
                libc::_exit(3);
            }
            if canary != 0x5AFE {
                libc::_exit(5);
            }
            libc::signal(libc::SIGSEGV, libc::SIG_DFL);
        }
    }
    let alt = Box::leak(vec![0u8; 64 * 1024].into_boxed_slice());
    // SAFETY: a leaked buffer as the alternate signal stack; a plain sigaction.
    unsafe {
        let ss = libc::stack_t {
            ss_sp: alt.as_mut_ptr().cast(),
            ss_flags: 0,
            ss_size: alt.len(),
        };
        assert_eq!(libc::sigaltstack(&ss, std::ptr::null_mut()), 0);
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = handler as *const () as usize;
        sa.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
        assert_eq!(libc::sigaction(libc::SIGSEGV, &sa, std::ptr::null_mut()), 0);
    }
}

#[test]
fn a_native_recursion_past_the_stack_faults_on_its_guard_page() {
    if !pooled_or_skip(&VuStack::new().unwrap()) {
        return;
    }
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "vu::stack::tests::overflow_child", "--ignored"])
        .args(["--nocapture", "--test-threads", "1"])
        .env("VOLLEY_STACK_OVERFLOW_CHILD", "1")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.signal(),
        Some(libc::SIGSEGV),
        "the child did not die of SIGSEGV on the guard page: {:?} (3: elsewhere, 5: the \
         neighbour was overwritten)\n{err}",
        out.status
    );
}
