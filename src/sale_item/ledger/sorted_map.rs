//! A map kept in key order that stays a sorted vector while small, and the
//! hold book's estimate of what its allocations take.

use super::tail_map::{self, TailMap};
#[cfg(test)]
use std::collections::BTreeMap;
use std::ops::Bound::{Included, Unbounded};
use std::sync::atomic::{AtomicBool, Ordering};

/// A map in key order that is a sorted vector while it has at most `SMALL`
/// entries, and sorted runs of entries past that. Keys mostly come in order
/// (deadlines of relative holds, handles of new records), so a new one goes
/// at the end of the last vector or run with no search: a buyer placing
/// hold after hold pays the same for the thousandth as for the first, where
/// a B-tree of its holds cost a search of comparisons on every one. The
/// runs bound what a key added or removed in the middle of a big map moves.
#[derive(Clone, Debug)]
pub(super) enum SortedMap<K, V, const SMALL: usize> {
    Small(Vec<(K, V)>),
    Large(Runs<K, V>),
}

/// Entries in sorted runs of at most `run` (see `run_len`), each run
/// filed in a B-tree under a key no greater than its first entry's and
/// greater than every entry of the runs before it. The last run, where new
/// keys go, sits beside the tree (see `TailMap`).
#[derive(Clone, Debug)]
pub(super) struct Runs<K, V> {
    runs: TailMap<K, Vec<(K, V)>>,
    len: usize,
}

/// Entries a run holds at most: every run is allocated this many, so that
/// what the map holds is counted from the number of runs alone.
const fn run_len(small: usize) -> usize {
    if cfg!(test) {
        3
    } else if small > 64 {
        small
    } else {
        64
    }
}

/// Entries of a `SortedMap`, in key order.
#[derive(Clone)]
pub(super) enum Entries<'a, K, V> {
    Small(std::slice::Iter<'a, (K, V)>),
    Large {
        runs: tail_map::Range<'a, K, Vec<(K, V)>>,
        run: std::slice::Iter<'a, (K, V)>,
        /// Entries with keys at most this are skipped (the first run of
        /// `after`).
        after: Option<K>,
        /// Entries with keys past this end the walk (the last run of
        /// `up_to`).
        up_to: Option<K>,
    },
}

impl<K: Ord + Copy, V: Copy> Iterator for Entries<'_, K, V> {
    type Item = (K, V);

    fn next(&mut self) -> Option<(K, V)> {
        match self {
            Entries::Small(entries) => entries.next().copied(),
            Entries::Large {
                runs,
                run,
                after,
                up_to,
            } => loop {
                let Some(&(key, value)) = run.next() else {
                    *run = runs.next()?.1.iter();
                    continue;
                };
                if after.is_some_and(|after| key <= after) {
                    continue;
                }
                if up_to.is_some_and(|up_to| key > up_to) {
                    return None;
                }
                return Some((key, value));
            },
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

impl<K: Ord + Copy, V: Copy> Runs<K, V> {
    /// A run with room for `run` entries, and no more.
    fn new_run(run: usize) -> Vec<(K, V)> {
        Vec::with_capacity(run)
    }

    /// `entries`, in key order, cut into runs of `run`.
    fn of(entries: Vec<(K, V)>, run: usize) -> Runs<K, V> {
        let len = entries.len();
        let mut runs = TailMap::new();
        for chunk in entries.chunks(run) {
            let mut filed = Runs::new_run(run);
            filed.extend_from_slice(chunk);
            runs.insert(chunk[0].0, filed);
        }
        Runs { runs, len }
    }

    /// The run `key` belongs in, with the key it is filed under.
    fn run_of(&self, key: &K) -> Option<(&K, &Vec<(K, V)>)> {
        self.runs.range(..=*key).next_back()
    }

    fn get(&self, key: &K) -> Option<V> {
        let (_, run) = self.run_of(key)?;
        run.binary_search_by(|(at, _)| at.cmp(key))
            .ok()
            .map(|index| run[index].1)
    }

    fn insert(&mut self, key: K, value: V, run_len: usize) -> Option<V> {
        // The usual case: a key after every other, at the end of the last
        // run, or in a new one after it.
        if let Some((_, run)) = self.runs.last_mut() {
            if run.last().is_some_and(|(at, _)| *at < key) {
                if run.len() < run_len {
                    run.push((key, value));
                } else {
                    let mut next = Runs::new_run(run_len);
                    next.push((key, value));
                    self.runs.insert(key, next);
                }
                self.len += 1;
                return None;
            }
        }
        let Some((_, run)) = self.runs.range_mut(..=key).next_back() else {
            // Before every run: the first (or a new one) takes it at its
            // start and is filed anew under `key`.
            let mut first = match self.runs.pop_first() {
                Some((_, run)) => run,
                None => Runs::new_run(run_len),
            };
            self.len += 1;
            let upper = Runs::insert_at(&mut first, 0, (key, value), run_len);
            self.runs.insert(key, first);
            if let Some(upper) = upper {
                self.runs.insert(upper[0].0, upper);
            }
            return None;
        };
        let at = match run.binary_search_by(|(at, _)| at.cmp(&key)) {
            Ok(index) => return Some(std::mem::replace(&mut run[index].1, value)),
            Err(index) => index,
        };
        self.len += 1;
        if let Some(upper) = Runs::insert_at(run, at, (key, value), run_len) {
            self.runs.insert(upper[0].0, upper);
        }
        None
    }

    /// Puts `entry` at `at` in `run`; a full run splits in two halves,
    /// each with a run's room, and the upper one is returned to be filed.
    fn insert_at(
        run: &mut Vec<(K, V)>,
        at: usize,
        entry: (K, V),
        run_len: usize,
    ) -> Option<Vec<(K, V)>> {
        if run.len() < run_len {
            run.insert(at, entry);
            return None;
        }
        let half = run_len / 2;
        let mut upper = Runs::new_run(run_len);
        upper.extend(run.drain(half..));
        if at <= half {
            run.insert(at, entry);
        } else {
            upper.insert(at - half, entry);
        }
        Some(upper)
    }

    fn remove(&mut self, key: &K) -> Option<V> {
        let (&filed, run) = self.runs.range_mut(..=*key).next_back()?;
        let index = run.binary_search_by(|(at, _)| at.cmp(key)).ok()?;
        let (_, value) = run.remove(index);
        if run.is_empty() {
            self.runs.remove(&filed);
        }
        self.len -= 1;
        Some(value)
    }

    fn entries(&self) -> impl Iterator<Item = (K, V)> + '_ {
        self.runs.values().flatten().copied()
    }
}

impl<K: Ord + Copy, V: Copy, const SMALL: usize> SortedMap<K, V, SMALL> {
    const RUN: usize = run_len(SMALL);

    pub(super) const fn new() -> Self {
        SortedMap::Small(Vec::new())
    }

    pub(super) fn len(&self) -> usize {
        match self {
            SortedMap::Small(entries) => entries.len(),
            SortedMap::Large(runs) => runs.len,
        }
    }

    pub(super) fn get(&self, key: &K) -> Option<V> {
        match self {
            SortedMap::Small(entries) => entries
                .binary_search_by(|(at, _)| at.cmp(key))
                .ok()
                .map(|index| entries[index].1),
            SortedMap::Large(runs) => runs.get(key),
        }
    }

    /// Adds `key`; the value it had, if it was there (then replaced).
    pub(super) fn insert(&mut self, key: K, value: V) -> Option<V> {
        let entries = match self {
            SortedMap::Large(runs) => return runs.insert(key, value, Self::RUN),
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
            entries.insert(at, (key, value));
            *self = SortedMap::Large(Runs::of(std::mem::take(entries), Self::RUN));
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
            SortedMap::Large(runs) => {
                let value = runs.remove(key)?;
                // Back to a vector well below the threshold, so that one
                // key coming and going there does not convert each time.
                if runs.len <= SMALL / 4 {
                    *self = SortedMap::Small(runs.entries().collect());
                }
                Some(value)
            }
        }
    }

    pub(super) fn first_key(&self) -> Option<K> {
        match self {
            SortedMap::Small(entries) => entries.first().map(|(key, _)| *key),
            SortedMap::Large(runs) => runs
                .runs
                .first_key_value()
                .and_then(|(_, run)| run.first())
                .map(|(key, _)| *key),
        }
    }

    pub(super) fn last_key(&self) -> Option<K> {
        match self {
            SortedMap::Small(entries) => entries.last().map(|(key, _)| *key),
            SortedMap::Large(runs) => runs
                .runs
                .last_key_value()
                .and_then(|(_, run)| run.last())
                .map(|(key, _)| *key),
        }
    }

    pub(super) fn iter(&self) -> Entries<'_, K, V> {
        match self {
            SortedMap::Small(entries) => Entries::Small(entries.iter()),
            SortedMap::Large(runs) => Entries::Large {
                runs: runs.runs.range(..),
                run: [].iter(),
                after: None,
                up_to: None,
            },
        }
    }

    /// Entries with keys at most `key`.
    pub(super) fn up_to(&self, key: K) -> Entries<'_, K, V> {
        match self {
            SortedMap::Small(entries) => {
                let end = entries.partition_point(|(at, _)| *at <= key);
                Entries::Small(entries[..end].iter())
            }
            SortedMap::Large(runs) => Entries::Large {
                runs: runs.runs.range(..=key),
                run: [].iter(),
                after: None,
                up_to: Some(key),
            },
        }
    }

    /// Entries with keys after `key`.
    pub(super) fn after(&self, key: K) -> Entries<'_, K, V> {
        match self {
            SortedMap::Small(entries) => {
                let start = entries.partition_point(|(at, _)| *at <= key);
                Entries::Small(entries[start..].iter())
            }
            SortedMap::Large(runs) => Entries::Large {
                // From the run `key` is in, skipping what in it is not
                // after `key`.
                runs: match runs.run_of(&key) {
                    Some((filed, _)) => runs.runs.range((Included(*filed), Unbounded)),
                    None => runs.runs.range(..),
                },
                run: [].iter(),
                after: Some(key),
                up_to: None,
            },
        }
    }

    /// Bytes on the heap.
    pub(super) fn heap(&self) -> usize {
        Self::heap_of(self.shape())
    }

    /// What the heap bytes follow from: a vector's room, or a count of
    /// runs (each with a run's room), told apart.
    fn shape(&self) -> (bool, usize) {
        match self {
            SortedMap::Small(entries) => (false, entries.capacity()),
            SortedMap::Large(runs) => (true, runs.runs.len()),
        }
    }

    fn heap_of((large, count): (bool, usize)) -> usize {
        if large {
            count
                * (allocated(Self::RUN * std::mem::size_of::<(K, V)>())
                    + tree_entry::<K, Vec<(K, V)>>())
        } else {
            allocated(count * std::mem::size_of::<(K, V)>())
        }
    }

    /// [`SortedMap::insert`], keeping `heap`, a running total of heap
    /// bytes that counts this map's, in step. Most inserts allocate
    /// nothing: the bytes are worked out again only when the map's room
    /// changed.
    pub(super) fn insert_counted(&mut self, key: K, value: V, heap: &mut usize) -> Option<V> {
        let before = self.shape();
        let old = self.insert(key, value);
        let after = self.shape();
        if after != before {
            *heap = heap
                .saturating_sub(Self::heap_of(before))
                .saturating_add(Self::heap_of(after));
        }
        old
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
        /// A sorted map answers as a B-tree does, small or grown into runs
        /// (of three entries under test, split and emptied as keys come and
        /// go) and back.
        #[test]
        fn a_sorted_map_answers_as_a_btree(
            steps in proptest::collection::vec((0u8..3, 0u8..48, 0u8..48), 1..300)
        ) {
            let mut map: SortedMap<u8, u32, 6> = SortedMap::new();
            let mut model: BTreeMap<u8, u32> = BTreeMap::new();
            for (n, (step, key, probe)) in steps.into_iter().enumerate() {
                let value = n as u32;
                // Adds twice as often as it removes, so that the map grows
                // past its small size; now and then a key after all others.
                let key = if step == 2 && n % 3 == 0 { 48 + n as u8 % 200 } else { key };
                if step > 0 {
                    prop_assert_eq!(map.insert(key, value), model.insert(key, value));
                } else {
                    prop_assert_eq!(map.remove(&key), model.remove(&key));
                }
                prop_assert_eq!(map.len(), model.len());
                if let SortedMap::Large(runs) = &map {
                    // Every run has room for a run and no more, holds at
                    // least one entry, and is filed under a key at most its
                    // first.
                    for (filed, run) in runs.runs.iter() {
                        prop_assert!(!run.is_empty() && run.len() <= 3);
                        prop_assert_eq!(run.capacity(), 3);
                        prop_assert!(*filed <= run[0].0);
                    }
                }
                prop_assert_eq!(map.get(&probe), model.get(&probe).copied());
                prop_assert_eq!(map.last_key(), model.last_key_value().map(|(k, _)| *k));
                prop_assert_eq!(map.first_key(), model.first_key_value().map(|(k, _)| *k));
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
