use super::*;
use proptest::prelude::*;
use std::collections::HashMap;

/// A hash whose top bits collide often, to exercise long probes.
fn crowded_hash(key: u32) -> u64 {
    u64::from(key % 97).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ u64::from(key)
}

fn spread_hash(key: u32) -> u64 {
    u64::from(key).wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

/// Inserts keys 0..n; an entry is [tag, key, value].
fn filled(keys: impl Iterator<Item = u32>, hash: fn(u32) -> u64) -> Index<3> {
    let mut index = Index::default();
    for key in keys {
        index.insert(hash(key), [0, key, key.wrapping_mul(3)]);
    }
    index
}

fn get(index: &Index<3>, hash: fn(u32) -> u64, key: u32) -> Option<u32> {
    index
        .find(hash(key), |slot| slot[1] == key)
        .map(|slot| slot[2])
}

#[test]
fn a_resize_moves_entries_over_later_inserts() {
    let mut index = Index::<3>::default();
    let mut resizes = 0;
    for key in 0..100_000u32 {
        let was_resizing = index.is_resizing();
        index.insert(spread_hash(key), [0, key, key]);
        if index.is_resizing() && !was_resizing {
            resizes += 1;
        }
    }
    // 8, 16, ... 262,144 slots: every doubling but the first moved
    // entries step by step.
    assert!(resizes >= 14, "{resizes} resizes");
    assert_eq!(index.len(), 100_000);
}

#[test]
fn the_old_table_is_freed_segment_by_segment_as_it_is_moved() {
    let mut index = Index::<3>::default();
    let mut key = 0u32;
    while !index.is_resizing() || index.len() < 1000 {
        index.insert(spread_hash(key), [0, key, key]);
        key += 1;
    }
    let old_bytes = |index: &Index<3>| index.resize.as_ref().map(|old| old.table.allocated());
    let mut previous = old_bytes(&index).unwrap_or(0);
    let mut shrank = 0;
    while let Some(now) = old_bytes(&index) {
        assert!(now <= previous);
        shrank += usize::from(now < previous);
        previous = now;
        index.insert(spread_hash(key), [0, key, key]);
        key += 1;
    }
    assert!(shrank > 10, "freed in {shrank} steps");
    assert_eq!(index.allocated(), index.table.allocated());
    for key in 0..key {
        assert_eq!(get(&index, spread_hash, key), Some(key), "{key}");
    }
}

#[test]
fn reserve_sizes_once_and_keeps_entries() {
    let mut index = filled(0..10, spread_hash);
    index.reserve(100_000);
    let slots = index.table.slots;
    assert!(slots * 4 / 5 >= 100_010);
    for key in 10..100_010 {
        index.insert(spread_hash(key), [0, key, key.wrapping_mul(3)]);
    }
    assert_eq!(index.table.slots, slots, "no growth after reserve");
    assert!(!index.is_resizing());
    for key in 0..100_010 {
        assert_eq!(get(&index, spread_hash, key), Some(key.wrapping_mul(3)));
    }
}

#[test]
fn shrinking_gives_back_what_a_reserve_did_not_use() {
    let mut index = Index::<3>::default();
    index.reserve(1 << 20);
    for key in 0..3_000 {
        index.insert(spread_hash(key), [0, key, key.wrapping_mul(3)]);
    }
    let reserved = index.allocated();
    index.shrink_to_fit();
    assert!(
        index.allocated() * 20 < reserved,
        "{} of {reserved}",
        index.allocated()
    );
    assert_eq!(index.table.slots, 4_096);
    for key in 0..3_000 {
        assert_eq!(get(&index, spread_hash, key), Some(key.wrapping_mul(3)));
    }
    assert_eq!(get(&index, spread_hash, 3_000), None);
}

#[test]
fn a_clone_taken_mid_resize_is_independent() {
    let mut index = filled(0..13, spread_hash);
    assert!(index.is_resizing());
    let copy = index.clone();
    for key in 13..1_000 {
        index.insert(spread_hash(key), [0, key, key.wrapping_mul(3)]);
    }
    assert!(!index.is_resizing());
    assert_eq!(get(&copy, spread_hash, 3), Some(9));
    assert_eq!(get(&copy, spread_hash, 500), None);
    assert_eq!(copy.len(), 13);
    assert_eq!(get(&index, spread_hash, 500), Some(1_500));
}

proptest! {
    /// At every step of any number of resizes, lookups find exactly
    /// the keys inserted, and iteration yields each entry once.
    #[test]
    fn exact_at_every_step(
        keys in proptest::collection::vec(0u32..5_000, 1..1_500),
        crowded in any::<bool>(),
    ) {
        let hash: fn(u32) -> u64 = if crowded { crowded_hash } else { spread_hash };
        let mut index = Index::<3>::default();
        let mut model: HashMap<u32, u32> = HashMap::new();
        for (step, key) in keys.into_iter().enumerate() {
            // Every other step through the one-probe insert, which
            // refuses a key that is there.
            if step % 2 == 0 {
                let added = index.insert_new(hash(key), [0, key, key.wrapping_mul(7)], |slot| {
                    slot[1] == key
                });
                prop_assert_eq!(added, !model.contains_key(&key));
                model.insert(key, key.wrapping_mul(7));
            } else if index.find(hash(key), |slot| slot[1] == key).is_none() {
                index.insert(hash(key), [0, key, key.wrapping_mul(7)]);
                model.insert(key, key.wrapping_mul(7));
            }
            prop_assert_eq!(index.len(), model.len());
            for probe in [key, key ^ 1, key.wrapping_add(4_999)] {
                prop_assert_eq!(get(&index, hash, probe), model.get(&probe).copied());
            }
            if step % 97 == 0 || index.is_resizing() && step % 5 == 0 {
                let mut seen: Vec<(u32, u32)> =
                    index.iter().map(|slot| (slot[1], slot[2])).collect();
                seen.sort_unstable();
                let mut expected: Vec<(u32, u32)> = model.iter().map(|(k, v)| (*k, *v)).collect();
                expected.sort_unstable();
                prop_assert_eq!(seen, expected);
            }
        }
    }

    /// Entries added all at once are found exactly as if inserted one
    /// by one, iteration yields each once, and later inserts grow the
    /// table as usual; a key given twice refuses the whole lot and
    /// leaves the index as it was. Crowded hashes give long runs of
    /// one home slot and wrap past the end of the table.
    #[test]
    fn all_at_once_is_exact(
        keys in proptest::collection::vec(0u32..5_000, 0..2_000),
        crowded in any::<bool>(),
        started in any::<bool>(),
        later in 0u32..1_000,
    ) {
        let hash: fn(u32) -> u64 = if crowded { crowded_hash } else { spread_hash };
        // An index with entries already takes them one by one.
        let mut index = if started { filled(10_000..10_003, hash) } else { Index::<3>::default() };
        let before: Vec<[u32; 3]> = index.iter().copied().collect();
        let entries: Vec<[u32; 3]> = keys
            .iter()
            .map(|key| [tag_of(hash(*key)), *key, key.wrapping_mul(7)])
            .collect();
        let mut distinct = keys.clone();
        distinct.sort_unstable();
        distinct.dedup();
        let added = index.insert_all_new(entries, |one, other| one[1] == other[1]);
        prop_assert_eq!(added, distinct.len() == keys.len());
        if !added {
            if !started {
                let after: Vec<[u32; 3]> = index.iter().copied().collect();
                prop_assert_eq!(after, before);
            }
            return Ok(());
        }
        let offset = if started { 3 } else { 0 };
        prop_assert_eq!(index.len(), keys.len() + offset);
        for key in 0..5_000 {
            let expected = distinct.binary_search(&key).is_ok().then(|| key.wrapping_mul(7));
            prop_assert_eq!(get(&index, hash, key), expected);
        }
        let mut seen: Vec<u32> = index.iter().map(|slot| slot[1]).filter(|key| *key < 10_000).collect();
        seen.sort_unstable();
        prop_assert_eq!(seen, distinct.clone());
        for key in 5_000..5_000 + later {
            index.insert(hash(key), [0, key, key.wrapping_mul(7)]);
        }
        for key in (0..5_000 + later).step_by(7) {
            let known = key >= 5_000 || distinct.binary_search(&key).is_ok();
            prop_assert_eq!(get(&index, hash, key), known.then(|| key.wrapping_mul(7)));
        }
    }
}
