//! An item's pending holds, by deadline and by buyer, with the figures of
//! those that lapsed and wait for the sweep kept as they change.
//!
//! Reads and writes judge a lapsed hold as released (see `change`). Adding
//! the lapsed holds up on every call made a call cost as much as the
//! backlog the sweep had not reached yet: with 200,000 of them, a `GET`
//! took 1.8 ms. Here the figures of everything due up to a moment, the
//! cursor, are kept; moving the cursor on to a later moment walks only the
//! holds that fell due in between, each once, and every change to a hold
//! behind the cursor adjusts the figures in step. A call on a busy item
//! moves the cursor past the holds of a millisecond or so.
//!
//! The cursor is a cache of what the holds determine, never state of its
//! own: reads move it through shared references, and an item saved, loaded,
//! replicated or cloned judges exactly as it would with the cursor anywhere
//! else.

use std::collections::{BTreeMap, BTreeSet};
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

/// The figures of the holds due at the cursor.
#[derive(Clone, Debug)]
struct Due {
    /// `figures` count the holds with a deadline at or before this.
    through: i64,
    /// The earliest deadline after `through`; `i64::MAX` with none,
    /// `i64::MIN` when not known yet.
    next: i64,
    figures: LapsedHolds,
    /// Units of each buyer's holds due; buyers with none are left out.
    by_buyer: BTreeMap<u32, i64>,
}

impl Due {
    const fn new() -> Due {
        Due {
            through: i64::MIN,
            next: i64::MIN,
            figures: LapsedHolds {
                count: 0,
                units: 0,
                emptied_buyers: 0,
            },
            by_buyer: BTreeMap::new(),
        }
    }

    /// Counts `held` among the holds due (`sign` 1) or takes it off (-1).
    /// `units` are the buyer's, as stored now.
    fn count(&mut self, held: Held, sign: i64, units: i64) {
        let figures = &mut self.figures;
        if sign > 0 {
            figures.count += 1;
            figures.units = figures.units.saturating_add(held.qty);
        } else {
            figures.count = figures.count.saturating_sub(1);
            figures.units = figures.units.saturating_sub(held.qty);
        }
        let before = self.by_buyer.get(&held.buyer).copied().unwrap_or(0);
        let after = before.saturating_add(sign * held.qty).max(0);
        if after == 0 {
            self.by_buyer.remove(&held.buyer);
        } else {
            self.by_buyer.insert(held.buyer, after);
        }
        self.recount(emptied(units, before), emptied(units, after));
    }

    fn recount(&mut self, was_emptied: bool, is_emptied: bool) {
        let emptied_buyers = &mut self.figures.emptied_buyers;
        match (was_emptied, is_emptied) {
            (false, true) => *emptied_buyers += 1,
            (true, false) => *emptied_buyers = emptied_buyers.saturating_sub(1),
            _ => {}
        }
    }
}

pub struct HoldBook {
    by_deadline: BTreeMap<HoldRef, Held>,
    /// (buyer, deadline, request): a buyer's holds without a walk of all.
    by_buyer: BTreeSet<(u32, i64, u32)>,
    /// Moved on by reads too, hence the lock; nothing else holds it, so
    /// taking it is one atomic operation.
    due: Mutex<Due>,
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
            due: Mutex::new(self.due().clone()),
        }
    }
}

/// True if a buyer holding `units`, `due` of them in holds due, holds
/// nothing once those are released.
fn emptied(units: i64, due: i64) -> bool {
    units > 0 && due >= units
}

impl HoldBook {
    pub const fn new() -> HoldBook {
        HoldBook {
            by_deadline: BTreeMap::new(),
            by_buyer: BTreeSet::new(),
            due: Mutex::new(Due::new()),
        }
    }

    fn due(&self) -> MutexGuard<'_, Due> {
        self.due.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn due_mut(&mut self) -> &mut Due {
        self.due.get_mut().unwrap_or_else(PoisonError::into_inner)
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
        self.by_deadline
            .first_key_value()
            .map(|((deadline, _), _)| *deadline)
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

    /// The holds of `buyer` due at `at`, earliest first.
    pub fn due_of(&self, buyer: u32, at: i64) -> impl Iterator<Item = HoldRef> + '_ {
        self.by_buyer
            .range((buyer, i64::MIN, 0)..=(buyer, at, u32::MAX))
            .map(|(_, deadline, handle)| (*deadline, *handle))
    }

    /// The holds of `buyer` not due at `at`, earliest first.
    pub fn pending_of(&self, buyer: u32, at: i64) -> impl Iterator<Item = HoldRef> + '_ {
        self.by_buyer
            .range((
                Excluded((buyer, at, u32::MAX)),
                Included((buyer, i64::MAX, u32::MAX)),
            ))
            .map(|(_, deadline, handle)| (*deadline, *handle))
    }

    /// Adds a hold of `qty` units of `buyer`. `units_of` gives each buyer's
    /// units as stored now; a change of them is told by `units_changed`.
    pub fn insert(&mut self, hold: HoldRef, qty: i64, buyer: u32, units_of: impl Fn(u32) -> i64) {
        if self.contains(&hold) {
            // A hold is added once; should one come twice, it is replaced.
            self.remove(&hold, &units_of);
        }
        let held = Held { qty, buyer };
        self.by_deadline.insert(hold, held);
        self.by_buyer.insert((buyer, hold.0, hold.1));
        let due = self.due_mut();
        if hold.0 <= due.through {
            due.count(held, 1, units_of(buyer));
        } else if hold.0 < due.next {
            due.next = hold.0;
        }
    }

    /// Removes `hold`; returns its units if it was pending. `units_of` gives
    /// each buyer's units as stored now.
    pub fn remove(&mut self, hold: &HoldRef, units_of: impl Fn(u32) -> i64) -> Option<i64> {
        let held = self.by_deadline.remove(hold)?;
        self.by_buyer.remove(&(held.buyer, hold.0, hold.1));
        let through = self.due_mut().through;
        if hold.0 <= through {
            self.due_mut().count(held, -1, units_of(held.buyer));
        } else if hold.0 == self.due_mut().next {
            let next = self.next_after(through);
            self.due_mut().next = next;
        }
        Some(held.qty)
    }

    /// Tells the book that `buyer`'s units went from `before` to `after`.
    pub fn units_changed(&mut self, buyer: u32, before: i64, after: i64) {
        let due = self.due_mut();
        let own = due.by_buyer.get(&buyer).copied().unwrap_or(0);
        if own > 0 {
            due.recount(emptied(before, own), emptied(after, own));
        }
    }

    /// The holds due at `at`.
    pub fn lapsed(&self, at: i64, units_of: impl Fn(u32) -> i64) -> LapsedHolds {
        let due = self.advance(at, &units_of);
        let mut figures = due.figures;
        if at >= due.through {
            return figures;
        }
        // A moment before the cursor (a master's clock behind this one):
        // take off what fell due after it, without moving the cursor.
        let mut undue: BTreeMap<u32, i64> = BTreeMap::new();
        for (_, held) in self.between(at, due.through) {
            figures.count = figures.count.saturating_sub(1);
            figures.units = figures.units.saturating_sub(held.qty);
            let units = undue.entry(held.buyer).or_default();
            *units = units.saturating_add(held.qty);
        }
        for (buyer, undue) in undue {
            let units = units_of(buyer);
            let own = due.by_buyer.get(&buyer).copied().unwrap_or(0);
            if emptied(units, own) && !emptied(units, own.saturating_sub(undue)) {
                figures.emptied_buyers = figures.emptied_buyers.saturating_sub(1);
            }
        }
        figures
    }

    /// Units of `buyer`'s holds due at `at`.
    pub fn lapsed_of(&self, buyer: u32, at: i64, units_of: impl Fn(u32) -> i64) -> i64 {
        let due = self.advance(at, &units_of);
        if at == due.through {
            return due.by_buyer.get(&buyer).copied().unwrap_or(0);
        }
        drop(due);
        self.due_of(buyer, at)
            .filter_map(|hold| self.qty(&hold))
            .fold(0i64, i64::saturating_add)
    }

    /// Moves the cursor on to `at`, if later, counting what fell due.
    fn advance(&self, at: i64, units_of: &impl Fn(u32) -> i64) -> MutexGuard<'_, Due> {
        let mut due = self.due();
        if at <= due.through {
            return due;
        }
        if at < due.next {
            // Nothing falls due on the way: no lookup at all.
            due.through = at;
            return due;
        }
        let from = due.through;
        for (_, held) in self.between(from, at) {
            due.count(*held, 1, units_of(held.buyer));
        }
        due.through = at;
        due.next = self.next_after(at);
        due
    }

    /// Holds with a deadline after `from`, up to `to` included.
    fn between(&self, from: i64, to: i64) -> impl Iterator<Item = (&HoldRef, &Held)> {
        self.by_deadline
            .range((Excluded((from, u32::MAX)), Included((to, u32::MAX))))
    }

    fn next_after(&self, at: i64) -> i64 {
        self.by_deadline
            .range((Excluded((at, u32::MAX)), Unbounded))
            .next()
            .map_or(i64::MAX, |((deadline, _), _)| *deadline)
    }

    /// Bytes on the heap, estimated: B-tree entries with their share of
    /// inner nodes, and the buyers with holds due.
    pub fn heap_usage(&self) -> usize {
        // A B-tree leaf holds up to 11 entries; holds are mostly added in
        // deadline order, at the tree's right edge, where a full leaf
        // splits into two of about 6. Some 64 bytes an entry of 24, 56 one
        // of 16, inner nodes included.
        const BY_DEADLINE_ENTRY: usize = 64;
        const BY_BUYER_ENTRY: usize = 56;
        const DUE_BUYER_ENTRY: usize = 40;
        self.by_deadline.len() * BY_DEADLINE_ENTRY
            + self.by_buyer.len() * BY_BUYER_ENTRY
            + self.due().by_buyer.len() * DUE_BUYER_ENTRY
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
        /// reads at moments going back and forth, the kept figures are the
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
                        book.units_changed(buyer, before, before + qty);
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
                        book.units_changed(held.buyer, before, after);
                    }
                    Step::Units { buyer, units: after } => {
                        let before = units.get(&buyer).copied().unwrap_or(0);
                        units.insert(buyer, after);
                        book.units_changed(buyer, before, after);
                    }
                    Step::Read(at) => {
                        let now = units.clone();
                        let kept = book.lapsed(at, |b| now.get(&b).copied().unwrap_or(0));
                        prop_assert_eq!(kept, walked(&book, at, &units));
                        for buyer in 0..4 {
                            let own = book.lapsed_of(buyer, at, |b| now.get(&b).copied().unwrap_or(0));
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
        assert_eq!(book.lapsed_of(7, 12, units), 4);
        assert_eq!(book.lapsed(9, units).units, 3);
    }
}
