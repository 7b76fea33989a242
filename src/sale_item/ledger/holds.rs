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

use super::units_in;
use std::collections::BTreeMap;
use std::ops::Bound::{Excluded, Included, Unbounded};
use std::sync::{Mutex, MutexGuard, PoisonError};

/// A pending hold: its deadline (Unix ms) and its request record.
pub type HoldRef = (i64, u32);

/// What a hold records besides its deadline.
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

/// Holds sharing one deadline.
#[derive(Clone, Copy, Debug, Default)]
struct Due {
    count: usize,
    units: i64,
}

/// A buyer with pending holds.
#[derive(Clone, Copy, Debug)]
struct Holder {
    /// Units in the buyer's pending holds.
    held: i64,
    /// When every unit the buyer has is in lapsed holds, if ever.
    emptied_at: Option<i64>,
    /// The latest deadline of the buyer's holds.
    latest: i64,
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
    by_deadline: BTreeMap<HoldRef, Held>,
    /// (buyer, deadline, request) to units: a buyer's holds without a walk
    /// of all.
    by_buyer: BTreeMap<(u32, i64, u32), i64>,
    /// Holds by deadline: what the cursor walks.
    due: BTreeMap<i64, Due>,
    holders: BTreeMap<u32, Holder>,
    /// How many buyers are emptied at each moment.
    emptied: BTreeMap<i64, usize>,
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
            by_buyer: self.by_buyer.clone(),
            due: self.due.clone(),
            holders: self.holders.clone(),
            emptied: self.emptied.clone(),
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

impl HoldBook {
    pub const fn new() -> HoldBook {
        HoldBook {
            by_deadline: BTreeMap::new(),
            by_buyer: BTreeMap::new(),
            due: BTreeMap::new(),
            holders: BTreeMap::new(),
            emptied: BTreeMap::new(),
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
        self.by_deadline.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_deadline.is_empty()
    }

    pub fn contains(&self, hold: &HoldRef) -> bool {
        self.by_deadline.contains_key(hold)
    }

    /// The units of `hold`, if pending.
    pub fn qty(&self, hold: &HoldRef) -> Option<i64> {
        self.by_deadline.get(hold).map(|held| held.qty)
    }

    /// The earliest deadline.
    pub fn first_deadline(&self) -> Option<i64> {
        self.due.first_key_value().map(|(deadline, _)| *deadline)
    }

    /// Holds due at `at`, earliest first, with their units.
    pub fn due_at(&self, at: i64) -> impl Iterator<Item = (HoldRef, i64)> + Clone + '_ {
        self.by_deadline
            .range(..=(at, u32::MAX))
            .map(|(hold, held)| (*hold, held.qty))
    }

    /// Holds not due at `at`, earliest first.
    pub fn pending_after(&self, at: i64) -> impl Iterator<Item = HoldRef> + '_ {
        self.by_deadline
            .range((Excluded((at, u32::MAX)), Unbounded))
            .map(|(hold, _)| *hold)
    }

    /// The holds of `buyer` due at `at`, earliest first, with their units.
    fn own_due(&self, buyer: u32, at: i64) -> impl Iterator<Item = (HoldRef, i64)> + '_ {
        self.by_buyer
            .range((buyer, i64::MIN, 0)..=(buyer, at, u32::MAX))
            .map(|((_, deadline, handle), qty)| ((*deadline, *handle), *qty))
    }

    /// The holds of `buyer` due at `at`, earliest first.
    #[cfg(test)]
    pub fn due_of(&self, buyer: u32, at: i64) -> impl Iterator<Item = HoldRef> + '_ {
        self.own_due(buyer, at).map(|(hold, _)| hold)
    }

    /// The holds of `buyer` not due at `at`, earliest first.
    pub fn pending_of(&self, buyer: u32, at: i64) -> impl Iterator<Item = HoldRef> + '_ {
        self.by_buyer
            .range((
                Excluded((buyer, at, u32::MAX)),
                Included((buyer, i64::MAX, u32::MAX)),
            ))
            .map(|((_, deadline, handle), _)| (*deadline, *handle))
    }

    /// Adds a hold of `qty` units of `buyer`. `units_of` gives each buyer's
    /// units as stored now; a change of them is told by `units_changed`.
    pub fn insert(&mut self, hold: HoldRef, qty: i64, buyer: u32, units_of: impl Fn(u32) -> i64) {
        // A hold is added once; should one come twice, it is replaced. One
        // search of the map finds out, not two: the hold path is a hot one.
        if let Some(old) = self.by_deadline.insert(hold, Held { qty, buyer }) {
            self.by_deadline.insert(hold, old);
            self.remove(&hold, &units_of);
            self.by_deadline.insert(hold, Held { qty, buyer });
        }
        self.by_buyer.insert((buyer, hold.0, hold.1), qty);
        let due = self.due.entry(hold.0).or_default();
        due.count += 1;
        due.units = due.units.saturating_add(qty);
        self.count_at(hold.0, 1, qty);
        let holder = self.holders.entry(buyer).or_insert(Holder {
            held: 0,
            emptied_at: None,
            latest: i64::MIN,
        });
        holder.held = holder.held.saturating_add(qty);
        holder.latest = holder.latest.max(hold.0);
        self.refresh(buyer, units_of(buyer));
    }

    /// Removes `hold`; returns its units if it was pending. `units_of` gives
    /// each buyer's units as stored now.
    pub fn remove(&mut self, hold: &HoldRef, units_of: impl Fn(u32) -> i64) -> Option<i64> {
        let Held { qty, buyer } = self.by_deadline.remove(hold)?;
        self.by_buyer.remove(&(buyer, hold.0, hold.1));
        if let Some(due) = self.due.get_mut(&hold.0) {
            due.count = due.count.saturating_sub(1);
            due.units = due.units.saturating_sub(qty);
            if due.count == 0 {
                self.due.remove(&hold.0);
            }
        }
        self.count_at(hold.0, -1, qty);
        // The latest deadline is looked up again only when it went.
        let latest_went = self
            .holders
            .get(&buyer)
            .is_some_and(|holder| hold.0 >= holder.latest);
        let latest = if latest_went {
            self.by_buyer
                .range((buyer, i64::MIN, 0)..=(buyer, i64::MAX, u32::MAX))
                .next_back()
                .map_or(i64::MIN, |((_, deadline, _), _)| *deadline)
        } else {
            i64::MIN
        };
        if let Some(holder) = self.holders.get_mut(&buyer) {
            holder.held = holder.held.saturating_sub(qty);
            if latest_went {
                holder.latest = latest;
            }
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
        let Some(holder) = self.holders.get(&buyer).copied() else {
            return;
        };
        let emptied_at = match holder.held {
            0 => None,
            held if units <= 0 || held < units => None,
            // The usual case: every unit is in a hold, and the last one
            // to lapse empties the buyer.
            held if held == units => Some(holder.latest),
            // More held than the buyer has: only an item being loaded from
            // bytes that the load's final check refuses (requests for more
            // units than their user holds). No walk of the buyer's holds,
            // which a forged payload could make cost one per hold it adds.
            _ => None,
        };
        if holder.held == 0 {
            self.holders.remove(&buyer);
        } else if let Some(holder) = self.holders.get_mut(&buyer) {
            holder.emptied_at = emptied_at;
        }
        if holder.emptied_at == emptied_at {
            return;
        }
        if let Some(old) = holder.emptied_at {
            if let Some(count) = self.emptied.get_mut(&old) {
                *count -= 1;
                if *count == 0 {
                    self.emptied.remove(&old);
                }
            }
            let cursor = self.cursor_mut();
            if old <= cursor.through {
                cursor.figures.emptied_buyers = cursor.figures.emptied_buyers.saturating_sub(1);
            }
        }
        if let Some(new) = emptied_at {
            *self.emptied.entry(new).or_default() += 1;
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
        let (count, units) = self
            .due
            .range(window)
            .fold((0usize, 0i64), |(count, units), (_, due)| {
                (count + due.count, units.saturating_add(due.units))
            });
        let emptied = self.emptied.range(window).map(|(_, count)| *count).sum();
        (count, units, emptied)
    }

    /// The earliest moment after `at` at which something falls due.
    fn next_after(&self, at: i64) -> i64 {
        let after = (Excluded(at), Unbounded);
        let deadline = self.due.range(after).next().map(|(moment, _)| *moment);
        let emptied = self.emptied.range(after).next().map(|(moment, _)| *moment);
        deadline
            .into_iter()
            .chain(emptied)
            .min()
            .unwrap_or(i64::MAX)
    }

    /// Bytes on the heap, estimated from B-tree entries with their share
    /// of inner nodes.
    pub fn heap_usage(&self) -> usize {
        // A B-tree leaf holds up to 11 entries; holds are mostly added in
        // deadline order, at the tree's right edge, where a full leaf
        // splits into two of about 6: some 2.1 times an entry's size, inner
        // nodes included (measured against used_memory, tests/big_items.rs).
        const fn entry<K, V>() -> usize {
            (std::mem::size_of::<K>() + std::mem::size_of::<V>()) * 21 / 10
        }
        self.by_deadline.len() * entry::<HoldRef, Held>()
            + self.by_buyer.len() * entry::<(u32, i64, u32), i64>()
            + self.due.len() * entry::<i64, Due>()
            + self.holders.len() * entry::<u32, Holder>()
            + self.emptied.len() * entry::<i64, usize>()
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
        for ((deadline, _), held) in &book.by_deadline {
            if *deadline <= at {
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
                        let holds: Vec<HoldRef> = book.by_deadline.keys().copied().collect();
                        if holds.is_empty() {
                            continue;
                        }
                        let hold = holds[pick % holds.len()];
                        let held = book.by_deadline[&hold];
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
                            .by_deadline
                            .values()
                            .filter(|held| held.buyer == buyer)
                            .map(|held| held.qty)
                            .sum();
                        let after = after.max(held);
                        units.insert(buyer, after);
                        book.units_changed(buyer, after);
                    }
                    Step::Read(at) => {
                        let kept = book.lapsed(at);
                        prop_assert_eq!(kept, walked(&book, at, &units));
                        for buyer in 0..4 {
                            let own = book.lapsed_of(buyer, at);
                            let walked_own: i64 = book
                                .by_deadline
                                .iter()
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
