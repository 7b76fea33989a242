//! A CPU cache hint for the sale item's index and ledger: the one
//! instruction the pure core needs that safe Rust does not offer.

/// Asks the CPU to start loading the cache line of `value`, so that a
/// lookup coming shortly after finds it there. Loaders and full passes over
/// an item issue these a few records ahead: each record's lookup is a cache
/// miss, and misses awaited together cost about one.
#[inline]
pub fn prefetch<T>(value: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint that never faults and reads nothing
    // into the program, whatever the address.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>((value as *const T).cast::<i8>());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = value;
}
