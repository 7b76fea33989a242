//! A map kept in key order that stays a sorted vector while small, and the
//! hold book's estimate of what its allocations take.

use std::collections::{btree_map, BTreeMap};
use std::ops::Bound::{Excluded, Unbounded};
use std::sync::atomic::{AtomicBool, Ordering};

/// A map in key order that is a sorted vector while it has at most `SMALL`
/// entries, and a B-tree past that. Keys mostly come in order (deadlines
/// of relative holds, handles of new records), so the vector takes a new
/// one at its end with no search; the tree bounds what a removal from the
/// middle of a big one costs.
#[derive(Clone, Debug)]
pub(super) enum SortedMap<K, V, const SMALL: usize> {
    Small(Vec<(K, V)>),
    Large(BTreeMap<K, V>),
}

/// Entries of a `SortedMap`, in key order.
#[derive(Clone)]
pub(super) enum Entries<'a, K, V> {
    Small(std::slice::Iter<'a, (K, V)>),
    Large(btree_map::Range<'a, K, V>),
}

impl<K: Copy, V: Copy> Iterator for Entries<'_, K, V> {
    type Item = (K, V);

    fn next(&mut self) -> Option<(K, V)> {
        match self {
            Entries::Small(entries) => entries.next().copied(),
            Entries::Large(entries) => entries.next().map(|(key, value)| (*key, *value)),
        }
    }
}

/// A B-tree entry's share of the heap: a leaf holds up to 11 entries, and
/// keys added in order at the tree's right edge split full leaves into two
/// of about 6, so some 2.1 times the entry, inner nodes included
/// (measured against used_memory, tests/big_items.rs).
pub(super) const fn tree_entry<K, V>() -> usize {
    (std::mem::size_of::<K>() + std::mem::size_of::<V>()) * 21 / 10
}

impl<K: Ord + Copy, V: Copy, const SMALL: usize> SortedMap<K, V, SMALL> {
    pub(super) const fn new() -> Self {
        SortedMap::Small(Vec::new())
    }

    pub(super) fn len(&self) -> usize {
        match self {
            SortedMap::Small(entries) => entries.len(),
            SortedMap::Large(tree) => tree.len(),
        }
    }

    pub(super) fn get(&self, key: &K) -> Option<V> {
        match self {
            SortedMap::Small(entries) => entries
                .binary_search_by(|(at, _)| at.cmp(key))
                .ok()
                .map(|index| entries[index].1),
            SortedMap::Large(tree) => tree.get(key).copied(),
        }
    }

    /// Adds `key`; the value it had, if it was there (then replaced).
    pub(super) fn insert(&mut self, key: K, value: V) -> Option<V> {
        let entries = match self {
            SortedMap::Large(tree) => return tree.insert(key, value),
            SortedMap::Small(entries) => entries,
        };
        let at = match entries.last() {
            Some((last, _)) if *last >= key => {
                match entries.binary_search_by(|(at, _)| at.cmp(&key)) {
                    Ok(index) => return Some(std::mem::replace(&mut entries[index].1, value)),
                    Err(index) => index,
                }
            }
            _ => entries.len(),
        };
        if entries.len() < SMALL {
            if entries.capacity() == 0 {
                // Most buyers hold once: room for one, not four.
                entries.reserve_exact(1);
            }
            entries.insert(at, (key, value));
        } else {
            let mut tree: BTreeMap<K, V> = entries.drain(..).collect();
            tree.insert(key, value);
            *self = SortedMap::Large(tree);
        }
        None
    }

    /// Removes `key`; its value if it was there.
    pub(super) fn remove(&mut self, key: &K) -> Option<V> {
        match self {
            SortedMap::Small(entries) => {
                let index = entries.binary_search_by(|(at, _)| at.cmp(key)).ok()?;
                Some(entries.remove(index).1)
            }
            SortedMap::Large(tree) => {
                let value = tree.remove(key)?;
                // Back to a vector well below the threshold, so that one
                // key coming and going there does not convert each time.
                if tree.len() <= SMALL / 4 {
                    *self = SortedMap::Small(tree.iter().map(|(k, v)| (*k, *v)).collect());
                }
                Some(value)
            }
        }
    }

    pub(super) fn last_key(&self) -> Option<K> {
        match self {
            SortedMap::Small(entries) => entries.last().map(|(key, _)| *key),
            SortedMap::Large(tree) => tree.last_key_value().map(|(key, _)| *key),
        }
    }

    pub(super) fn iter(&self) -> Entries<'_, K, V> {
        match self {
            SortedMap::Small(entries) => Entries::Small(entries.iter()),
            SortedMap::Large(tree) => Entries::Large(tree.range(..)),
        }
    }

    /// Entries with keys at most `key`.
    pub(super) fn up_to(&self, key: K) -> Entries<'_, K, V> {
        match self {
            SortedMap::Small(entries) => {
                let end = entries.partition_point(|(at, _)| *at <= key);
                Entries::Small(entries[..end].iter())
            }
            SortedMap::Large(tree) => Entries::Large(tree.range(..=key)),
        }
    }

    /// Entries with keys after `key`.
    pub(super) fn after(&self, key: K) -> Entries<'_, K, V> {
        match self {
            SortedMap::Small(entries) => {
                let start = entries.partition_point(|(at, _)| *at <= key);
                Entries::Small(entries[start..].iter())
            }
            SortedMap::Large(tree) => Entries::Large(tree.range((Excluded(key), Unbounded))),
        }
    }

    /// Bytes on the heap.
    pub(super) fn heap(&self) -> usize {
        match self {
            SortedMap::Small(entries) => {
                allocated(entries.capacity() * std::mem::size_of::<(K, V)>())
            }
            SortedMap::Large(tree) => tree.len() * tree_entry::<K, V>(),
        }
    }
}

/// True while the server's allocator rounds requests up to size classes
/// (jemalloc, Redis's default); false for the C library's (Valkey built
/// with libc malloc). Set when the module loads; `used_memory` counts what
/// the allocator says an allocation can hold, so `MEMORY USAGE` follows it.
static SIZE_CLASSES: AtomicBool = AtomicBool::new(true);

/// Tells the estimates which allocator the server runs: `size_classes` for
/// jemalloc's.
pub fn set_allocator_size_classes(size_classes: bool) {
    SIZE_CLASSES.store(size_classes, Ordering::Relaxed);
}

/// What an allocation of `bytes` holds as the allocator counts it.
pub(super) fn allocated(bytes: usize) -> usize {
    if bytes == 0 {
        return 0;
    }
    if !SIZE_CLASSES.load(Ordering::Relaxed) {
        // A chunk of 16-byte multiples with an 8-byte header, 32 at least.
        return ((bytes + 8).div_ceil(16) * 16).max(32) - 8;
    }
    // Classes 16 bytes apart up to 128, then four to each doubling.
    if bytes <= 128 {
        return bytes.div_ceil(16) * 16;
    }
    let step = (bytes - 1).next_power_of_two() / 8;
    bytes.div_ceil(step) * step
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// A sorted map answers as a B-tree does, small or grown into one
        /// and back.
        #[test]
        fn a_sorted_map_answers_as_a_btree(
            steps in proptest::collection::vec((any::<bool>(), 0u8..24, 0u8..24), 1..120)
        ) {
            let mut map: SortedMap<u8, u32, 6> = SortedMap::new();
            let mut model: BTreeMap<u8, u32> = BTreeMap::new();
            for (n, (adds, key, probe)) in steps.into_iter().enumerate() {
                let value = n as u32;
                if adds {
                    prop_assert_eq!(map.insert(key, value), model.insert(key, value));
                } else {
                    prop_assert_eq!(map.remove(&key), model.remove(&key));
                }
                prop_assert_eq!(map.len(), model.len());
                prop_assert_eq!(map.get(&probe), model.get(&probe).copied());
                prop_assert_eq!(map.last_key(), model.last_key_value().map(|(k, _)| *k));
                let all: Vec<(u8, u32)> = model.iter().map(|(k, v)| (*k, *v)).collect();
                prop_assert_eq!(map.iter().collect::<Vec<_>>(), all.clone());
                let up_to: Vec<_> = all.iter().copied().filter(|(k, _)| *k <= probe).collect();
                prop_assert_eq!(map.up_to(probe).collect::<Vec<_>>(), up_to);
                let after: Vec<_> = all.iter().copied().filter(|(k, _)| *k > probe).collect();
                prop_assert_eq!(map.after(probe).collect::<Vec<_>>(), after);
            }
        }
    }
}
