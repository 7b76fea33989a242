//! A hash index that grows without ever moving all its entries in one call.
//!
//! An item with millions of buyers must not stop the server while its index
//! doubles, so growth works as Redis's own dict does: a bigger table is
//! allocated, inserts go there, and every insert moves a bounded number of
//! slots of the previous table across until it is empty. Lookups meanwhile
//! try the new table, then the old one.
//!
//! The tables are open-addressed with linear probing. Entries are never
//! removed (a ledger only grows), which keeps probing simple: a lookup stops
//! at the first empty slot. Each slot is `[u32; W]`:
//!
//! - word 0 is the entry's tag, the top 32 bits of its hash with the lowest
//!   bit set, so that 0 marks an empty slot. A table of 2^k slots puts an
//!   entry in slot `tag >> (32 - k)` or after it, so moving an entry needs
//!   its tag alone: no id is read back from the arena to hash it again.
//!   The order of slots is the order of tags, so the entries of a slot
//!   range of the old table land in one range of the new one: moving is a
//!   sequential pass over memory on both sides.
//! - the other words are the entry, as the ledger lays it out.
//!
//! An all-zero table is an empty one, so a new table comes from a zeroed
//! allocation: for a large table the allocator maps fresh zero pages
//! instead of clearing them, as Redis does for its dict's tables.

/// Fewest slots a table has.
const MIN_SLOTS: usize = 8;
/// Old-table slots moved across by each insert while resizing. A table
/// doubles when 3/4 full, so the move ends after `old slots / 16` inserts,
/// long before the new table (twice the slots, as full as the old one was
/// plus those inserts) needs to grow in turn.
const SLOTS_MOVED_PER_INSERT: usize = 16;

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

/// The tag stored for `hash`: never 0, which marks an empty slot.
pub fn tag_of(hash: u64) -> u32 {
    (hash >> 32) as u32 | 1
}

#[derive(Clone)]
struct Table<const W: usize> {
    slots: Vec<[u32; W]>,
    /// 32 minus the log2 of the slot count: a tag shifted right by this is
    /// its home slot.
    shift: u32,
    /// Occupied slots.
    len: usize,
}

impl<const W: usize> Table<W> {
    fn with_slots(count: usize) -> Self {
        let count = count.max(MIN_SLOTS).next_power_of_two();
        Table {
            slots: vec![[0; W]; count],
            shift: 32 - count.trailing_zeros(),
            len: 0,
        }
    }

    const fn empty() -> Self {
        Table {
            slots: Vec::new(),
            shift: 32,
            len: 0,
        }
    }

    fn mask(&self) -> usize {
        self.slots.len().wrapping_sub(1)
    }

    /// True if one more entry keeps the table at most 3/4 full.
    fn has_room(&self) -> bool {
        (self.len + 1) * 4 <= self.slots.len() * 3
    }

    /// The position of the entry with `tag` that `matches`, if any.
    fn position(&self, tag: u32, mut matches: impl FnMut(&[u32; W]) -> bool) -> Option<usize> {
        if self.slots.is_empty() {
            return None;
        }
        let mask = self.mask();
        let mut at = (tag >> self.shift) as usize & mask;
        // The table is never full, so an empty slot ends every probe.
        loop {
            let slot = self.slots.get(at)?;
            match slot.first() {
                Some(0) | None => return None,
                Some(stored) if *stored == tag && matches(slot) => return Some(at),
                _ => at = (at + 1) & mask,
            }
        }
    }

    fn home(&self, tag: u32) -> Option<&[u32; W]> {
        self.slots.get((tag >> self.shift) as usize & self.mask())
    }

    /// Puts `slot` (tag included) in the first free slot from its home.
    /// The caller has made room (`has_room`).
    fn put(&mut self, slot: [u32; W]) {
        let tag = slot.first().copied().unwrap_or(0);
        let mask = self.mask();
        let mut at = (tag >> self.shift) as usize & mask;
        while let Some(taken) = self.slots.get(at) {
            if taken.first() == Some(&0) {
                break;
            }
            at = (at + 1) & mask;
        }
        if let Some(free) = self.slots.get_mut(at) {
            *free = slot;
            self.len += 1;
        }
    }

    fn occupied(&self, from: usize) -> impl Iterator<Item = &[u32; W]> {
        self.slots
            .get(from..)
            .unwrap_or(&[])
            .iter()
            .filter(|slot| slot.first() != Some(&0))
    }
}

/// The previous table while its entries move to the current one.
#[derive(Clone)]
struct Resize<const W: usize> {
    table: Table<W>,
    /// Slots before this one have been moved.
    moved: usize,
}

/// Entries of `W - 1` words found by a 64-bit hash; see the module docs.
#[derive(Clone)]
pub struct Index<const W: usize> {
    table: Table<W>,
    resize: Option<Resize<W>>,
    len: usize,
}

impl<const W: usize> Default for Index<W> {
    fn default() -> Self {
        Index::new()
    }
}

impl<const W: usize> Index<W> {
    pub const fn new() -> Self {
        Index {
            table: Table::empty(),
            resize: None,
            len: 0,
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    /// True while entries of a previous table are still being moved.
    #[cfg(test)]
    pub fn is_resizing(&self) -> bool {
        self.resize.is_some()
    }

    /// The entry with `hash` that `matches`, slot word 0 being its tag.
    pub fn find(&self, hash: u64, mut matches: impl FnMut(&[u32; W]) -> bool) -> Option<&[u32; W]> {
        let tag = tag_of(hash);
        if let Some(at) = self.table.position(tag, &mut matches) {
            return self.table.slots.get(at);
        }
        // Entries already moved are found above, so what is found here has
        // not been moved yet and is the only copy.
        let old = &self.resize.as_ref()?.table;
        old.slots.get(old.position(tag, matches)?)
    }

    /// Starts loading the slots a lookup of `hash` reads first.
    pub fn prefetch(&self, hash: u64) {
        let tag = tag_of(hash);
        if let Some(home) = self.table.home(tag) {
            prefetch(home);
        }
        if let Some(home) = self.resize.as_ref().and_then(|old| old.table.home(tag)) {
            prefetch(home);
        }
    }

    /// The first entry with the tag of `hash` in the current table, without
    /// comparing ids: almost always the one a lookup will find, so that
    /// what it points to can be prefetched in turn.
    pub fn first_tagged(&self, hash: u64) -> Option<&[u32; W]> {
        let at = self.table.position(tag_of(hash), |_| true)?;
        self.table.slots.get(at)
    }

    pub fn find_mut(
        &mut self,
        hash: u64,
        mut matches: impl FnMut(&[u32; W]) -> bool,
    ) -> Option<&mut [u32; W]> {
        let tag = tag_of(hash);
        if let Some(at) = self.table.position(tag, &mut matches) {
            return self.table.slots.get_mut(at);
        }
        let old = &mut self.resize.as_mut()?.table;
        let at = old.position(tag, matches)?;
        old.slots.get_mut(at)
    }

    /// Adds an entry the caller has looked for and not found. Word 0 of
    /// `slot` is overwritten with the tag of `hash`.
    pub fn insert(&mut self, hash: u64, mut slot: [u32; W]) {
        if let Some(tag) = slot.first_mut() {
            *tag = tag_of(hash);
        }
        self.move_slots(SLOTS_MOVED_PER_INSERT);
        if !self.table.has_room() {
            // Only reached with a resize under way if the bound in
            // SLOTS_MOVED_PER_INSERT were wrong; finishing it keeps the
            // index exact whatever the cost.
            self.move_slots(usize::MAX);
            let slots = (self.table.slots.len() * 2).max(MIN_SLOTS);
            let previous = std::mem::replace(&mut self.table, Table::with_slots(slots));
            if previous.len > 0 {
                self.resize = Some(Resize {
                    table: previous,
                    moved: 0,
                });
            }
        }
        self.table.put(slot);
        self.len += 1;
    }

    /// Makes room for `additional` more entries in one allocation, when no
    /// resize is under way: what a loader does before bulk inserts.
    pub fn reserve(&mut self, additional: usize) {
        if self.resize.is_some() {
            return;
        }
        let wanted = (self.len + additional).saturating_mul(4) / 3 + 1;
        if wanted <= self.table.slots.len() {
            return;
        }
        let mut grown = Table::with_slots(wanted);
        for slot in self.table.occupied(0) {
            grown.put(*slot);
        }
        self.table = grown;
    }

    /// Moves up to `count` slots of the previous table to the current one.
    fn move_slots(&mut self, count: usize) {
        let Some(resize) = self.resize.as_mut() else {
            return;
        };
        let end = resize
            .moved
            .saturating_add(count)
            .min(resize.table.slots.len());
        for slot in resize.table.slots.get(resize.moved..end).unwrap_or(&[]) {
            if slot.first() != Some(&0) {
                self.table.put(*slot);
            }
        }
        resize.moved = end;
        if end == resize.table.slots.len() {
            self.resize = None;
        }
    }

    /// Every entry once, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = &[u32; W]> {
        let unmoved = self
            .resize
            .as_ref()
            .map(|resize| resize.table.occupied(resize.moved));
        self.table.occupied(0).chain(unmoved.into_iter().flatten())
    }

    /// Bytes of the tables.
    pub fn allocated(&self) -> usize {
        let slots = self.table.slots.capacity()
            + self
                .resize
                .as_ref()
                .map_or(0, |resize| resize.table.slots.capacity());
        slots * std::mem::size_of::<[u32; W]>()
    }
}

#[cfg(test)]
mod tests {
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
    fn the_old_table_is_gone_once_moved() {
        let mut index = Index::<3>::default();
        let mut key = 0u32;
        while !index.is_resizing() || index.len() < 1000 {
            index.insert(spread_hash(key), [0, key, key]);
            key += 1;
        }
        let during = index.allocated();
        while index.is_resizing() {
            index.insert(spread_hash(key), [0, key, key]);
            key += 1;
        }
        assert!(index.allocated() < during);
        assert_eq!(index.allocated(), index.table.slots.len() * 12);
    }

    #[test]
    fn reserve_sizes_once_and_keeps_entries() {
        let mut index = filled(0..10, spread_hash);
        index.reserve(100_000);
        let slots = index.table.slots.len();
        assert!(slots * 3 / 4 >= 100_010);
        for key in 10..100_010 {
            index.insert(spread_hash(key), [0, key, key.wrapping_mul(3)]);
        }
        assert_eq!(index.table.slots.len(), slots, "no growth after reserve");
        assert!(!index.is_resizing());
        for key in 0..100_010 {
            assert_eq!(get(&index, spread_hash, key), Some(key.wrapping_mul(3)));
        }
    }

    #[test]
    fn a_clone_taken_mid_resize_is_independent() {
        let mut index = filled(0..13, spread_hash);
        assert!(index.is_resizing());
        let copy = index.clone();
        if let Some(slot) = index.find_mut(spread_hash(3), |slot| slot[1] == 3) {
            slot[2] = 999;
        }
        assert_eq!(get(&index, spread_hash, 3), Some(999));
        assert_eq!(get(&copy, spread_hash, 3), Some(9));
    }

    proptest! {
        /// At every step of any number of resizes, lookups find exactly
        /// the keys inserted with their latest value, updates land where
        /// the next lookup reads, and iteration yields each entry once.
        #[test]
        fn exact_at_every_step(
            keys in proptest::collection::vec(0u32..5_000, 1..1_500),
            crowded in any::<bool>(),
            updates in proptest::collection::vec((0u32..5_000, any::<u32>()), 0..200),
        ) {
            let hash: fn(u32) -> u64 = if crowded { crowded_hash } else { spread_hash };
            let mut index = Index::<3>::default();
            let mut model: HashMap<u32, u32> = HashMap::new();
            let mut updates = updates.into_iter();
            for (step, key) in keys.into_iter().enumerate() {
                if index.find(hash(key), |slot| slot[1] == key).is_none() {
                    index.insert(hash(key), [0, key, key]);
                    model.insert(key, key);
                }
                if step % 7 == 0 {
                    if let Some((key, value)) = updates.next() {
                        if let Some(slot) = index.find_mut(hash(key), |slot| slot[1] == key) {
                            slot[2] = value;
                            model.insert(key, value);
                        }
                    }
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
    }
}
