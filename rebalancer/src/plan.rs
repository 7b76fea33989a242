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
