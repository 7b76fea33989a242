//! A stable radix sort on a 32-bit key, for the passes over a whole item
//! that need its records grouped (by buyer, by index slot): on a million
//! records it takes a fraction of a comparison sort's time.

/// Bits sorted per pass: 2,048 counters stay in cache.
const DIGIT_BITS: u32 = 11;

/// Sorts `records` by `key`, stably, looking at the low `key_bits` bits of
/// the key only (at most 32): one pass per 11 bits. Records in order
/// already are left as they are.
pub fn sort_by_key<T: Copy>(records: &mut Vec<T>, key_bits: u32, key: impl Fn(&T) -> u32) {
    if records.is_sorted_by_key(&key) {
        return;
    }
    // Every slot is overwritten by each pass: a copy is just the
    // cheapest way to have the buffer.
    let mut sorted = records.clone();
    for shift in (0..key_bits.min(32)).step_by(DIGIT_BITS as usize) {
        let digit = |record: &T| ((key(record) >> shift) & ((1 << DIGIT_BITS) - 1)) as usize;
        let mut starts = [0usize; 1 << DIGIT_BITS];
        for record in records.iter() {
            if let Some(count) = starts.get_mut(digit(record)) {
                *count += 1;
            }
        }
        let mut next = 0;
        for start in starts.iter_mut() {
            let count = *start;
            *start = next;
            next += count;
        }
        for record in records.iter() {
            if let Some(start) = starts.get_mut(digit(record)) {
                if let Some(slot) = sorted.get_mut(*start) {
                    *slot = *record;
                }
                *start += 1;
            }
        }
        std::mem::swap(records, &mut sorted);
    }
}

/// The bits a key below `bound` needs.
pub fn bits_below(bound: usize) -> u32 {
    usize::BITS - bound.saturating_sub(1).leading_zeros()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn sorting_on_32_bits_is_stable_and_exact() {
        let mut records: Vec<(u32, u32)> = (0..100_000u32)
            .map(|n| (n.wrapping_mul(2_654_435_761), n))
            .collect();
        let mut expected = records.clone();
        expected.sort_by_key(|(key, _)| *key);
        sort_by_key(&mut records, 32, |(key, _)| *key);
        assert_eq!(records, expected);
    }

    proptest! {
        #[test]
        fn sorting_on_fewer_bits_sorts_keys_below_their_bound(
            bound in 1usize..5_000_000,
            seeds in prop::collection::vec(any::<u32>(), 0..3_000),
        ) {
            let mut records: Vec<(u32, usize)> = seeds
                .iter()
                .enumerate()
                .map(|(n, seed)| ((*seed as usize % bound) as u32, n))
                .collect();
            let mut expected = records.clone();
            expected.sort_by_key(|(key, _)| *key);
            sort_by_key(&mut records, bits_below(bound), |(key, _)| *key);
            prop_assert_eq!(records, expected);
        }
    }

    #[test]
    fn bits_below_counts_what_the_largest_key_needs() {
        assert_eq!(bits_below(1), 0);
        assert_eq!(bits_below(2), 1);
        assert_eq!(bits_below(8), 3);
        assert_eq!(bits_below(9), 4);
        assert_eq!(bits_below(1 << 21), 21);
    }
}
