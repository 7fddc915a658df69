//! The allocator of the VUs' QuickJS runtimes: mimalloc, called directly (no size header as
//! in rquickjs' `RustAllocator`), and, in tests, a wrapper that measures what mimalloc's
//! size classes add to what QuickJS asks for.

extern "C" {
    // Part of mimalloc's basic API; libmimalloc-sys declares it only with its "extended"
    // feature (and the `cty` dependency that brings).
    fn mi_usable_size(p: *const std::ffi::c_void) -> usize;
}

/// QuickJS's allocations go straight to mimalloc: small blocks without a per-block header
/// and with finer size classes than glibc's 16-byte steps (a VU makes ~1,900 of them).
pub(crate) struct MiMalloc;

// SAFETY: every pointer comes from mimalloc (aligned to at least 8 bytes) and goes back to
// it; mi_usable_size reports what mi_malloc/mi_realloc made available.
unsafe impl rquickjs::allocator::Allocator for MiMalloc {
    fn alloc(&mut self, size: usize) -> *mut u8 {
        unsafe { libmimalloc_sys::mi_malloc(size).cast() }
    }

    fn calloc(&mut self, count: usize, size: usize) -> *mut u8 {
        match count.checked_mul(size) {
            Some(n) => unsafe { libmimalloc_sys::mi_zalloc(n).cast() },
            None => std::ptr::null_mut(),
        }
    }

    unsafe fn dealloc(&mut self, ptr: *mut u8) {
        unsafe { libmimalloc_sys::mi_free(ptr.cast()) }
    }

    unsafe fn realloc(&mut self, ptr: *mut u8, new_size: usize) -> *mut u8 {
        unsafe { libmimalloc_sys::mi_realloc(ptr.cast(), new_size).cast() }
    }

    unsafe fn usable_size(ptr: *mut u8) -> usize {
        unsafe { mi_usable_size(ptr.cast()) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rquickjs::allocator::Allocator;
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex};

    /// [`MiMalloc`], remembering the size QuickJS asked for of every live block.
    #[derive(Clone, Default)]
    struct Measured(Arc<Mutex<HashMap<usize, usize>>>);

    impl Measured {
        fn note(&self, p: *mut u8, size: usize) -> *mut u8 {
            if !p.is_null() {
                self.0.lock().unwrap().insert(p as usize, size);
            }
            p
        }

        /// (blocks, bytes asked for, bytes mimalloc gave) of the live blocks.
        fn live(&self) -> (usize, usize, usize) {
            let m = self.0.lock().unwrap();
            let usable: usize = m
                .keys()
                // SAFETY: live blocks of mimalloc.
                .map(|p| unsafe { MiMalloc::usable_size(*p as *mut u8) })
                .sum();
            (m.len(), m.values().sum(), usable)
        }
    }

    // SAFETY: MiMalloc's, plus bookkeeping.
    unsafe impl Allocator for Measured {
        fn alloc(&mut self, size: usize) -> *mut u8 {
            self.note(MiMalloc.alloc(size), size)
        }

        fn calloc(&mut self, count: usize, size: usize) -> *mut u8 {
            self.note(MiMalloc.calloc(count, size), count * size)
        }

        unsafe fn dealloc(&mut self, ptr: *mut u8) {
            self.0.lock().unwrap().remove(&(ptr as usize));
            unsafe { MiMalloc.dealloc(ptr) }
        }

        unsafe fn realloc(&mut self, ptr: *mut u8, new_size: usize) -> *mut u8 {
            self.0.lock().unwrap().remove(&(ptr as usize));
            let p = unsafe { MiMalloc.realloc(ptr, new_size) };
            self.note(p, new_size)
        }

        unsafe fn usable_size(ptr: *mut u8) -> usize {
            unsafe { MiMalloc::usable_size(ptr) }
        }
    }

    /// What mimalloc's size classes cost on what a VU's context allocates: the blocks of 8
    /// contexts with closures and objects like the shims', asked-for bytes against usable
    /// ones (docs/vus.md, "Outside QuickJS"). mimalloc rounds small sizes up to multiples of
    /// 8 bytes, larger ones to ~12.5 % steps.
    #[test]
    fn mimalloc_rounds_a_contexts_blocks_up_by_little() {
        let m = Measured::default();
        let rt = rquickjs::Runtime::new_with_alloc(m.clone()).unwrap();
        let before = m.live();
        let contexts: Vec<_> = (0..8)
            .map(|i| {
                let ctx = crate::rt::vu_context(&rt).unwrap();
                ctx.with(|ctx| {
                    let src = format!(
                        "globalThis.shim = {{ vu: {i}, get: (u, p) => [u, p], \
                         post(u, b) {{ return {{ u, b, n: {i} }}; }}, \
                         tags: {{ name: 'x{i}', group: '' }}, list: [1, 2, 3] }};"
                    );
                    ctx.eval::<(), _>(src).unwrap();
                });
                ctx
            })
            .collect();
        rt.run_gc();
        let after = m.live();
        let (blocks, asked, usable) = (after.0 - before.0, after.1 - before.1, after.2 - before.2);
        let waste = usable as f64 / asked as f64 - 1.0;
        eprintln!(
            "8 contexts: {blocks} blocks, {asked} bytes asked, {usable} usable (+{:.1} %)",
            waste * 100.0
        );
        // Sizes asked for, by block count: most are small.
        let mut sizes: HashMap<usize, usize> = HashMap::new();
        for s in m.0.lock().unwrap().values() {
            *sizes.entry(*s).or_default() += 1;
        }
        let mut top: Vec<_> = sizes.into_iter().collect();
        top.sort_by_key(|t| std::cmp::Reverse(t.1));
        for (size, n) in top.iter().take(12) {
            // SAFETY: asking mimalloc for the usable size of a fresh block of that size.
            let got = unsafe {
                let p = MiMalloc.alloc(*size);
                let u = MiMalloc::usable_size(p);
                MiMalloc.dealloc(p);
                u
            };
            eprintln!("  {n:5} blocks of {size} bytes (usable {got})");
        }
        assert!(blocks > 1000, "{blocks} blocks for 8 contexts");
        assert!(waste < 0.15, "mimalloc adds {:.1} %", waste * 100.0);
        drop(contexts);
    }
}
