//! Which moves to make, decided from what the parts hold: no Redis here.

/// When a part is low, and how much a donor keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Watermarks {
    /// A part at or below this many units is refilled.
    pub low: i64,
}

/// One move: `units` from part `from` to part `to`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Move {
    pub from: usize,
    pub to: usize,
    pub units: i64,
}

/// The moves for one round, given each part's stock (`None`: the part has
/// no item, so it neither gives nor receives). Each low part gets half of
/// what separates it from the fullest part, which keeps the richer half;
/// a donor gives only while it holds more than the part it fills, so the
/// stock converges instead of bouncing, and a last unit stays where it is
/// (its own buyers take it). Every part with stock can thus sell, and no
/// part is left dry while another holds two units or more.
pub fn moves(stocks: &[Option<i64>], marks: Watermarks) -> Vec<Move> {
    let mut stock: Vec<Option<i64>> = stocks.to_vec();
    let mut planned = Vec::new();
    let mut lows: Vec<usize> = (0..stock.len())
        .filter(|i| stock[*i].is_some_and(|units| units <= marks.low))
        .collect();
    // The emptiest first.
    lows.sort_by_key(|i| (stock[*i], *i));
    // A part that received in this round does not give in it: units go
    // straight from the parts that had them.
    let mut received: Vec<usize> = Vec::new();
    for to in lows {
        let Some((from, donor)) = stock
            .iter()
            .enumerate()
            .filter_map(|(i, units)| units.map(|units| (i, units)))
            .filter(|(i, _)| *i != to && !received.contains(i))
            .max_by_key(|(i, units)| (*units, std::cmp::Reverse(*i)))
        else {
            continue;
        };
        let receiver = stock[to].unwrap_or(0);
        let units = (donor - receiver) / 2;
        if units <= 0 {
            continue;
        }
        stock[from] = Some(donor - units);
        stock[to] = Some(receiver + units);
        received.push(to);
        planned.push(Move { from, to, units });
    }
    planned
}

/// What one part of an item sells, as the rebalancer reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Shelf {
    /// No item here, or one that cannot be read: it neither gives nor
    /// receives.
    Absent,
    /// One stock; `None` if unlimited (nothing to move).
    Own(Option<i64>),
    /// A drop's variants (sizes, colours), each name with its stock.
    Variants(Vec<(String, i64)>),
}

/// The stocks to balance, one column per stock the parts share: the
/// parts' own stock (`None`) and each variant by name, in the order the
/// parts first name them. A part that lacks a stock, or holds an unlimited
/// one, is `None` in that column: a size moves only between parts that
/// sell it, and never into or out of a part without sizes.
pub fn columns(shelves: &[Shelf]) -> Vec<(Option<String>, Vec<Option<i64>>)> {
    let mut columns: Vec<(Option<String>, Vec<Option<i64>>)> = Vec::new();
    let mut column = |name: Option<&str>| -> usize {
        if let Some(at) = columns.iter().position(|(n, _)| n.as_deref() == name) {
            return at;
        }
        columns.push((name.map(str::to_owned), vec![None; shelves.len()]));
        columns.len() - 1
    };
    let mut cells = Vec::new();
    for (part, shelf) in shelves.iter().enumerate() {
        match shelf {
            Shelf::Absent => {}
            Shelf::Own(stock) => cells.push((column(None), part, *stock)),
            Shelf::Variants(variants) => {
                for (name, stock) in variants {
                    let limited = (*stock != UNLIMITED_STOCK).then_some(*stock);
                    cells.push((column(Some(name)), part, limited));
                }
            }
        }
    }
    for (at, part, stock) in cells {
        if let Some(cell) = columns
            .get_mut(at)
            .and_then(|(_, stocks)| stocks.get_mut(part))
        {
            *cell = stock;
        }
    }
    columns
}

/// The stock the module reports for an unlimited item or variant.
const UNLIMITED_STOCK: i64 = i64::MAX;

/// The transfer id of a mover's `sequence`-th move: the mover's name and
/// the moment it started make ids unique across movers and restarts, so an
/// id never meets a transfer recorded by another move, even in a part
/// deleted and created again under the same name. (Ids derived from what a
/// part holds would repeat for a part created anew, and a replayed `ADD`
/// would then add nothing.)
pub fn transfer_id(mover: &str, started_ms: u128, sequence: u64) -> String {
    let id = format!("rb:{mover}:{started_ms}:{sequence}");
    if id.len() <= MAX_TRANSFER_ID_LEN {
        return id;
    }
    // A long mover name: its hash stands in for it.
    format!(
        "rb:{:016x}:{started_ms}:{sequence}",
        fnv1a64(mover.as_bytes())
    )
}

/// The longest transfer id the module takes.
const MAX_TRANSFER_ID_LEN: usize = 128;

fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const MARKS: Watermarks = Watermarks { low: 2 };

    #[test]
    fn a_dry_part_gets_half_of_what_separates_it_from_the_fullest() {
        assert_eq!(
            moves(&[Some(100), Some(0), Some(40)], MARKS),
            [Move {
                from: 0,
                to: 1,
                units: 50
            }]
        );
    }

    #[test]
    fn each_low_part_is_refilled_in_one_round_emptiest_first() {
        assert_eq!(
            moves(&[Some(1), Some(0), Some(90)], MARKS),
            [
                Move {
                    from: 2,
                    to: 1,
                    units: 45
                },
                Move {
                    from: 2,
                    to: 0,
                    units: 22
                },
            ]
        );
    }

    #[test]
    fn nothing_moves_when_no_part_is_low_or_no_donor_has_more() {
        assert!(moves(&[Some(10), Some(9), Some(3)], MARKS).is_empty());
        assert!(moves(&[Some(1), Some(0), Some(0)], MARKS).is_empty());
        assert!(moves(&[Some(1), Some(1), Some(0)], MARKS).is_empty());
        assert!(moves(&[Some(0), Some(0)], MARKS).is_empty());
        assert!(moves(&[Some(5)], MARKS).is_empty());
    }

    #[test]
    fn near_the_end_a_low_part_still_gives_its_spare_units() {
        // Every part is low, but one holds two units: one moves.
        assert_eq!(
            moves(&[Some(2), Some(0), Some(0)], MARKS),
            [Move {
                from: 0,
                to: 1,
                units: 1
            }]
        );
    }

    #[test]
    fn a_missing_part_neither_gives_nor_receives() {
        assert_eq!(
            moves(&[None, Some(0), Some(10)], MARKS),
            [Move {
                from: 2,
                to: 1,
                units: 5
            }]
        );
    }

    fn sizes(stocks: &[(&str, i64)]) -> Shelf {
        Shelf::Variants(
            stocks
                .iter()
                .map(|(name, stock)| ((*name).to_owned(), *stock))
                .collect(),
        )
    }

    #[test]
    fn each_size_is_a_column_of_the_parts_that_sell_it() {
        let shelves = [
            sizes(&[("42", 5), ("43", 0)]),
            Shelf::Absent,
            sizes(&[("43", 9), ("44", i64::MAX)]),
            Shelf::Own(Some(7)),
        ];
        assert_eq!(
            columns(&shelves),
            [
                (Some("42".to_owned()), vec![Some(5), None, None, None]),
                (Some("43".to_owned()), vec![Some(0), None, Some(9), None]),
                (Some("44".to_owned()), vec![None, None, None, None]),
                (None, vec![None, None, None, Some(7)]),
            ]
        );
    }

    #[test]
    fn parts_without_sizes_make_one_column() {
        let shelves = [Shelf::Own(Some(1)), Shelf::Own(None), Shelf::Own(Some(8))];
        assert_eq!(columns(&shelves), [(None, vec![Some(1), None, Some(8)])]);
        assert!(columns(&[Shelf::Absent, Shelf::Absent]).is_empty());
    }

    #[test]
    fn transfer_ids_are_unique_per_move_and_fit() {
        assert_ne!(transfer_id("a", 1, 1), transfer_id("a", 1, 2));
        assert_ne!(transfer_id("a", 1, 1), transfer_id("a", 2, 1));
        assert_ne!(transfer_id("a", 1, 1), transfer_id("b", 1, 1));
        let long = transfer_id(&"x".repeat(300), u128::MAX, u64::MAX);
        assert!(long.len() <= 128, "{long}");
        assert_ne!(long, transfer_id(&"y".repeat(300), u128::MAX, u64::MAX));
    }
}
