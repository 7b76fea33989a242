//! An item's pending holds, by deadline and by buyer, with the figures of
//! those that lapsed and wait for the sweep kept as they change.
//!
//! Reads and writes judge a lapsed hold as released (see `change`). Adding
//! the lapsed holds up on every call made a call cost as much as the
//! backlog the sweep had not reached yet: with 200,000 of them, a `GET`
//! took 1.8 ms. Here the holds are also counted by deadline, and buyers by
//! the moment all their units are in lapsed holds; the figures of
//! everything due up to a moment, the cursor, are kept. Moving the cursor
//! on walks the deadlines passed in between, not the holds (a wave of
//! holds made together lapses together, at a few distinct milliseconds),
//! and every change to a hold or a buyer behind the cursor adjusts the
//! figures in step.
//!
//! The cursor is a cache of what the holds determine, never state of its
//! own: reads move it through shared references, and an item saved, loaded,
//! replicated or cloned judges exactly as it would with the cursor anywhere
//! else.

use super::{units_in, HASHER};
use foldhash::fast::FoldHasher;
use std::collections::{btree_map, BTreeMap, HashMap};
use std::hash::BuildHasher;
use std::ops::Bound::{Excluded, Included, Unbounded};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

/// A pending hold: its deadline (Unix ms) and its request record.
pub type HoldRef = (i64, u32);

/// What a hold records besides its deadline and request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Held {
    qty: i64,
    /// The buyer's handle (see `Buyer::handle`).
    buyer: u32,
}

/// The holds due at a moment, as if released.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LapsedHolds {
    /// Holds due.
    pub count: usize,
    /// Their units.
    pub units: i64,
    /// Buyers all of whose units are in holds due: they hold nothing once
    /// those are released.
    pub emptied_buyers: usize,
}

/// Entries a bucket keeps in a sorted vector before it becomes a tree. A
/// wave of holds placed in one millisecond shares a bucket, hundreds of
/// them at full speed, and holds with one absolute deadline (`HOLDUNTIL` a
/// fixed time) share one for good. New holds have the highest handles, so
/// the vector takes each at its end; a hold ending in the middle moves at
/// most this many entries of 24 bytes (48 KiB, about 2 µs).
const BUCKET_SMALL: usize = if cfg!(test) { 4 } else { 2048 };
/// The same for one buyer's holds: a handful under any `LIMIT`, as many as
/// the buyer likes on an item without one.
const HOLDER_SMALL: usize = if cfg!(test) { 3 } else { 32 };

/// A map in key order that is a sorted vector while it has at most `SMALL`
/// entries, and a B-tree past that. Keys mostly come in order (deadlines
/// of relative holds, handles of new records), so the vector takes a new
/// one at its end with no search; the tree bounds what a removal from the
/// middle of a big one costs.
#[derive(Clone, Debug)]
enum SortedMap<K, V, const SMALL: usize> {
    Small(Vec<(K, V)>),
    Large(BTreeMap<K, V>),
}

/// Entries of a `SortedMap`, in key order.
#[derive(Clone)]
enum Entries<'a, K, V> {
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
const fn tree_entry<K, V>() -> usize {
    (std::mem::size_of::<K>() + std::mem::size_of::<V>()) * 21 / 10
}

impl<K: Ord + Copy, V: Copy, const SMALL: usize> SortedMap<K, V, SMALL> {
    const fn new() -> Self {
        SortedMap::Small(Vec::new())
    }

    fn len(&self) -> usize {
        match self {
            SortedMap::Small(entries) => entries.len(),
            SortedMap::Large(tree) => tree.len(),
        }
    }

    fn get(&self, key: &K) -> Option<V> {
        match self {
            SortedMap::Small(entries) => entries
                .binary_search_by(|(at, _)| at.cmp(key))
                .ok()
                .map(|index| entries[index].1),
            SortedMap::Large(tree) => tree.get(key).copied(),
        }
    }

    /// Adds `key`; the value it had, if it was there (then replaced).
    fn insert(&mut self, key: K, value: V) -> Option<V> {
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
    fn remove(&mut self, key: &K) -> Option<V> {
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

    fn last_key(&self) -> Option<K> {
        match self {
            SortedMap::Small(entries) => entries.last().map(|(key, _)| *key),
            SortedMap::Large(tree) => tree.last_key_value().map(|(key, _)| *key),
        }
    }

    fn iter(&self) -> Entries<'_, K, V> {
        match self {
            SortedMap::Small(entries) => Entries::Small(entries.iter()),
            SortedMap::Large(tree) => Entries::Large(tree.range(..)),
        }
    }

    /// Entries with keys at most `key`.
    fn up_to(&self, key: K) -> Entries<'_, K, V> {
        match self {
            SortedMap::Small(entries) => {
                let end = entries.partition_point(|(at, _)| *at <= key);
                Entries::Small(entries[..end].iter())
            }
            SortedMap::Large(tree) => Entries::Large(tree.range(..=key)),
        }
    }

    /// Entries with keys after `key`.
    fn after(&self, key: K) -> Entries<'_, K, V> {
        match self {
            SortedMap::Small(entries) => {
                let start = entries.partition_point(|(at, _)| *at <= key);
                Entries::Small(entries[start..].iter())
            }
            SortedMap::Large(tree) => Entries::Large(tree.range((Excluded(key), Unbounded))),
        }
    }

    /// Bytes on the heap.
    fn heap(&self) -> usize {
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
fn allocated(bytes: usize) -> usize {
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

/// The pending holds sharing one deadline, by request handle.
#[derive(Clone, Debug)]
struct Bucket {
    units: i64,
    holds: SortedMap<u32, Held, BUCKET_SMALL>,
}

/// A buyer with pending holds.
#[derive(Clone, Debug)]
struct Holder {
    /// Units in the buyer's pending holds.
    held: i64,
    /// When every unit the buyer has is in lapsed holds, if ever.
    emptied_at: Option<i64>,
    /// The buyer's holds, (deadline, request) to units.
    holds: SortedMap<HoldRef, i64, HOLDER_SMALL>,
}

/// Hashes buyer handles with the ledger's seed, drawn once per process.
#[derive(Clone, Copy, Default)]
struct HandleHasher;

impl BuildHasher for HandleHasher {
    type Hasher = FoldHasher<'static>;

    fn build_hasher(&self) -> FoldHasher<'static> {
        HASHER.build_hasher()
    }
}

/// The figures of what is due at the cursor.
#[derive(Clone, Copy, Debug)]
struct Cursor {
    /// `figures` count what is due at or before this.
    through: i64,
    /// The earliest moment after `through` at which something falls due;
    /// `i64::MAX` with none, `i64::MIN` when not known.
    next: i64,
    figures: LapsedHolds,
}

impl Cursor {
    const fn new() -> Cursor {
        Cursor {
            through: i64::MIN,
            next: i64::MIN,
            figures: LapsedHolds {
                count: 0,
                units: 0,
                emptied_buyers: 0,
            },
        }
    }
}

pub struct HoldBook {
    /// Pending holds by deadline: what the sweep releases in order, and
    /// what the cursor walks (a deadline at a time, not a hold).
    by_deadline: BTreeMap<i64, Bucket>,
    /// Buyers with pending holds: a buyer's holds without a walk of all.
    holders: HashMap<u32, Holder, HandleHasher>,
    /// How many buyers are emptied at each moment.
    emptied: BTreeMap<i64, usize>,
    /// Pending holds.
    len: usize,
    /// The earliest deadline, kept: every write of an item with holds asks
    /// for it, and it sits at the far left of `by_deadline`.
    first: Option<i64>,
    /// Bytes the buckets' and the holders' own maps hold on the heap.
    maps_heap: usize,
    /// Moved on by reads too, hence the lock; nothing else takes it, so
    /// taking it is one atomic operation.
    cursor: Mutex<Cursor>,
}

impl Default for HoldBook {
    fn default() -> HoldBook {
        HoldBook::new()
    }
}

impl Clone for HoldBook {
    fn clone(&self) -> HoldBook {
        HoldBook {
            by_deadline: self.by_deadline.clone(),
            holders: self.holders.clone(),
            emptied: self.emptied.clone(),
            len: self.len,
            first: self.first,
            maps_heap: self.maps_heap,
            cursor: Mutex::new(*self.cursor()),
        }
    }
}

/// True if a buyer holding `units`, `due` of them in holds due, holds
/// nothing once those are released.
#[cfg(test)]
fn emptied(units: i64, due: i64) -> bool {
    units > 0 && due >= units
}

/// Counts one more (`add`) or one less buyer emptied at `moment`. A buyer
/// who holds again moves its moment to the new latest deadline, the last
/// key as a rule: found there without a search.
fn count_emptied(emptied: &mut BTreeMap<i64, usize>, moment: i64, add: bool) {
    if let Some(mut last) = emptied.last_entry() {
        if *last.key() == moment {
            if add {
                *last.get_mut() += 1;
            } else if *last.get() > 1 {
                *last.get_mut() -= 1;
            } else {
                last.remove();
            }
            return;
        }
    }
    if add {
        *emptied.entry(moment).or_default() += 1;
    } else if let Some(count) = emptied.get_mut(&moment) {
        *count -= 1;
        if *count == 0 {
            emptied.remove(&moment);
        }
    }
}

/// Keeps a running total of heap bytes as a map goes from `before` to
/// `after` bytes.
fn track(total: &mut usize, before: usize, after: usize) {
    *total = total.saturating_sub(before).saturating_add(after);
}

impl HoldBook {
    pub const fn new() -> HoldBook {
        HoldBook {
            by_deadline: BTreeMap::new(),
            holders: HashMap::with_hasher(HandleHasher),
            emptied: BTreeMap::new(),
            len: 0,
            first: None,
            maps_heap: 0,
            cursor: Mutex::new(Cursor::new()),
        }
    }

    fn cursor(&self) -> MutexGuard<'_, Cursor> {
        self.cursor.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn cursor_mut(&mut self) -> &mut Cursor {
        self.cursor
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn held(&self, hold: &HoldRef) -> Option<Held> {
        self.by_deadline.get(&hold.0)?.holds.get(&hold.1)
    }

    pub fn contains(&self, hold: &HoldRef) -> bool {
        self.held(hold).is_some()
    }

    /// The units of `hold`, if pending.
    pub fn qty(&self, hold: &HoldRef) -> Option<i64> {
        self.held(hold).map(|held| held.qty)
    }

    /// The earliest deadline.
    pub fn first_deadline(&self) -> Option<i64> {
        self.first
    }

    /// Holds due at `at`, earliest first, with their units.
    pub fn due_at(&self, at: i64) -> impl Iterator<Item = (HoldRef, i64)> + Clone + '_ {
        self.by_deadline
            .range(..=at)
            .flat_map(|(deadline, bucket)| {
                let deadline = *deadline;
                bucket
                    .holds
                    .iter()
                    .map(move |(handle, held)| ((deadline, handle), held.qty))
            })
    }

    /// Holds not due at `at`, earliest first.
    pub fn pending_after(&self, at: i64) -> impl Iterator<Item = HoldRef> + '_ {
        self.by_deadline
            .range((Excluded(at), Unbounded))
            .flat_map(|(deadline, bucket)| {
                let deadline = *deadline;
                bucket
                    .holds
                    .iter()
                    .map(move |(handle, _)| (deadline, handle))
            })
    }

    /// The holds of `buyer` due at `at`, earliest first, with their units.
    fn own_due(&self, buyer: u32, at: i64) -> impl Iterator<Item = (HoldRef, i64)> + '_ {
        self.holders
            .get(&buyer)
            .into_iter()
            .flat_map(move |holder| holder.holds.up_to((at, u32::MAX)))
    }

    /// The holds of `buyer` due at `at`, earliest first.
    #[cfg(test)]
    pub fn due_of(&self, buyer: u32, at: i64) -> impl Iterator<Item = HoldRef> + '_ {
        self.own_due(buyer, at).map(|(hold, _)| hold)
    }

    /// The holds of `buyer` not due at `at`, earliest first.
    pub fn pending_of(&self, buyer: u32, at: i64) -> impl Iterator<Item = HoldRef> + '_ {
        self.holders
            .get(&buyer)
            .into_iter()
            .flat_map(move |holder| holder.holds.after((at, u32::MAX)))
            .map(|(hold, _)| hold)
    }

    /// Runs `change` on the bucket of `deadline`, made if new. Holds mostly
    /// come in deadline order, many to a millisecond: the last bucket is
    /// found without a search.
    fn in_bucket<R>(&mut self, deadline: i64, change: impl FnOnce(&mut Bucket) -> R) -> R {
        if let Some(mut last) = self.by_deadline.last_entry() {
            if *last.key() == deadline {
                return change(last.get_mut());
            }
        }
        change(self.by_deadline.entry(deadline).or_insert(Bucket {
            units: 0,
            holds: SortedMap::new(),
        }))
    }

    /// Adds a hold of `qty` units of `buyer`. `units_of` gives each buyer's
    /// units as stored now; a change of them is told by `units_changed`.
    pub fn insert(&mut self, hold: HoldRef, qty: i64, buyer: u32, units_of: impl Fn(u32) -> i64) {
        let (deadline, handle) = hold;
        // A hold is added once; should one come twice, it is replaced. One
        // search of the bucket finds out, not two: the hold path is a hot
        // one.
        let added = self.in_bucket(deadline, |bucket| {
            let before = bucket.holds.heap();
            if let Some(old) = bucket.holds.insert(handle, Held { qty, buyer }) {
                bucket.holds.insert(handle, old);
                return None;
            }
            bucket.units = bucket.units.saturating_add(qty);
            Some((before, bucket.holds.heap()))
        });
        let Some((before, after)) = added else {
            self.remove(&hold, &units_of);
            return self.insert(hold, qty, buyer, units_of);
        };
        track(&mut self.maps_heap, before, after);
        self.len += 1;
        if self.first.is_none_or(|first| deadline < first) {
            self.first = Some(deadline);
        }
        self.count_at(deadline, 1, qty);
        let holder = self.holders.entry(buyer).or_insert(Holder {
            held: 0,
            emptied_at: None,
            holds: SortedMap::new(),
        });
        let before = holder.holds.heap();
        holder.holds.insert(hold, qty);
        holder.held = holder.held.saturating_add(qty);
        track(&mut self.maps_heap, before, holder.holds.heap());
        self.refresh(buyer, units_of(buyer));
    }

    /// Removes `hold`; returns its units if it was pending. `units_of` gives
    /// each buyer's units as stored now.
    pub fn remove(&mut self, hold: &HoldRef, units_of: impl Fn(u32) -> i64) -> Option<i64> {
        let (deadline, handle) = *hold;
        let bucket = self.by_deadline.get_mut(&deadline)?;
        let before = bucket.holds.heap();
        let Held { qty, buyer } = bucket.holds.remove(&handle)?;
        bucket.units = bucket.units.saturating_sub(qty);
        if bucket.holds.len() == 0 {
            self.by_deadline.remove(&deadline);
            track(&mut self.maps_heap, before, 0);
            if self.first == Some(deadline) {
                self.first = self.by_deadline.first_key_value().map(|(first, _)| *first);
            }
        } else {
            let after = bucket.holds.heap();
            track(&mut self.maps_heap, before, after);
        }
        self.len = self.len.saturating_sub(1);
        self.count_at(deadline, -1, qty);
        if let Some(holder) = self.holders.get_mut(&buyer) {
            let before = holder.holds.heap();
            holder.holds.remove(hold);
            holder.held = holder.held.saturating_sub(qty);
            track(&mut self.maps_heap, before, holder.holds.heap());
        }
        self.refresh(buyer, units_of(buyer));
        Some(qty)
    }

    /// Tells the book that `buyer` holds `units` now.
    pub fn units_changed(&mut self, buyer: u32, units: i64) {
        if self.holders.contains_key(&buyer) {
            self.refresh(buyer, units);
        }
    }

    /// Counts a hold of `units` due at `moment` in the cursor's figures
    /// (`sign` 1) or takes it off (-1), if the cursor is past it.
    fn count_at(&mut self, moment: i64, sign: i64, units: i64) {
        let cursor = self.cursor_mut();
        if moment <= cursor.through {
            let figures = &mut cursor.figures;
            figures.units = figures.units.saturating_add(sign * units);
            figures.count = figures.count.saturating_add_signed(sign as isize);
        } else if sign > 0 && moment < cursor.next {
            cursor.next = moment;
        }
    }

    /// Recomputes when `buyer`, holding `units`, is emptied by lapses.
    fn refresh(&mut self, buyer: u32, units: i64) {
        let Some(holder) = self.holders.get_mut(&buyer) else {
            return;
        };
        let was = holder.emptied_at;
        let emptied_at = match holder.held {
            0 => None,
            held if units <= 0 || held < units => None,
            // The usual case: every unit is in a hold, and the last one
            // to lapse empties the buyer.
            held if held == units => holder.holds.last_key().map(|(deadline, _)| deadline),
            // More held than the buyer has: only an item being loaded from
            // bytes that the load's final check refuses (requests for more
            // units than their user holds). No walk of the buyer's holds,
            // which a forged payload could make cost one per hold it adds.
            _ => None,
        };
        if holder.held == 0 {
            let heap = holder.holds.heap();
            self.holders.remove(&buyer);
            track(&mut self.maps_heap, heap, 0);
            // A table sized for a wave of buyers that has paid would keep
            // its memory until the item goes. It shrinks once few are
            // left, so that the copy it takes stays short, and goes with
            // the last.
            let (len, capacity) = (self.holders.len(), self.holders.capacity());
            if len == 0 || (capacity > 64 && len * 8 < capacity && len <= 4096) {
                self.holders.shrink_to(len * 2);
            }
        } else {
            holder.emptied_at = emptied_at;
        }
        if was == emptied_at {
            return;
        }
        if let Some(old) = was {
            count_emptied(&mut self.emptied, old, false);
            let cursor = self.cursor_mut();
            if old <= cursor.through {
                cursor.figures.emptied_buyers = cursor.figures.emptied_buyers.saturating_sub(1);
            }
        }
        if let Some(new) = emptied_at {
            count_emptied(&mut self.emptied, new, true);
            let cursor = self.cursor_mut();
            if new <= cursor.through {
                cursor.figures.emptied_buyers += 1;
            } else if new < cursor.next {
                cursor.next = new;
            }
        }
    }

    /// The holds due at `at`.
    pub fn lapsed(&self, at: i64) -> LapsedHolds {
        // Nothing due yet (a buyer empties at a deadline of its own): the
        // usual case, answered without the cursor's lock.
        if self.first.is_none_or(|first| at < first) {
            return LapsedHolds::default();
        }
        let cursor = self.advance(at);
        let mut figures = cursor.figures;
        if at < cursor.through {
            // A moment before the cursor (a master's clock behind this
            // one): take off what fell due after it.
            let (count, units, emptied) = self.due_between(at, cursor.through);
            figures.count = figures.count.saturating_sub(count);
            figures.units = figures.units.saturating_sub(units);
            figures.emptied_buyers = figures.emptied_buyers.saturating_sub(emptied);
        }
        figures
    }

    /// Units of `buyer`'s holds due at `at`: a walk of that buyer's alone.
    pub fn lapsed_of(&self, buyer: u32, at: i64) -> i64 {
        self.own_due(buyer, at)
            .fold(0i64, |units, (_, qty)| units.saturating_add(qty))
    }

    /// Moves the cursor on to `at`, if later, counting what fell due.
    fn advance(&self, at: i64) -> Cursor {
        let mut cursor = self.cursor();
        if at > cursor.through {
            if at >= cursor.next {
                let (count, units, emptied) = self.due_between(cursor.through, at);
                let figures = &mut cursor.figures;
                figures.count = figures.count.saturating_add(count);
                figures.units = figures.units.saturating_add(units);
                figures.emptied_buyers = figures.emptied_buyers.saturating_add(emptied);
                cursor.next = self.next_after(at);
            }
            cursor.through = at;
        }
        *cursor
    }

    /// Holds, their units and buyers emptied due after `from`, up to `to`.
    fn due_between(&self, from: i64, to: i64) -> (usize, i64, usize) {
        let window = (Excluded(from), Included(to));
        let (count, units) =
            self.by_deadline
                .range(window)
                .fold((0usize, 0i64), |(count, units), (_, bucket)| {
                    (
                        count + bucket.holds.len(),
                        units.saturating_add(bucket.units),
                    )
                });
        let emptied = self.emptied.range(window).map(|(_, count)| *count).sum();
        (count, units, emptied)
    }

    /// The earliest moment after `at` at which something falls due.
    fn next_after(&self, at: i64) -> i64 {
        let after = (Excluded(at), Unbounded);
        let deadline = self
            .by_deadline
            .range(after)
            .next()
            .map(|(moment, _)| *moment);
        let emptied = self.emptied.range(after).next().map(|(moment, _)| *moment);
        deadline
            .into_iter()
            .chain(emptied)
            .min()
            .unwrap_or(i64::MAX)
    }

    /// Bytes on the heap: the B-trees' entries with their share of inner
    /// nodes, the holders' table, and the buckets' and holders' own maps.
    pub fn heap_usage(&self) -> usize {
        // A hash table of a power of two slots, at most 7/8 full, each
        // slot with a control byte, in one allocation.
        let holders = match self.holders.capacity() {
            0 => 0,
            capacity => {
                let slots = (capacity * 8 / 7).next_power_of_two();
                allocated(slots * (std::mem::size_of::<(u32, Holder)>() + 1) + 16)
            }
        };
        self.by_deadline.len() * tree_entry::<i64, Bucket>()
            + holders
            + self.emptied.len() * tree_entry::<i64, usize>()
            + self.maps_heap
    }

    /// Every pending hold with what it records, for the tests' walks.
    #[cfg(test)]
    fn all(&self) -> Vec<(HoldRef, Held)> {
        self.by_deadline
            .iter()
            .flat_map(|(deadline, bucket)| {
                bucket
                    .holds
                    .iter()
                    .map(move |(handle, held)| ((*deadline, handle), held))
            })
            .collect()
    }
}

/// The ledger's holds, changed with the buyers' units at hand.
impl super::Ledger {
    /// Adds a pending hold of `qty` units by the buyer whose handle is
    /// `buyer`.
    pub fn add_hold(&mut self, hold: HoldRef, qty: i64, buyer: u32) {
        let arena = &self.arena;
        self.holds
            .insert(hold, qty, buyer, |buyer| units_in(arena, buyer));
    }

    /// Ends a pending hold; its units if it was pending.
    pub fn remove_hold(&mut self, hold: &HoldRef) -> Option<i64> {
        let arena = &self.arena;
        self.holds.remove(hold, |buyer| units_in(arena, buyer))
    }

    /// The holds due at `at`, as if released.
    pub fn lapsed(&self, at: i64) -> LapsedHolds {
        if self.holds.is_empty() {
            return LapsedHolds::default();
        }
        self.holds.lapsed(at)
    }

    /// Units of the holds of the buyer whose handle is `buyer` due at `at`.
    pub fn lapsed_of(&self, buyer: u32, at: i64) -> i64 {
        if self.holds.is_empty() {
            return 0;
        }
        self.holds.lapsed_of(buyer, at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;

    /// The figures of `book` at `at`, summed the long way.
    fn walked(book: &HoldBook, at: i64, units: &HashMap<u32, i64>) -> LapsedHolds {
        let mut figures = LapsedHolds::default();
        let mut due: HashMap<u32, i64> = HashMap::new();
        for ((deadline, _), held) in book.all() {
            if deadline <= at {
                figures.count += 1;
                figures.units += held.qty;
                *due.entry(held.buyer).or_default() += held.qty;
            }
        }
        figures.emptied_buyers = due
            .iter()
            .filter(|(buyer, due)| emptied(units.get(buyer).copied().unwrap_or(0), **due))
            .count();
        figures
    }

    #[derive(Clone, Debug)]
    enum Step {
        Hold { deadline: i64, buyer: u32, qty: i64 },
        Remove(usize),
        Units { buyer: u32, units: i64 },
        Read(i64),
    }

    fn step() -> impl Strategy<Value = Step> {
        prop_oneof![
            (0i64..40, 0u32..4, 1i64..4).prop_map(|(deadline, buyer, qty)| Step::Hold {
                deadline,
                buyer,
                qty
            }),
            any::<usize>().prop_map(Step::Remove),
            (0u32..4, 0i64..12).prop_map(|(buyer, units)| Step::Units { buyer, units }),
            (-5i64..45).prop_map(Step::Read),
        ]
    }

    proptest! {
        /// Whatever the order of holds, removals, changes of units and
        /// reads at due going back and forth, the kept figures are the
        /// ones a walk of every hold gives.
        #[test]
        fn kept_figures_equal_a_walk(steps in proptest::collection::vec(step(), 1..80)) {
            let mut book = HoldBook::default();
            let mut units: HashMap<u32, i64> = HashMap::new();
            let mut handle = 0u32;
            for step in steps {
                match step {
                    Step::Hold { deadline, buyer, qty } => {
                        handle += 1;
                        let now = units.clone();
                        book.insert((deadline, handle), qty, buyer, |b| {
                            now.get(&b).copied().unwrap_or(0)
                        });
                        let before = units.get(&buyer).copied().unwrap_or(0);
                        units.insert(buyer, before + qty);
                        book.units_changed(buyer, before + qty);
                    }
                    Step::Remove(pick) => {
                        let holds: Vec<HoldRef> = book.all().into_iter().map(|(hold, _)| hold).collect();
                        if holds.is_empty() {
                            continue;
                        }
                        let hold = holds[pick % holds.len()];
                        let held = book.held(&hold).expect("pending");
                        let now = units.clone();
                        let qty = book.remove(&hold, |b| now.get(&b).copied().unwrap_or(0));
                        prop_assert_eq!(qty, Some(held.qty));
                        let before = units[&held.buyer];
                        let after = (before - held.qty).max(0);
                        units.insert(held.buyer, after);
                        book.units_changed(held.buyer, after);
                    }
                    Step::Units { buyer, units: after } => {
                        // A buyer holds at least what its pending holds do.
                        let held: i64 = book
                            .all()
                            .into_iter()
                            .filter(|(_, held)| held.buyer == buyer)
                            .map(|(_, held)| held.qty)
                            .sum();
                        let after = after.max(held);
                        units.insert(buyer, after);
                        book.units_changed(buyer, after);
                    }
                    Step::Read(at) => {
                        let earliest = book.all().iter().map(|((deadline, _), _)| *deadline).min();
                        prop_assert_eq!(book.first_deadline(), earliest);
                        let kept = book.lapsed(at);
                        prop_assert_eq!(kept, walked(&book, at, &units));
                        for buyer in 0..4 {
                            let own = book.lapsed_of(buyer, at);
                            let walked_own: i64 = book
                                .all()
                                .into_iter()
                                .filter(|((deadline, _), held)| *deadline <= at && held.buyer == buyer)
                                .map(|(_, held)| held.qty)
                                .sum();
                            prop_assert_eq!(own, walked_own);
                        }
                    }
                }
            }
        }
    }

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

    #[test]
    fn the_book_gives_its_memory_back_as_holds_end() {
        let mut book = HoldBook::default();
        let units = |_| 1_000;
        let holds: Vec<(HoldRef, u32)> = (0..5_000u32)
            .map(|n| ((i64::from(n % 7) * 1_000 + i64::from(n / 50), n), n % 300))
            .collect();
        let summed = |book: &HoldBook| {
            book.by_deadline
                .values()
                .map(|b| b.holds.heap())
                .sum::<usize>()
                + book.holders.values().map(|h| h.holds.heap()).sum::<usize>()
        };
        for (n, (hold, buyer)) in holds.iter().enumerate() {
            book.insert(*hold, 1, *buyer, units);
            assert_eq!(book.maps_heap, summed(&book), "after insert {n}");
        }
        assert_eq!(book.len(), 5_000);
        assert!(book.heap_usage() > 5_000 * 16);
        for (n, (hold, _)) in holds.iter().rev().enumerate() {
            assert_eq!(book.remove(hold, units), Some(1));
            assert_eq!(book.maps_heap, summed(&book), "after remove {n}");
        }
        assert!(book.is_empty());
        assert_eq!(book.maps_heap, 0);
        assert_eq!(book.heap_usage(), 0);
    }

    #[test]
    fn a_buyer_s_holds_are_found_by_buyer_and_moment() {
        let mut book = HoldBook::default();
        let units = |_| 10;
        book.insert((5, 1), 1, 7, units);
        book.insert((9, 2), 2, 8, units);
        book.insert((12, 3), 3, 7, units);
        assert_eq!(book.due_of(7, 10).collect::<Vec<_>>(), vec![(5, 1)]);
        assert_eq!(book.pending_of(7, 10).collect::<Vec<_>>(), vec![(12, 3)]);
        assert_eq!(book.pending_of(8, 9).count(), 0);
        assert_eq!(book.lapsed_of(7, 12), 4);
        assert_eq!(book.lapsed(9).units, 3);
    }
}
