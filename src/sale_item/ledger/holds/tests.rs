//! The hold book's figures against walks of its holds, under every kind of
//! change, and its memory going back as holds end.

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
    /// A held purchase; `units_first`: the buyer's units are written
    /// before the hold is added, the book told of both by the insert (as
    /// a purchase does), else after it, told by `units_changed`.
    Hold {
        deadline: i64,
        buyer: u32,
        qty: i64,
        units_first: bool,
    },
    Remove(usize),
    Units {
        buyer: u32,
        units: i64,
    },
    Read(i64),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        (0i64..40, 0u32..4, 1i64..4, any::<bool>()).prop_map(
            |(deadline, buyer, qty, units_first)| Step::Hold {
                deadline,
                buyer,
                qty,
                units_first
            }
        ),
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
                Step::Hold { deadline, buyer, qty, units_first } => {
                    handle += 1;
                    let before = units.get(&buyer).copied().unwrap_or(0);
                    if units_first {
                        units.insert(buyer, before + qty);
                    }
                    let now = units.clone();
                    book.insert((deadline, handle), qty, buyer, |b| {
                        now.get(&b).copied().unwrap_or(0)
                    });
                    if !units_first {
                        units.insert(buyer, before + qty);
                        book.units_changed(buyer, before + qty);
                    }
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
fn a_copy_counts_its_own_memory_and_gives_it_back_as_its_holds_end() {
    let mut book = HoldBook::default();
    let units = |_| 10;
    // Maps grown past their contents: a copy holds less than the original.
    for handle in 0..3u32 {
        book.insert((100, handle), 1, 7, units);
    }
    book.remove(&(100, 2), units);
    let mut copy = book.clone();
    assert!(copy.heap_usage() <= book.heap_usage());
    for handle in 0..2u32 {
        assert_eq!(copy.remove(&(100, handle), units), Some(1));
    }
    assert_eq!((copy.maps_heap, copy.heap_usage()), (0, 0));
    assert_eq!(book.len(), 2);
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
