//! A B-tree map that keeps its greatest entry beside the tree.
//!
//! The hold book's maps take new keys at their end: a relative hold's
//! deadline is the latest yet, and a buyer's newest hold goes after the
//! others. `BTreeMap::last_entry` walks the tree's right edge from the root
//! on every call, a cache miss a level once the tree is big (a sale's
//! deadlines by the millisecond, one buyer's holds by the thousand), and the
//! hold path asked for it twice a call. Here the greatest entry is a field:
//! a key at or after it is found without the tree, which takes an entry only
//! when a greater key arrives (once a millisecond for deadlines, once a run
//! for a buyer's holds).

use std::collections::btree_map::{self, BTreeMap};
use std::iter::Chain;
use std::ops::{Bound, RangeBounds};

/// Entries by key; the greatest one outside the tree.
#[derive(Clone, Debug)]
pub(super) struct TailMap<K, V> {
    /// Every entry but the greatest, each key below `tail`'s.
    tree: BTreeMap<K, V>,
    /// The greatest entry; `None` only when the map is empty.
    tail: Option<(K, V)>,
}

/// Entries of a `TailMap` in a range of keys, in key order.
pub(super) type Range<'a, K, V> =
    Chain<btree_map::Range<'a, K, V>, std::option::IntoIter<(&'a K, &'a V)>>;

/// The same, to change the values.
pub(super) type RangeMut<'a, K, V> =
    Chain<btree_map::RangeMut<'a, K, V>, std::option::IntoIter<(&'a K, &'a mut V)>>;

impl<K: Ord + Copy, V> TailMap<K, V> {
    pub(super) const fn new() -> Self {
        TailMap {
            tree: BTreeMap::new(),
            tail: None,
        }
    }

    pub(super) fn len(&self) -> usize {
        self.tree.len() + usize::from(self.tail.is_some())
    }

    pub(super) fn get(&self, key: &K) -> Option<&V> {
        match &self.tail {
            Some((last, value)) if last == key => Some(value),
            Some((last, _)) if last < key => None,
            _ => self.tree.get(key),
        }
    }

    pub(super) fn get_mut(&mut self, key: &K) -> Option<&mut V> {
        match &mut self.tail {
            Some((last, value)) if *last == *key => Some(value),
            Some((last, _)) if *last < *key => None,
            _ => self.tree.get_mut(key),
        }
    }

    /// The value at `key`, made by `make` if there was none.
    pub(super) fn get_or_insert_with(&mut self, key: K, make: impl FnOnce() -> V) -> &mut V {
        match &self.tail {
            Some((last, _)) if *last == key => {}
            Some((last, _)) if *last > key => return self.tree.entry(key).or_insert_with(make),
            _ => {
                if let Some((last, value)) = self.tail.take() {
                    self.tree.insert(last, value);
                }
                self.tail = Some((key, make()));
            }
        }
        match &mut self.tail {
            Some((_, value)) => value,
            None => unreachable!("the tail was just set"),
        }
    }

    /// Adds `key`; the value it had, if it was there (then replaced).
    pub(super) fn insert(&mut self, key: K, value: V) -> Option<V> {
        match &mut self.tail {
            Some((last, old)) if *last == key => Some(std::mem::replace(old, value)),
            Some((last, _)) if *last > key => self.tree.insert(key, value),
            _ => {
                if let Some((last, old)) = self.tail.replace((key, value)) {
                    self.tree.insert(last, old);
                }
                None
            }
        }
    }

    pub(super) fn remove(&mut self, key: &K) -> Option<V> {
        match &self.tail {
            Some((last, _)) if last == key => {
                let (_, value) = std::mem::replace(&mut self.tail, self.tree.pop_last())?;
                Some(value)
            }
            Some((last, _)) if last < key => None,
            _ => self.tree.remove(key),
        }
    }

    pub(super) fn first_key_value(&self) -> Option<(&K, &V)> {
        self.tree
            .first_key_value()
            .or(self.tail.as_ref().map(|(key, value)| (key, value)))
    }

    pub(super) fn last_key_value(&self) -> Option<(&K, &V)> {
        self.tail.as_ref().map(|(key, value)| (key, value))
    }

    /// The greatest entry, to change its value.
    pub(super) fn last_mut(&mut self) -> Option<(&K, &mut V)> {
        self.tail.as_mut().map(|(key, value)| (&*key, value))
    }

    pub(super) fn pop_first(&mut self) -> Option<(K, V)> {
        self.tree.pop_first().or_else(|| self.tail.take())
    }

    pub(super) fn range(&self, range: impl RangeBounds<K>) -> Range<'_, K, V> {
        let tail = self
            .tail
            .as_ref()
            .filter(|(key, _)| range.contains(key))
            .map(|(key, value)| (key, value));
        self.tree.range(clipped(range)).chain(tail)
    }

    pub(super) fn range_mut(&mut self, range: impl RangeBounds<K>) -> RangeMut<'_, K, V> {
        let tail = self
            .tail
            .as_mut()
            .filter(|(key, _)| range.contains(key))
            .map(|(key, value)| (&*key, value));
        self.tree.range_mut(clipped(range)).chain(tail)
    }

    pub(super) fn iter(&self) -> Range<'_, K, V> {
        self.range(..)
    }

    pub(super) fn values(&self) -> impl Iterator<Item = &V> {
        self.iter().map(|(_, value)| value)
    }
}

/// `range` as owned bounds, for the tree.
fn clipped<K: Copy>(range: impl RangeBounds<K>) -> (Bound<K>, Bound<K>) {
    (range.start_bound().cloned(), range.end_bound().cloned())
}

impl<K: Ord + Copy, V> Default for TailMap<K, V> {
    fn default() -> Self {
        TailMap::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::ops::Bound::{Excluded, Included, Unbounded};

    proptest! {
        /// A tail map answers every question as a B-tree does, with keys
        /// coming in order, out of order, and going from either end.
        #[test]
        fn a_tail_map_answers_as_a_btree(
            steps in proptest::collection::vec((0u8..5, 0u8..40, 0u8..40), 1..300)
        ) {
            let mut map: TailMap<u8, u32> = TailMap::new();
            let mut model: BTreeMap<u8, u32> = BTreeMap::new();
            for (n, (step, key, probe)) in steps.into_iter().enumerate() {
                let value = n as u32;
                // Now and then a key after all others, as deadlines come.
                let key = if n % 4 == 0 { 40 + n as u8 % 200 } else { key };
                match step {
                    0 => prop_assert_eq!(map.remove(&key), model.remove(&key)),
                    1 => prop_assert_eq!(map.pop_first(), model.pop_first()),
                    2 => {
                        let made = *map.get_or_insert_with(key, || value);
                        prop_assert_eq!(made, *model.entry(key).or_insert(value));
                    }
                    3 => {
                        if let Some((_, value)) = map.last_mut() {
                            *value += 1;
                        }
                        if let Some(mut last) = model.last_entry() {
                            *last.get_mut() += 1;
                        }
                    }
                    _ => prop_assert_eq!(map.insert(key, value), model.insert(key, value)),
                }
                if let Some(value) = map.get_mut(&probe) {
                    *value += 7;
                }
                if let Some(value) = model.get_mut(&probe) {
                    *value += 7;
                }
                prop_assert_eq!(map.len(), model.len());
                prop_assert_eq!(map.get(&probe), model.get(&probe));
                prop_assert_eq!(map.first_key_value(), model.first_key_value());
                prop_assert_eq!(map.last_key_value(), model.last_key_value());
                prop_assert_eq!(map.iter().collect::<Vec<_>>(), model.iter().collect::<Vec<_>>());
                let bounds = [
                    (Unbounded, Included(probe)),
                    (Excluded(probe), Unbounded),
                    (Included(probe), Excluded(probe.saturating_add(9))),
                ];
                for bound in bounds {
                    prop_assert_eq!(
                        map.range(bound).collect::<Vec<_>>(),
                        model.range(bound).collect::<Vec<_>>()
                    );
                    prop_assert_eq!(map.range(bound).next_back(), model.range(bound).next_back());
                    prop_assert_eq!(
                        map.range_mut(bound).next_back().map(|(key, value)| (*key, *value)),
                        model.range_mut(bound).next_back().map(|(key, value)| (*key, *value))
                    );
                }
            }
        }
    }
}
