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
        RedisAlloc.alloc(layout)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        RedisAlloc.dealloc(ptr, layout)
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        match raw::RedisModule_Calloc {
            // Rounded up to the alignment, as `RedisAlloc::alloc` does.
            Some(calloc) => {
                let size = (layout.size() + layout.align() - 1) & !(layout.align() - 1);
                calloc(1, size).cast()
            }
            None => RedisAlloc.alloc_zeroed(layout),
        }
    }
}
