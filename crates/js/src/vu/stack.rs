//! VU coroutine stacks ([`CO_STACK`] each): carved out of large shared mappings, and given
//! back to the kernel below the suspension point while a VU waits long.
//!
//! Why shared mappings: corosensei's `DefaultStack` is one mmap plus an `mprotect`ed guard
//! page, two VMAs per VU, and Linux allows `vm.max_map_count` VMAs per process (65,530 by
//! default): about 32,000 VUs. Here a [`Chunk`] of [`CHUNK_SLOTS`] slots is one mapping, each
//! slot a guard page then the stack, and the guard pages are made with
//! `madvise(MADV_GUARD_INSTALL)` (Linux 6.13+), which marks page-table entries instead of
//! splitting the mapping: a chunk stays one VMA. Where the kernel refuses (EINVAL before
//! 6.13), every stack is a `DefaultStack`, as before. `VOLLEY_VU_STACKS=mmap` forces that (to
//! compare).
//!
//! Why give pages back: a stack's resident pages are its deepest use so far (VU init loads
//! modules, a request goes through the JS shims, rquickjs and the HTTP client), but a VU
//! sleeping between iterations only needs the frames above its suspension point.
//! [`Frames::release_below`] drops the pages below it (`MADV_DONTNEED`: they come back
//! zeroed on the next touch, for a page fault each); `JsVu` calls it once after init and
//! when an idle wait lasts [`release_delay`] (20 ms by default, `VOLLEY_STACK_RELEASE_MS`;
//! `off` never), so a busy VU never pays for it. 20 rather than 100 ms: a VU keeps its
//! request's deeper pages until then, and at 5,000 VUs sleeping 1 s that was ~4 MB of peak
//! RSS (bench/RESULTS.md, 2026-11-28 13:38); the cost is a madvise and two page faults per
//! wait of 20 ms or more.

use super::CO_STACK;
use corosensei::stack::{DefaultStack, Stack, StackPointer};
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

/// Stacks per chunk: 64 × (1 MiB + a page) of address space reserved at a time.
const CHUNK_SLOTS: usize = 64;
/// `MADV_GUARD_INSTALL` (linux/mman.h, 6.13): accesses to the range fault as a guard page.
const MADV_GUARD_INSTALL: libc::c_int = 102;
/// Kept below the suspension point: the frames of the switch itself (`Yielder::suspend`,
/// the saved registers: a few hundred bytes) lie below the mark taken before it.
const MARGIN: usize = 2048;

fn page() -> usize {
    static PAGE: OnceLock<usize> = OnceLock::new();
    // SAFETY: sysconf has no preconditions.
    *PAGE.get_or_init(|| match unsafe { libc::sysconf(libc::_SC_PAGESIZE) } {
        n if n > 0 => n as usize,
        _ => 4096,
    })
}

const DEFAULT_RELEASE_MS: u64 = 20;

/// How long an idle wait lasts before its stack's lower pages are released (None: never).
pub(crate) fn release_delay() -> Option<Duration> {
    static DELAY: OnceLock<Option<Duration>> = OnceLock::new();
    *DELAY.get_or_init(|| match std::env::var("VOLLEY_STACK_RELEASE_MS") {
        Ok(v) if v == "off" => None,
        Ok(v) => Some(Duration::from_millis(
            v.parse().unwrap_or(DEFAULT_RELEASE_MS),
        )),
        Err(_) => Some(Duration::from_millis(DEFAULT_RELEASE_MS)),
    })
}

/// A VU's coroutine stack.
pub(crate) enum VuStack {
    /// A slot of a shared chunk: `low` is its lowest usable byte (its guard page is below).
    Pooled { low: usize },
    /// A mapping of its own (the kernel has no `MADV_GUARD_INSTALL`).
    Own(DefaultStack),
}

impl VuStack {
    pub(crate) fn new() -> io::Result<VuStack> {
        let mut pool = POOL.lock().unwrap_or_else(|e| e.into_inner());
        if pool.mode == Mode::Unknown {
            pool.mode = match std::env::var("VOLLEY_VU_STACKS").as_deref() {
                Ok("mmap") => Mode::Own,
                _ => Mode::Guarded,
            };
        }
        if pool.mode == Mode::Guarded && pool.free.is_empty() {
            match Chunk::reserve() {
                Ok(slots) => pool.free.extend(slots),
                Err(e) if e.raw_os_error() == Some(libc::EINVAL) => pool.mode = Mode::Own,
                Err(e) => return Err(e),
            }
        }
        match pool.free.pop() {
            Some(low) => Ok(VuStack::Pooled { low }),
            None => DefaultStack::new(CO_STACK).map(VuStack::Own),
        }
    }

    /// Whether this stack came from a shared chunk (with an installed guard page).
    #[cfg(test)]
    pub(crate) fn is_pooled(&self) -> bool {
        matches!(self, VuStack::Pooled { .. })
    }

    /// Where its frames live, for [`Frames::release_below`] once the coroutine owns it.
    pub(crate) fn frames(&self) -> Frames {
        let low = match self {
            VuStack::Pooled { low } => *low,
            // DefaultStack's limit is the start of its mapping, its guard page included.
            VuStack::Own(s) => s.limit().get() + page(),
        };
        Frames {
            low,
            high: self.base().get(),
        }
    }
}

/// A stack's usable bytes, `[low, high)` (the guard page is below `low`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Frames {
    low: usize,
    high: usize,
}

impl Frames {
    /// Give the kernel back the pages below `mark`, an address in the frame of the suspended
    /// coroutine's last call before the switch (everything below it but the switch is dead).
    ///
    /// # Safety
    /// The coroutine on this stack must be suspended (not running), its stack alive, and
    /// `mark` taken as `VuState::suspend` takes it, on this stack.
    pub(crate) unsafe fn release_below(self, mark: usize) {
        let end = mark.saturating_sub(MARGIN) & !(page() - 1);
        if mark >= self.high || end <= self.low {
            return;
        }
        RELEASES.fetch_add(1, Ordering::Relaxed);
        let (p, len) = (self.low as *mut libc::c_void, end - self.low);
        // SAFETY: [low, end) is inside this stack's writable pages and below every live
        // frame (the caller's contract); the next touch maps a zero page.
        unsafe { libc::madvise(p, len, libc::MADV_DONTNEED) };
    }
}

/// Stack releases so far in this process (tests, `VOLLEY_DEBUG_VU_MEMORY`).
pub fn releases() -> u64 {
    RELEASES.load(Ordering::Relaxed)
}

static RELEASES: AtomicU64 = AtomicU64::new(0);

// SAFETY: base and limit delimit memory that is readable and writable for as long as the
// VuStack lives, with a guard page below the limit.
unsafe impl Stack for VuStack {
    fn base(&self) -> StackPointer {
        match self {
            VuStack::Pooled { low } => StackPointer::new(low + CO_STACK).expect("non-zero"),
            VuStack::Own(s) => s.base(),
        }
    }

    fn limit(&self) -> StackPointer {
        match self {
            VuStack::Pooled { low } => StackPointer::new(*low).expect("non-zero"),
            VuStack::Own(s) => s.limit(),
        }
    }
}

impl Drop for VuStack {
    fn drop(&mut self) {
        if let VuStack::Pooled { low } = *self {
            // The next VU starts with no resident page, as with a fresh mapping.
            // SAFETY: the coroutine on this stack is gone; its pages are ours.
            unsafe { libc::madvise(low as *mut libc::c_void, CO_STACK, libc::MADV_DONTNEED) };
            POOL.lock()
                .unwrap_or_else(|e| e.into_inner())
                .free
                .push(low);
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Unknown,
    Guarded,
    Own,
}

/// Free slots of every chunk so far (chunks stay mapped for the process's life: address
/// space only, their pages are released when a stack is freed).
struct Pool {
    mode: Mode,
    free: Vec<usize>,
}

static POOL: Mutex<Pool> = Mutex::new(Pool {
    mode: Mode::Unknown,
    free: Vec::new(),
});

/// One mapping of [`CHUNK_SLOTS`] stacks.
struct Chunk;

impl Chunk {
    /// Map a chunk and install its guard pages; the slots' lowest usable addresses, in
    /// reverse (so the free list hands them out from the chunk's start).
    fn reserve() -> io::Result<Vec<usize>> {
        let page = page();
        let slot = CO_STACK + page;
        let len = slot * CHUNK_SLOTS;
        // MAP_NORESERVE: address space, not committed memory (100,000 VUs are 100 GB of it).
        let flags = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE | libc::MAP_STACK;
        let prot = libc::PROT_READ | libc::PROT_WRITE;
        // SAFETY: a fresh anonymous mapping; nothing else refers to it.
        let base = unsafe { libc::mmap(std::ptr::null_mut(), len, prot, flags, -1, 0) };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let base = base as usize;
        // Transparent huge pages would make one touched byte cost 2 MiB.
        // SAFETY: advice on our own mapping.
        unsafe { libc::madvise(base as *mut libc::c_void, len, libc::MADV_NOHUGEPAGE) };
        for i in 0..CHUNK_SLOTS {
            let guard = (base + i * slot) as *mut libc::c_void;
            // SAFETY: the first page of slot i of our mapping.
            if unsafe { libc::madvise(guard, page, MADV_GUARD_INSTALL) } != 0 {
                let e = io::Error::last_os_error();
                // SAFETY: unmapping what we mapped; no slot was handed out.
                unsafe { libc::munmap(base as *mut libc::c_void, len) };
                return Err(e);
            }
        }
        Ok((0..CHUNK_SLOTS)
            .rev()
            .map(|i| base + i * slot + page)
            .collect())
    }
}

#[cfg(test)]
#[path = "stack_tests.rs"]
mod tests;
