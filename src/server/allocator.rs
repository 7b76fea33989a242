//! The module's global allocator: Redis's, so that `used_memory`,
//! `maxmemory` and `MEMORY USAGE` see every byte the module holds.
//!
//! It adds one thing to the crate's `RedisAlloc`: zeroed allocations go to
//! `RedisModule_Calloc`. A big item's index is a table that starts zeroed;
//! calloc lets the allocator hand over fresh pages, zero already, where the
//! default (allocate, then clear) would touch every page of a table of
//! hundreds of megabytes in one call.

use redis_module::alloc::RedisAlloc;
use redis_module::raw;
use std::alloc::{GlobalAlloc, Layout};

#[derive(Default, Debug, Clone, Copy)]
pub struct ModuleAlloc;

// SAFETY: every call forwards to Redis's allocator, which returns blocks
// aligned to their size class (as `RedisAlloc` relies on too).
unsafe impl GlobalAlloc for ModuleAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's layout contract, passed on unchanged.
        unsafe { RedisAlloc.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from this allocator with `layout`.
        unsafe { RedisAlloc.dealloc(ptr, layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the API pointer is set once at load, before any
        // allocation, and never written again.
        let calloc = unsafe { raw::RedisModule_Calloc };
        match calloc {
            // Rounded up to the alignment, as `RedisAlloc::alloc` does.
            Some(calloc) => {
                let size = (layout.size() + layout.align() - 1) & !(layout.align() - 1);
                // SAFETY: Redis's calloc, for one block of `size` bytes.
                unsafe { calloc(1, size) }.cast()
            }
            // SAFETY: the caller's layout contract, passed on unchanged.
            None => unsafe { RedisAlloc.alloc_zeroed(layout) },
        }
    }
}
