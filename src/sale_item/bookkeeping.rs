//! The rules an item's records and counters keep, checked whenever an
//! item comes from outside (a file, a full sync, RESTORE, an AOF chunk):
//! each is kept by every write, so an item no sequence of sales produces
//! is refused.

use super::codec::{DecodeError, Expected};
use crate::sale_item::ledger::{sort_by_handle, NewRequest, RequestState};

use crate::sale_item::{SaleItem, Stock, UNLIMITED_STOCK};

impl SaleItem {
    /// Checks that a fully loaded item holds what its header announced, and
    /// that its records agree with its counters (`check_bookkeeping`).
    ///
    /// Redis refuses the whole file when one item fails here, so every rule
    /// is one that every write keeps: an item the module holds in memory
    /// always saves into something this accepts.
    pub fn check_loaded(&self, expected: Expected) -> Result<(), DecodeError> {
        if self.ledger.holder_count() as u64 != expected.buyers
            || self.ledger.request_count() as u64 != expected.requests
        {
            return Err(DecodeError("record count differs from header"));
        }
        self.check_bookkeeping()
    }

    /// `check_loaded` for an item loaded in one go by `load_chunk_tallied`
    /// into `tally`, from an empty item: the same rules, checked from what
    /// the tally gathered instead of a second pass over the records.
    pub fn check_loaded_tally(&self, expected: Expected, tally: Tally) -> Result<(), DecodeError> {
        if self.ledger.holder_count() as u64 != expected.buyers
            || self.ledger.request_count() as u64 != expected.requests
        {
            return Err(DecodeError("record count differs from header"));
        }
        self.check_counters(self.ledger.holder_count() as u64)?;
        self.check_tally(tally)
    }

    /// Checks the whole item against the sale's bookkeeping, in one pass
    /// over its buyers and one over its requests:
    ///
    /// - the header's rules (`check_counters`);
    /// - every buyer holds at least one unit and at most the per-user limit
    ///   (the limit is fixed at INIT, and only DEDUCT adds units, after
    ///   checking it);
    /// - the buyers hold at most the units sold and not given back;
    /// - per user, purchased and held requests add up to at most what the
    ///   user holds (purchases without a request id add units with no
    ///   record, so this is not an equality);
    /// - refunded and lapsed requests add up to at most the units refunded
    ///   and expired;
    /// - held units are those of the held requests, and every hold has a
    ///   deadline;
    /// - a request's reply is a stock the item could have had.
    ///
    /// The sums are bounds rather than equalities on purpose. A sale keeps
    /// them equal (the buyers hold exactly what was sold and not given
    /// back; refunds and lapses are exactly those of the refunded and
    /// lapsed requests), but then an item rebuilt from only some of its
    /// chunks (an AOF cut short) would hold without being able to load
    /// again once saved. The bounds are what keeps every operation exact:
    /// a refund or a lapse always finds its units with their user.
    pub fn check_bookkeeping(&self) -> Result<(), DecodeError> {
        self.check_counters(self.ledger.holder_count() as u64)?;
        let mut tally = Tally::default();
        // In arena order: one pass front to back over the records, instead
        // of a cache miss for each.
        for (buyer, units) in self.ledger.holder_handles() {
            self.tally_holder(&mut tally, buyer, units)?;
        }
        for handle in self.ledger.request_handles_in_arena_order() {
            let request = self.ledger.request_record(handle);
            let fields = NewRequest {
                qty: request.qty,
                reply: request.reply,
                state: request.state,
                deadline: request.deadline,
            };
            self.tally_request(&mut tally, request.buyer, &fields)?;
        }
        self.check_tally(tally)
    }

    /// Counts one holder's record: it holds at least one unit and at most
    /// the limit, and the holders so far hold at most the units sold and
    /// not given back.
    pub(super) fn tally_holder(
        &self,
        tally: &mut Tally,
        buyer: u32,
        units: i64,
    ) -> Result<(), DecodeError> {
        self.check_buyer(units)?;
        tally.units = within(tally.units.checked_add(units), self.net_sold())
            .ok_or(DecodeError("buyers hold more units than were sold"))?;
        tally.holders.push((buyer, units));
        Ok(())
    }

    /// Counts one request record of the buyer at handle `buyer`: its own
    /// rules, and the sums of refunded, lapsed and held units so far.
    pub(super) fn tally_request(
        &self,
        tally: &mut Tally,
        buyer: u32,
        request: &NewRequest,
    ) -> Result<(), DecodeError> {
        self.check_request(request)?;
        tally.requests += 1;
        let (sum, bound) = match request.state {
            RequestState::Refunded => (&mut tally.refunded, self.refunded),
            RequestState::Expired => (&mut tally.expired, self.ledger.expired),
            RequestState::Held => {
                tally.holds += 1;
                tally.live.push((buyer, request.qty, request.qty));
                (&mut tally.held, self.net_sold())
            }
            RequestState::Purchased => {
                tally.live.push((buyer, request.qty, 0));
                return Ok(());
            }
        };
        *sum = within(sum.checked_add(request.qty), bound)
            .ok_or(DecodeError("requests for more units than were counted"))?;
        Ok(())
    }

    /// The rules that need every record: the tally covers every holder and
    /// every request of the ledger, held units are those of the held
    /// requests, and each user's live requests add up to at most the
    /// user's units.
    pub(super) fn check_tally(&self, tally: Tally) -> Result<(), DecodeError> {
        let Tally {
            mut holders,
            mut live,
            held,
            holds,
            requests,
            ..
        } = tally;
        if holders.len() != self.ledger.holder_count() || requests != self.ledger.request_count() {
            return Err(DecodeError("records differ from the ledger"));
        }
        if held != self.ledger.held || holds != self.ledger.holds.len() {
            return Err(DecodeError("held units differ from the held requests"));
        }
        // Each user's requests against the user's units. A request record
        // stores the handle of its buyer's record (the ledger keeps one
        // per user), so sorting by handle groups by user without reading
        // or hashing ids. Both lists come in handle order from a walk of
        // the arena or from a load of group chunks, and are then left as
        // they are. A request whose user holds nothing finds no holder.
        sort_by_handle(&mut holders, |(handle, _)| *handle);
        sort_by_handle(&mut live, |(handle, _, _)| *handle);
        let mut live = live.into_iter().peekable();
        for (user, units) in holders {
            // A request of a user holding nothing has no holder.
            if live.next_if(|(next, _, _)| *next < user).is_some() {
                return Err(DecodeError("requests for more units than their user holds"));
            }
            let (mut requested, mut held) = (0i64, 0i64);
            while let Some((_, qty, more)) = live.next_if(|(next, _, _)| *next == user) {
                requested = requested.saturating_add(qty);
                held = held.saturating_add(more);
            }
            if requested > units {
                return Err(DecodeError("requests for more units than their user holds"));
            }
            // A buyer's record keeps its lapsed holds until the sweep
            // releases them, so only its units not in holds are held to
            // the per-user limit.
            if self.limit > 0 && units.saturating_sub(held) > self.limit {
                return Err(DecodeError("buyer holds more than the per-user limit"));
            }
        }
        if live.next().is_some() {
            return Err(DecodeError("requests for more units than their user holds"));
        }
        Ok(())
    }

    /// Checks the header's counters against each other, and against the
    /// `holders` announced (each holds at least one unit):
    ///
    /// - everything supplied (`initial + added`) fits in an i64, as ADD
    ///   keeps it, so that a refund can always put units back;
    /// - units refunded plus units expired are at most the units sold;
    /// - a limited item's stock plus the units sold and not given back,
    ///   plus the units moved to other parts, is what was supplied plus
    ///   what came from other parts (`stock + sold - refunded - expired +
    ///   moved_out - moved_in = initial + added`); an unlimited item was
    ///   supplied nothing (ADD leaves it alone) and moves nothing.
    pub(super) fn check_counters(&self, holders: u64) -> Result<(), DecodeError> {
        let supplied = self
            .initial
            .checked_add(self.added)
            .ok_or(DecodeError("units supplied overflow"))?;
        let received = supplied
            .checked_add(self.moved_in())
            .ok_or(DecodeError("units supplied overflow"))?;
        let given_back = within(self.refunded.checked_add(self.ledger.expired), self.sold)
            .ok_or(DecodeError("more units given back than sold"))?;
        let net_sold = self.sold - given_back;
        match self.stock {
            Stock::Limited(stock)
                if stock
                    .checked_add(net_sold)
                    .and_then(|units| units.checked_add(self.moved_out()))
                    != Some(received) =>
            {
                return Err(DecodeError(
                    "stock and units sold differ from units supplied",
                ));
            }
            Stock::Unlimited
                if self.initial != 0
                    || self.added != 0
                    || self.transfers().is_some_and(|t| !t.is_empty()) =>
            {
                return Err(DecodeError("unlimited item with units supplied"));
            }
            _ => {}
        }
        if holders > net_sold as u64 {
            return Err(DecodeError("more buyers than units sold"));
        }
        Ok(())
    }

    /// Units sold and not given back: at most what the buyers hold between
    /// them. Zero for counters `check_counters` refuses.
    pub(super) fn net_sold(&self) -> i64 {
        self.sold
            .checked_sub(self.refunded)
            .and_then(|units| units.checked_sub(self.ledger.expired))
            .map_or(0, |units| units.max(0))
    }

    /// The rules one buyer record follows on its own.
    pub(super) fn check_buyer(&self, units: i64) -> Result<(), DecodeError> {
        if units <= 0 {
            return Err(DecodeError("buyer holding nothing"));
        }
        Ok(())
    }

    /// The rules one request record follows on its own.
    pub(super) fn check_request(&self, request: &NewRequest) -> Result<(), DecodeError> {
        if request.qty <= 0 {
            return Err(DecodeError("request of nothing"));
        }
        // HOLD and HOLDUNTIL only ever give a deadline after 1970; 0 is
        // what a purchase without a hold stores.
        if request.state == RequestState::Held && request.deadline <= 0 {
            return Err(DecodeError("hold without a deadline"));
        }
        // The reply is the stock after the purchase: never more than was
        // supplied by then, which only grows; an unlimited item always
        // replies the same.
        let reply_ok = match self.stock {
            Stock::Limited(_) => request.reply >= 0 && request.reply <= self.supplied(),
            Stock::Unlimited => request.reply == UNLIMITED_STOCK,
        };
        if !reply_ok {
            return Err(DecodeError("request reply is not a stock the item had"));
        }
        Ok(())
    }

    /// Everything ever put on sale here, received transfers included:
    /// a bound of every stock the item had.
    pub(super) fn supplied(&self) -> i64 {
        self.supplied_with_transfers()
    }
}

/// `sum` if it did not overflow and is at most `bound`.
pub(super) fn within(sum: Option<i64>, bound: i64) -> Option<i64> {
    sum.filter(|sum| *sum <= bound)
}

/// What the rules of [`SaleItem::check_bookkeeping`] need from an item's
/// records, gathered one record at a time: by a walk over a stored item,
/// or by a loader as it stores each record, which then needs no second
/// pass over a big item (`check_loaded_tally`).
#[derive(Default)]
pub struct Tally {
    /// Holders by the handle of their record, with their units.
    pub(super) holders: Vec<(u32, i64)>,
    /// Purchased and held requests by their buyer's handle, with units and
    /// (for holds) units held.
    pub(super) live: Vec<(u32, i64, i64)>,
    pub(super) units: i64,
    pub(super) refunded: i64,
    pub(super) expired: i64,
    pub(super) held: i64,
    pub(super) holds: usize,
    pub(super) requests: usize,
}
