//! Stock moves between the parts of an item split over several shards.
//!
//! A mover takes units out of one part (`TAKE`, recorded there under a
//! transfer id) and adds them to another (`ADD ... ID`, recorded there
//! under the same id). Each side applies a transfer id at most once, and
//! the source keeps its transfer open until told it arrived (`SETTLE`), so
//! a mover that dies between the two steps is finished by the next one
//! from what the parts hold: no unit is created or lost, and no
//! cross-shard atomicity is needed.
//!
//! Transfer ids live in their own namespace, apart from request ids, and
//! follow the same rules (1 to `MAX_ID_LEN` bytes).

use super::change::{Change, Verdict};
use super::{valid_id, ItemError, Moment, SaleItem, Stock};
use std::collections::BTreeMap;

/// Transfers an item keeps at most: each stays recorded for good (a replay
/// must find it), so the bound keeps a runaway mover from growing an item
/// without end.
pub const MAX_TRANSFERS: usize = 10_000;

/// Longest destination name a `TAKE` records.
pub const MAX_DESTINATION_LEN: usize = 255;

/// One transfer, as a part recorded it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Transfer {
    /// Units this part gave out (`TAKE`).
    Out {
        /// The units asked for; a replay must ask for the same.
        requested: i64,
        /// The units taken: up to `requested`, as the stock allowed.
        taken: i64,
        /// Where the mover said the units go, if it said.
        destination: Option<Box<[u8]>>,
        /// Not yet known to have arrived (`SETTLE` closes it).
        open: bool,
    },
    /// Units this part received (`ADD ... ID`).
    In {
        units: i64,
        /// The stock the first call replied, replied again to a replay.
        reply: i64,
    },
}

/// What a part holds of its transfers.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Transfers {
    pub(super) by_id: BTreeMap<Box<[u8]>, Transfer>,
    /// Units ever given out, and ever received.
    pub(super) moved_out: i64,
    pub(super) moved_in: i64,
}

impl Transfers {
    pub fn is_empty(&self) -> bool {
        self.by_id.is_empty() && self.moved_out == 0 && self.moved_in == 0
    }

    pub fn iter(&self) -> impl Iterator<Item = (&[u8], &Transfer)> {
        self.by_id.iter().map(|(id, transfer)| (&**id, transfer))
    }

    /// Bytes of heap the records take, for MEMORY USAGE (a B-tree entry
    /// costs about its key and value plus a share of its node).
    pub fn heap_usage(&self) -> usize {
        self.by_id
            .iter()
            .map(|(id, transfer)| {
                let destination = match transfer {
                    Transfer::Out {
                        destination: Some(destination),
                        ..
                    } => destination.len(),
                    _ => 0,
                };
                id.len() + destination + std::mem::size_of::<Transfer>() + 24
            })
            .sum()
    }
}

/// The validated arguments of a `TAKE`.
#[derive(Clone, Copy, Debug)]
pub struct Take<'a> {
    pub transfer_id: &'a [u8],
    pub requested: i64,
    pub destination: Option<&'a [u8]>,
    /// The units the master took, where this server applies its master's
    /// decision (a replica, an AOF replay); `None` where it decides.
    pub decided: Option<i64>,
}

impl SaleItem {
    pub fn transfers(&self) -> Option<&Transfers> {
        self.rare.as_ref().map(|rare| &rare.transfers)
    }

    pub(super) fn transfers_mut(&mut self) -> &mut Transfers {
        &mut self.rare.get_or_insert_with(Box::default).transfers
    }

    pub fn moved_out(&self) -> i64 {
        self.transfers().map_or(0, |transfers| transfers.moved_out)
    }

    pub fn moved_in(&self) -> i64 {
        self.transfers().map_or(0, |transfers| transfers.moved_in)
    }

    /// True if this part recorded a transfer under `transfer_id`, either
    /// way.
    pub fn knows_transfer(&self, transfer_id: &[u8]) -> bool {
        self.transfer(transfer_id).is_some()
    }

    fn transfer(&self, transfer_id: &[u8]) -> Option<&Transfer> {
        self.transfers()?.by_id.get(transfer_id)
    }

    fn check_room_for_a_transfer(&self) -> Result<(), ItemError> {
        if self.transfers().map_or(0, |t| t.by_id.len()) >= MAX_TRANSFERS {
            return Err(ItemError::TooManyTransfers);
        }
        Ok(())
    }

    /// Judges a `TAKE`: up to `requested` units of the stock now in hand
    /// (units of lapsed holds not yet released move with a later `TAKE`).
    /// A replay of the transfer id answers what it took then.
    pub fn judge_take<'a>(&self, take: Take<'a>) -> Result<Verdict<'a, i64>, ItemError> {
        if take.requested <= 0 {
            return Err(ItemError::NonPositiveQuantity);
        }
        if !valid_id(take.transfer_id) {
            return Err(ItemError::BadId);
        }
        let Stock::Limited(stock) = self.stock else {
            return Err(ItemError::UnlimitedTransfer);
        };
        match self.transfer(take.transfer_id) {
            Some(Transfer::Out {
                requested, taken, ..
            }) if *requested == take.requested => return Ok(Verdict::Answer(*taken)),
            Some(_) => return Err(ItemError::TransferMismatch),
            None => {}
        }
        let possible = take.requested.min(stock).max(0);
        let taken = take
            .decided
            .map_or(possible, |decided| decided.clamp(0, possible));
        // Nothing to take: nothing is recorded either, so that empty takes
        // never use up the item's transfers. A retry of the same id may
        // then take units that arrived since, which is a take of its own:
        // it is recorded, open, and delivered like any other.
        if taken == 0 {
            return Ok(Verdict::Answer(0));
        }
        self.check_room_for_a_transfer()?;
        self.moved_out()
            .checked_add(taken)
            .ok_or(ItemError::Overflow)?;
        Ok(Verdict::Change(Change::Take {
            transfer_id: take.transfer_id,
            requested: take.requested,
            taken,
            destination: take.destination,
        }))
    }

    /// Judges an `ADD ... ID`: adds `units` once per transfer id; a replay
    /// answers the stock the first call replied.
    pub fn judge_transfer_in<'a>(
        &self,
        transfer_id: &'a [u8],
        units: i64,
        moment: Moment,
    ) -> Result<Verdict<'a, i64>, ItemError> {
        if units <= 0 {
            return Err(ItemError::NonPositiveQuantity);
        }
        if !valid_id(transfer_id) {
            return Err(ItemError::BadId);
        }
        let Stock::Limited(stock) = self.stock else {
            return Err(ItemError::UnlimitedTransfer);
        };
        match self.transfer(transfer_id) {
            Some(Transfer::In {
                units: added,
                reply,
            }) if *added == units => return Ok(Verdict::Answer(*reply)),
            Some(_) => return Err(ItemError::TransferMismatch),
            None => {}
        }
        self.check_room_for_a_transfer()?;
        // Everything ever received stays below the unlimited figure, as
        // ADD keeps what was supplied.
        let received = self
            .supplied_with_transfers()
            .checked_add(units)
            .ok_or(ItemError::Overflow)?;
        if received == i64::MAX || stock.checked_add(units).is_none() {
            return Err(ItemError::Overflow);
        }
        Ok(Verdict::Change(Change::TransferIn {
            transfer_id,
            units,
            moment,
        }))
    }

    /// Judges a `SETTLE`: 1 closes an open transfer given out, 0 if it was
    /// closed already, -4 if this part gave out no transfer under that id
    /// (a `TAKE` that found no stock records none).
    pub fn judge_settle<'a>(&self, transfer_id: &'a [u8]) -> Verdict<'a, i64> {
        match self.transfer(transfer_id) {
            Some(Transfer::Out { open: true, .. }) => Verdict::Change(Change::Settle(transfer_id)),
            Some(Transfer::Out { open: false, .. }) => Verdict::Answer(0),
            _ => Verdict::Answer(-4),
        }
    }

    /// Transfers given out and not settled, by transfer id: (id, units
    /// taken, destination).
    pub fn open_transfers(&self) -> impl Iterator<Item = (&[u8], i64, Option<&[u8]>)> {
        self.transfers()
            .into_iter()
            .flat_map(|transfers| transfers.iter())
            .filter_map(|(id, transfer)| match transfer {
                Transfer::Out {
                    taken,
                    destination,
                    open: true,
                    ..
                } => Some((id, *taken, destination.as_deref())),
                _ => None,
            })
    }

    /// Everything ever supplied to this part: put on sale by INIT and ADD,
    /// and received from other parts.
    pub(super) fn supplied_with_transfers(&self) -> i64 {
        self.initial
            .saturating_add(self.added)
            .saturating_add(self.moved_in())
    }

    pub(super) fn apply_take(
        &mut self,
        transfer_id: &[u8],
        requested: i64,
        taken: i64,
        destination: Option<&[u8]>,
    ) -> i64 {
        if let Stock::Limited(units) = self.stock {
            self.stock = Stock::Limited(units - taken);
        }
        let transfers = self.transfers_mut();
        transfers.moved_out += taken;
        transfers.by_id.insert(
            transfer_id.into(),
            Transfer::Out {
                requested,
                taken,
                destination: destination.map(Into::into),
                open: true,
            },
        );
        taken
    }

    pub(super) fn apply_transfer_in(
        &mut self,
        transfer_id: &[u8],
        units: i64,
        moment: Moment,
    ) -> i64 {
        if let Stock::Limited(stock) = self.stock {
            self.stock = Stock::Limited(stock + units);
        }
        // The stock as reads report it, lapsed holds counted as given back
        // (not every one is released by this write): what every replay of
        // the transfer answers.
        let reply = self.virtual_stock(self.lapsing(moment, None).0);
        let transfers = self.transfers_mut();
        transfers.moved_in += units;
        transfers
            .by_id
            .insert(transfer_id.into(), Transfer::In { units, reply });
        reply
    }

    pub(super) fn apply_settle(&mut self, transfer_id: &[u8]) -> i64 {
        if let Some(Transfer::Out { open, .. }) = self.transfers_mut().by_id.get_mut(transfer_id) {
            *open = false;
        }
        1
    }
}
