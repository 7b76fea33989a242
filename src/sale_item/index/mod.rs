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
//!   bit set, so that 0 marks an empty slot. A table of n slots puts an
//!   entry in slot `tag × n / 2^32` or after it, so moving an entry needs
//!   its tag alone: no id is read back from the arena to hash it again.
//!   The order of slots is the order of tags, so the entries of a slot
//!   range of the old table land in one range of the new one: moving is a
//!   sequential pass over memory on both sides.
//! - the other words are the entry, as the ledger lays it out.
//!
//! A table is held in segments of 4,096 slots, each allocated (zeroed: an
//! all-zero slot is empty) when a slot in it is first written, and the old
//! table's segments are freed one by one as the move passes them. Growing
//! to millions of entries thus never allocates, clears or unmaps hundreds
//! of megabytes in one call: with one flat table, the allocator's clearing
//! of a reused block and the unmapping of the old one stopped the server
//! for 5–11 ms at 3 and 6 million buyers.

use super::radix::{bits_below, sort_by_key};
pub use crate::server::prefetch::prefetch;

/// Fewest slots a table has.
const MIN_SLOTS: usize = 8;
/// Slots per segment of a table: 32 KiB. Tables are
/// allocated and freed a segment at a time, so that no call pays for
/// zeroing or unmapping a table of hundreds of megabytes. Unit tests use
/// small segments, so that their tables span many.
const SEGMENT_SLOTS: usize = if cfg!(test) { 64 } else { 4096 };
/// Old-table slots moved across by each insert while resizing. A table
/// doubles when 4/5 full, so the move ends after `old slots / 64` inserts,
/// long before the new table (twice the slots, as full as the old one was
/// plus those inserts) needs to grow in turn; meanwhile both tables take
/// memory, so the move is kept short. 64 slots are 512 bytes read in order.
const SLOTS_MOVED_PER_INSERT: usize = 64;

/// The tag stored for `hash`: never 0, which marks an empty slot.
pub fn tag_of(hash: u64) -> u32 {
    (hash >> 32) as u32 | 1
}

/// The first slot an entry with `tag` may take in a table of `slots`.
fn home_slot(tag: u32, slots: usize) -> usize {
    // Tags are spread over the slots in order: a range of slots of the old
    // table moves to one range of the new one.
    ((u64::from(tag) * slots as u64) >> 32) as usize
}

/// An open-addressed table of `slots` slots, held in segments that are
/// allocated when a slot in them is first written. A missing segment reads
/// as empty slots. Any count of slots: a table sized for a load holds what
/// it needs, and the last segment's room past the end is never used.
#[derive(Clone)]
struct Table<const W: usize> {
    segments: Vec<Option<Vec<[u32; W]>>>,
    slots: usize,
    /// Occupied slots.
    len: usize,
}

impl<const W: usize> Table<W> {
    fn with_slots(count: usize) -> Self {
        // Any count: a table sized for a load holds just what it needs.
        let slots = count.max(MIN_SLOTS);
        Table {
            segments: vec![None; slots.div_ceil(SEGMENT_SLOTS)],
            slots,
            len: 0,
        }
    }

    const fn empty() -> Self {
        Table {
            segments: Vec::new(),
            slots: 0,
            len: 0,
        }
    }

    /// The slot after `at`, wrapping at the end.
    fn after(&self, at: usize) -> usize {
        if at + 1 >= self.slots {
            0
        } else {
            at + 1
        }
    }

    fn segment_len(&self) -> usize {
        self.slots.min(SEGMENT_SLOTS)
    }

    /// The slot at `at`; `None` if its segment is not allocated (empty)
    /// or `at` is out of range.
    fn slot(&self, at: usize) -> Option<&[u32; W]> {
        self.segments
            .get(at / SEGMENT_SLOTS)?
            .as_ref()?
            .get(at % SEGMENT_SLOTS)
    }

    /// The slot at `at`, its segment allocated (zeroed) if need be; `None`
    /// past the end, where a lookup would never find what was put.
    fn slot_mut(&mut self, at: usize) -> Option<&mut [u32; W]> {
        if at >= self.slots {
            return None;
        }
        let segment_len = self.segment_len();
        self.segments
            .get_mut(at / SEGMENT_SLOTS)?
            .get_or_insert_with(|| vec![[0; W]; segment_len])
            .get_mut(at % SEGMENT_SLOTS)
    }

    fn is_free(&self, at: usize) -> bool {
        self.slot(at).is_none_or(|slot| slot.first() == Some(&0))
    }

    /// True if one more entry keeps the table at most 4/5 full: a lookup
    /// of a missing id then reads about 13 slots (two cache lines) on
    /// average at the fullest, and the table costs 1.7 slots an entry
    /// over a doubling.
    fn has_room(&self) -> bool {
        (self.len + 1) * 5 <= self.slots * 4
    }

    fn home(&self, tag: u32) -> usize {
        home_slot(tag, self.slots)
    }

    /// The position of the entry with `tag` that `matches`, if any. Slots
    /// before `gone` have been moved out and freed (see `Resize`): a probe
    /// passes over them instead of stopping there.
    fn position(
        &self,
        tag: u32,
        gone: usize,
        mut matches: impl FnMut(&[u32; W]) -> bool,
    ) -> Option<usize> {
        let mut at = self.home(tag);
        // The table is never full, so an empty slot ends every probe; the
        // bound only guards the slots left behind a resize.
        for _ in 0..self.slots {
            if at < gone {
                at = gone;
            }
            let slot = self.slot(at)?;
            match slot.first() {
                Some(0) | None => return None,
                Some(stored) if *stored == tag && matches(slot) => return Some(at),
                _ => at = self.after(at),
            }
        }
        None
    }

    /// The first free slot from the home of `tag`, unless an entry with
    /// `tag` that `matches` comes first.
    fn free_unless(&self, tag: u32, mut matches: impl FnMut(&[u32; W]) -> bool) -> Option<usize> {
        let mut at = self.home(tag);
        for _ in 0..self.slots {
            match self.slot(at) {
                None => return Some(at),
                Some(slot) => match slot.first() {
                    Some(0) | None => return Some(at),
                    Some(stored) if *stored == tag && matches(slot) => return None,
                    _ => at = self.after(at),
                },
            }
        }
        None
    }

    /// Starts loading the home slot of `tag`.
    fn prefetch_home(&self, tag: u32) {
        if let Some(slot) = self.slot(self.home(tag)) {
            prefetch(slot);
        }
    }

    /// Puts `slot` (tag included) in the first free slot from its home.
    /// The caller has made room (`has_room`).
    fn put(&mut self, slot: [u32; W]) {
        let tag = slot.first().copied().unwrap_or(0);
        let mut at = self.home(tag);
        for _ in 0..self.slots {
            if self.is_free(at) {
                break;
            }
            at = self.after(at);
        }
        if let Some(free) = self.slot_mut(at) {
            *free = slot;
            self.len += 1;
        }
    }

    /// Occupied slots from position `from` on.
    fn occupied(&self, from: usize) -> impl Iterator<Item = &[u32; W]> {
        let first = from / SEGMENT_SLOTS;
        self.segments
            .iter()
            .enumerate()
            .skip(first)
            .filter_map(move |(number, segment)| {
                let skip = if number == first {
                    from % SEGMENT_SLOTS
                } else {
                    0
                };
                Some(segment.as_ref()?.get(skip..)?.iter())
            })
            .flatten()
            .filter(|slot| slot.first() != Some(&0))
    }

    fn allocated(&self) -> usize {
        let segments = self.segments.iter().flatten();
        self.segments.capacity() * std::mem::size_of::<Option<Vec<[u32; W]>>>()
            + segments
                .map(|segment| segment.capacity() * std::mem::size_of::<[u32; W]>())
                .sum::<usize>()
    }
}

/// The previous table while its entries move to the current one.
#[derive(Clone)]
struct Resize<const W: usize> {
    table: Table<W>,
    /// Slots before this one have been moved, and their segments freed.
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
        if let Some(at) = self.table.position(tag, 0, &mut matches) {
            return self.table.slot(at);
        }
        // Entries already moved are found above, so what is found here has
        // not been moved yet and is the only copy.
        let old = self.resize.as_ref()?;
        old.table.slot(old.table.position(tag, old.moved, matches)?)
    }

    /// Starts loading the slots a lookup of `hash` reads first.
    pub fn prefetch(&self, hash: u64) {
        let tag = tag_of(hash);
        self.table.prefetch_home(tag);
        if let Some(old) = self.resize.as_ref() {
            old.table.prefetch_home(tag);
        }
    }

    /// The first entry with the tag of `hash` in the current table, without
    /// comparing ids: almost always the one a lookup will find, so that
    /// what it points to can be prefetched in turn.
    pub fn first_tagged(&self, hash: u64) -> Option<&[u32; W]> {
        let at = self.table.position(tag_of(hash), 0, |_| true)?;
        self.table.slot(at)
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
            let slots = (self.table.slots * 2).max(MIN_SLOTS);
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

    /// Adds an entry unless one that `matches` is there already, and then
    /// returns false and changes nothing: a lookup and an insert in one
    /// probe, for a loader storing ids that must be unique. Word 0 of
    /// `slot` is overwritten with the tag of `hash`.
    pub fn insert_new(
        &mut self,
        hash: u64,
        mut slot: [u32; W],
        mut matches: impl FnMut(&[u32; W]) -> bool,
    ) -> bool {
        let tag = tag_of(hash);
        if self.resize.is_some() || !self.table.has_room() {
            // Growing: the two steps, rare in a load sized up front.
            if self.find(hash, &mut matches).is_some() {
                return false;
            }
            self.insert(hash, slot);
            return true;
        }
        // Without deletions, an entry that matches lies between its home
        // and the first free slot, which is where it would go.
        let Some(at) = self.table.free_unless(tag, matches) else {
            return false;
        };
        if let Some(tag_word) = slot.first_mut() {
            *tag_word = tag;
        }
        if let Some(free) = self.table.slot_mut(at) {
            *free = slot;
            self.table.len += 1;
            self.len += 1;
        }
        true
    }

    /// Adds `entries` (word 0 of each a tag, from `tag_of`) to an empty
    /// index at once, unless two of them are `same`: then returns false
    /// and leaves the index as it was. What a loader does with every
    /// record of an item once all are read.
    ///
    /// The entries are sorted by their home slot first, so that the table
    /// is written front to back: each entry goes to its home or just after
    /// the one before, with no probing and no cache miss, where inserting
    /// in the order the records came costs a miss per entry. Entries that
    /// would be the same have the same tag, and so the same home: only
    /// entries of one home are compared.
    pub fn insert_all_new(
        &mut self,
        mut entries: Vec<[u32; W]>,
        mut same: impl FnMut(&[u32; W], &[u32; W]) -> bool,
    ) -> bool {
        let tag = |entry: &[u32; W]| entry.first().copied().unwrap_or(0);
        if self.len > 0 || self.resize.is_some() {
            // Not what a loader meets (it starts empty): one by one. The
            // hash is rebuilt from the tag, which is all an insert keeps.
            return entries.into_iter().all(|entry| {
                let hash = u64::from(tag(&entry)) << 32;
                let arrived = entry;
                self.insert_new(hash, entry, |stored| {
                    stored.first() == arrived.first() && same(stored, &arrived)
                })
            });
        }
        let mut table = Table::with_slots(entries.len().saturating_mul(5) / 4 + 1);
        let slots = table.slots;
        let home = |entry: &[u32; W]| home_slot(tag(entry), slots) as u32;
        sort_by_key(&mut entries, bits_below(table.slots), home);
        let mut first_of_home = 0;
        for (number, entry) in entries.iter().enumerate() {
            let Some(first) = entries.get(first_of_home) else {
                break;
            };
            if home(first) != home(entry) {
                first_of_home = number;
                continue;
            }
            let earlier = entries.get(first_of_home..number).unwrap_or(&[]);
            if earlier
                .iter()
                .any(|other| tag(other) == tag(entry) && same(other, entry))
            {
                return false;
            }
        }
        let mut next_free = 0;
        let mut wrapped = Vec::new();
        for entry in entries {
            let at = (home(&entry) as usize).max(next_free);
            if at >= slots {
                // Past the end: these go round to the start, where the
                // front of the table is already written.
                wrapped.push(entry);
                continue;
            }
            if let Some(slot) = table.slot_mut(at) {
                *slot = entry;
                table.len += 1;
            }
            next_free = at + 1;
        }
        for entry in wrapped {
            table.put(entry);
        }
        self.len = table.len;
        self.table = table;
        true
    }

    /// Makes room for `additional` more entries at once, when no resize is
    /// under way: what a loader does before bulk inserts.
    pub fn reserve(&mut self, additional: usize) {
        if self.resize.is_some() {
            return;
        }
        let wanted = (self.len + additional).saturating_mul(5) / 4 + 1;
        if wanted <= self.table.slots {
            return;
        }
        let mut grown = Table::with_slots(wanted);
        for slot in self.table.occupied(0) {
            grown.put(*slot);
        }
        self.table = grown;
    }

    /// Gives back the slots a `reserve` made for entries that never came
    /// (a load cut short): the table shrinks to what its entries need.
    pub fn shrink_to_fit(&mut self) {
        self.move_slots(usize::MAX);
        let needed = (self.len.saturating_mul(5) / 4 + 1)
            .max(MIN_SLOTS)
            .next_power_of_two();
        if needed >= self.table.slots {
            return;
        }
        let mut smaller = Table::with_slots(needed);
        for slot in self.table.occupied(0) {
            smaller.put(*slot);
        }
        self.table = smaller;
    }

    /// Moves up to `count` slots of the previous table to the current one,
    /// freeing each of its segments once passed.
    fn move_slots(&mut self, count: usize) {
        let Some(resize) = self.resize.as_mut() else {
            return;
        };
        let end = resize.moved.saturating_add(count).min(resize.table.slots);
        for at in resize.moved..end {
            if let Some(slot) = resize.table.slot(at).copied() {
                if slot.first() != Some(&0) {
                    self.table.put(slot);
                }
            }
            if (at + 1) % SEGMENT_SLOTS == 0 || at + 1 == resize.table.slots {
                if let Some(segment) = resize.table.segments.get_mut(at / SEGMENT_SLOTS) {
                    *segment = None;
                }
            }
        }
        resize.moved = end;
        if end == resize.table.slots {
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
        self.table.allocated()
            + self
                .resize
                .as_ref()
                .map_or(0, |resize| resize.table.allocated())
    }
}

#[cfg(test)]
mod tests;
