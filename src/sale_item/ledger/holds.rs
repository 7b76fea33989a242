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

use super::sorted_map::{allocated, tree_entry, SortedMap};
use super::tail_map::TailMap;
use super::{units_in, HASHER};
use foldhash::fast::FoldHasher;
use std::collections::HashMap;
use std::hash::BuildHasher;
use std::ops::Bound::{Excluded, Included, Unbounded};
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
    by_deadline: TailMap<i64, Bucket>,
    /// Buyers with pending holds: a buyer's holds without a walk of all.
    holders: HashMap<u32, Holder, HandleHasher>,
    /// How many buyers are emptied at each moment.
    emptied: TailMap<i64, usize>,
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
        let by_deadline = self.by_deadline.clone();
        let holders = self.holders.clone();
        // A cloned vector has room for what it holds and no more: the
        // copy's bytes are counted anew, not taken from the original.
        let maps_heap = by_deadline
            .values()
            .map(|bucket| bucket.holds.heap())
            .chain(holders.values().map(|holder| holder.holds.heap()))
            .sum();
        HoldBook {
            by_deadline,
            holders,
            emptied: self.emptied.clone(),
            len: self.len,
            first: self.first,
            maps_heap,
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
/// key as a rule: found beside the tree (see `TailMap`).
fn count_emptied(emptied: &mut TailMap<i64, usize>, moment: i64, add: bool) {
    if add {
        *emptied.get_or_insert_with(moment, || 0) += 1;
    } else if let Some(count) = emptied.get_mut(&moment) {
        *count -= 1;
        if *count == 0 {
            emptied.remove(&moment);
        }
    }
}

/// When `holder`, holding `units` in all, is emptied by lapses: when its
/// last hold lapses if every unit it has is in a hold, else never.
fn emptied_moment(holder: &Holder, units: i64) -> Option<i64> {
    match holder.held {
        0 => None,
        held if units <= 0 || held < units => None,
        // The usual case: every unit is in a hold, and the last one to
        // lapse empties the buyer.
        held if held == units => holder.holds.last_key().map(|(deadline, _)| deadline),
        // More held than the buyer has: only an item being loaded from
        // bytes that the load's final check refuses (requests for more
        // units than their user holds). No walk of the buyer's holds,
        // which a forged payload could make cost one per hold it adds.
        _ => None,
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
            by_deadline: TailMap::new(),
            holders: HashMap::with_hasher(HandleHasher),
            emptied: TailMap::new(),
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
    #[cfg(test)]
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

    /// Units in the pending holds of `buyer`.
    pub fn held_by(&self, buyer: u32) -> i64 {
        self.holders.get(&buyer).map_or(0, |holder| holder.held)
    }

    /// The holds of `buyer` not due at `at`, earliest first.
    pub fn pending_of(&self, buyer: u32, at: i64) -> impl Iterator<Item = HoldRef> + '_ {
        self.holders
            .get(&buyer)
            .into_iter()
            .flat_map(move |holder| holder.holds.after((at, u32::MAX)))
            .map(|(hold, _)| hold)
    }

    /// Adds a hold of `qty` units of `buyer`. `units_of` gives each buyer's
    /// units as stored now; a change of them is told by `units_changed`.
    pub fn insert(&mut self, hold: HoldRef, qty: i64, buyer: u32, units_of: impl Fn(u32) -> i64) {
        let (deadline, handle) = hold;
        // A hold is added once; should one come twice, it is replaced. One
        // search of the bucket finds out, not two: the hold path is a hot
        // one. Holds mostly come in deadline order, many to a millisecond:
        // the last bucket is found without a search (see `TailMap`).
        let bucket = self.by_deadline.get_or_insert_with(deadline, || Bucket {
            units: 0,
            holds: SortedMap::new(),
        });
        if let Some(old) =
            bucket
                .holds
                .insert_counted(handle, Held { qty, buyer }, &mut self.maps_heap)
        {
            bucket.holds.insert(handle, old);
            self.remove(&hold, &units_of);
            return self.insert(hold, qty, buyer, units_of);
        }
        bucket.units = bucket.units.saturating_add(qty);
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
        holder.holds.insert_counted(hold, qty, &mut self.maps_heap);
        holder.held = holder.held.saturating_add(qty);
        if holder.held == 0 {
            // A hold of no units (bytes a load refuses in the end): the
            // holder may go, as `refresh` decides.
            return self.refresh(buyer, units_of(buyer));
        }
        // The holder just found, not found again (`refresh`): it holds
        // units, so it stays.
        let was = holder.emptied_at;
        let emptied_at = emptied_moment(holder, units_of(buyer));
        holder.emptied_at = emptied_at;
        self.emptied_moved(was, emptied_at);
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
        let emptied_at = emptied_moment(holder, units);
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
        self.emptied_moved(was, emptied_at);
    }

    /// A buyer emptied at `was` is now emptied at `now` (`None`: not
    /// emptied by lapses): the counts by moment and the cursor's figures
    /// follow.
    fn emptied_moved(&mut self, was: Option<i64>, now: Option<i64>) {
        if was == now {
            return;
        }
        if let Some(old) = was {
            count_emptied(&mut self.emptied, old, false);
            let cursor = self.cursor_mut();
            if old <= cursor.through {
                cursor.figures.emptied_buyers = cursor.figures.emptied_buyers.saturating_sub(1);
            }
        }
        if let Some(new) = now {
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

    /// Units of `buyer`'s holds due at `at`: none or all of them without a
    /// walk (a buyer's holds mostly lapse together), else a walk of that
    /// buyer's alone.
    pub fn lapsed_of(&self, buyer: u32, at: i64) -> i64 {
        let Some(holder) = self.holders.get(&buyer) else {
            return 0;
        };
        let due = |key: Option<HoldRef>| key.is_some_and(|(deadline, _)| deadline <= at);
        if due(holder.holds.last_key()) {
            return holder.held;
        }
        if !due(holder.holds.first_key()) {
            return 0;
        }
        holder
            .holds
            .up_to((at, u32::MAX))
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
mod tests;
