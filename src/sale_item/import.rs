//! Records loaded into an item from outside: `SECKILL.IMPORT`, with which
//! a lost item is rebuilt from the order database's rows.
//!
//! Each record is what a sequence of sales would have left: a buyer's
//! units bought without a request id, or a purchase under a request id
//! with its status, deadline and reply. A call is judged whole before
//! anything is applied, against the same bookkeeping every write keeps
//! (stock, per-user limit, counters, room), so a refused call changes
//! nothing and an accepted one leaves an item that saves and loads again.

use super::change::{Change, Verdict};
use super::ledger::{Lookup, NewRequest, RequestState};
use super::scan::Status;
use super::{valid_id, ItemError, SaleItem, Stock};
use std::collections::{HashMap, HashSet};

/// Most records one call imports: a call is judged and applied whole.
pub const MAX_IMPORT_RECORDS: usize = 10_000;

/// One record to import.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ImportRecord<'a> {
    /// `units` bought by `user` without a request id.
    Buyer { user: &'a [u8], units: i64 },
    /// A purchase under request id `id`, in `status`: `deadline` is a
    /// hold's (Unix ms; 0 for none), `reply` the stock it answered, which
    /// a retry under the id gets again.
    Request {
        id: &'a [u8],
        user: &'a [u8],
        qty: i64,
        status: Status,
        deadline: i64,
        reply: i64,
    },
}

impl ImportRecord<'_> {
    fn user(&self) -> &[u8] {
        match self {
            ImportRecord::Buyer { user, .. } | ImportRecord::Request { user, .. } => user,
        }
    }

    /// Units the record leaves its buyer holding.
    pub(super) fn units_held(&self) -> i64 {
        match *self {
            ImportRecord::Buyer { units, .. } => units,
            ImportRecord::Request { qty, status, .. } => match status {
                Status::Purchased | Status::Confirmed | Status::Held => qty,
                Status::Refunded | Status::Lapsed => 0,
            },
        }
    }

    /// Units the record sold, returned or not.
    fn units_sold(&self) -> i64 {
        match *self {
            ImportRecord::Buyer { units, .. } => units,
            ImportRecord::Request { qty, .. } => qty,
        }
    }
}

/// Why an import is refused, besides the errors every write has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ImportError {
    Item(ItemError),
    /// A request id is in the item already, or twice in the call.
    DuplicateRequest,
    /// The records hold more units than the item has in stock.
    SupplyTooSmall,
    /// A user would hold more than the item's LIMIT.
    AboveLimit,
    /// A record no sale leaves: a held or confirmed one without a
    /// deadline, or one the loaders' rules refuse (the reason).
    BadRecord(&'static str),
    TooManyRecords,
}

impl From<ItemError> for ImportError {
    fn from(error: ItemError) -> ImportError {
        ImportError::Item(error)
    }
}

fn state_of(status: Status) -> RequestState {
    match status {
        Status::Purchased | Status::Confirmed => RequestState::Purchased,
        Status::Held => RequestState::Held,
        Status::Refunded => RequestState::Refunded,
        Status::Lapsed => RequestState::Expired,
    }
}

impl SaleItem {
    /// Judges an import of `records`, in their order.
    pub fn judge_import<'a>(
        &self,
        records: Vec<ImportRecord<'a>>,
    ) -> Result<Verdict<'a, i64>, ImportError> {
        if records.len() > MAX_IMPORT_RECORDS {
            return Err(ImportError::TooManyRecords);
        }
        let mut ids = HashSet::new();
        let mut units_of: HashMap<&[u8], i64> = HashMap::new();
        let (mut holding, mut sold, mut refunded, mut expired, mut held) =
            (0i64, 0i64, 0i64, 0i64, 0i64);
        let mut bytes = 0usize;
        let add = |total: &mut i64, units: i64| -> Result<(), ImportError> {
            *total = total.checked_add(units).ok_or(ItemError::Overflow)?;
            Ok(())
        };
        for record in &records {
            let user = record.user();
            if !valid_id(user) {
                return Err(ItemError::BadId.into());
            }
            if record.units_sold() <= 0 {
                return Err(ItemError::NonPositiveQuantity.into());
            }
            if let ImportRecord::Request {
                id,
                qty,
                status,
                deadline,
                reply,
                ..
            } = *record
            {
                if !valid_id(id) {
                    return Err(ItemError::BadId.into());
                }
                let needs_deadline = matches!(status, Status::Held | Status::Confirmed);
                if deadline < 0 || (needs_deadline && deadline == 0) {
                    return Err(ImportError::BadRecord(
                        "a held or confirmed record needs a deadline",
                    ));
                }
                // The rules every loader applies to a request record.
                let request = NewRequest {
                    qty,
                    reply,
                    state: state_of(status),
                    deadline,
                };
                self.check_request(&request)
                    .map_err(|error| ImportError::BadRecord(error.0))?;
                if !ids.insert(id) || matches!(self.ledger.find_request(id), Lookup::Found(_)) {
                    return Err(ImportError::DuplicateRequest);
                }
                match status {
                    Status::Refunded => add(&mut refunded, qty)?,
                    Status::Lapsed => add(&mut expired, qty)?,
                    Status::Held => add(&mut held, qty)?,
                    Status::Purchased | Status::Confirmed => {}
                }
                bytes += id.len() + 36;
            }
            add(&mut sold, record.units_sold())?;
            add(&mut holding, record.units_held())?;
            let units = match units_of.get_mut(user) {
                Some(units) => units,
                None => {
                    let before = match self.ledger.find_buyer(user) {
                        Lookup::Found(buyer) => buyer.units,
                        Lookup::Missing(_) => {
                            bytes += user.len() + 9;
                            0
                        }
                    };
                    units_of.entry(user).or_insert(before)
                }
            };
            add(units, record.units_held())?;
            if self.limit > 0 && *units > self.limit {
                return Err(ImportError::AboveLimit);
            }
        }
        if let Stock::Limited(stock) = self.stock {
            if holding > stock {
                return Err(ImportError::SupplyTooSmall);
            }
        }
        for (total, more) in [
            (self.sold, sold),
            (self.refunded, refunded),
            (self.ledger.expired, expired),
            (self.ledger.held, held),
        ] {
            total.checked_add(more).ok_or(ItemError::Overflow)?;
        }
        if !self.ledger.has_room_for(bytes) {
            return Err(ItemError::Full.into());
        }
        Ok(Verdict::Change(Change::Import(records)))
    }

    /// What an import of `records` into the variant at `index` must
    /// respect besides that variant's own rules (`judge_import` on it): a
    /// request id names one purchase of one variant, so none may be in
    /// another variant, and the item's limit across its variants, counting
    /// each buyer's units in every variant (as stored: an import reads no
    /// clock, so a lapsed hold the sweep has not released yet counts) and
    /// those the records add.
    pub fn judge_import_across(
        &self,
        index: usize,
        records: &[ImportRecord],
    ) -> Result<(), ImportError> {
        let variants = self.variants();
        let others = || {
            variants
                .iter()
                .enumerate()
                .filter(move |(place, _)| *place != index)
                .map(|(_, variant)| &variant.item)
        };
        let mut added: HashMap<&[u8], i64> = HashMap::new();
        for record in records {
            if let ImportRecord::Request { id, .. } = *record {
                if others().any(|other| matches!(other.ledger.find_request(id), Lookup::Found(_))) {
                    return Err(ImportError::DuplicateRequest);
                }
            }
            if self.limit > 0 {
                let units = added.entry(record.user()).or_insert(0);
                *units = units
                    .checked_add(record.units_held())
                    .ok_or(ItemError::Overflow)?;
            }
        }
        for (user, units) in added {
            let total = variants
                .iter()
                .try_fold(units, |total, variant| {
                    total.checked_add(variant.item.bought(user))
                })
                .ok_or(ItemError::Overflow)?;
            if total > self.limit {
                return Err(ImportError::AboveLimit);
            }
        }
        Ok(())
    }

    /// Imports records judged by `judge_import`; returns how many.
    pub(super) fn apply_import(&mut self, records: Vec<ImportRecord>) -> i64 {
        let count = records.len() as i64;
        for record in records {
            let user = record.user();
            let ledger = &mut *self.ledger;
            let mut buyer = match ledger.find_buyer(user) {
                Lookup::Found(buyer) => buyer,
                // Room was checked while judging.
                Lookup::Missing(hash) => match ledger.add_buyer(hash, user, 0) {
                    Ok(buyer) => buyer,
                    Err(_) => continue,
                },
            };
            // Units before the hold, as a purchase does: the hold book
            // never sees more held than the buyer has.
            ledger.add_units(&mut buyer, record.units_held());
            if let ImportRecord::Request {
                id,
                qty,
                status,
                deadline,
                reply,
                ..
            } = record
            {
                let request = NewRequest {
                    qty,
                    reply,
                    state: state_of(status),
                    deadline,
                };
                let hash = ledger.hash_id(id);
                if let Ok(handle) = ledger.add_request(hash, id, &buyer, request) {
                    match status {
                        Status::Held => {
                            ledger.add_hold((deadline, handle), qty, buyer.handle());
                            ledger.held = ledger.held.saturating_add(qty);
                        }
                        Status::Refunded => self.refunded = self.refunded.saturating_add(qty),
                        Status::Lapsed => ledger.expired = ledger.expired.saturating_add(qty),
                        Status::Purchased | Status::Confirmed => {}
                    }
                }
            }
            if let Stock::Limited(units) = self.stock {
                self.stock = Stock::Limited(units.saturating_sub(record.units_held()).max(0));
            }
            self.sold = self.sold.saturating_add(record.units_sold());
        }
        count
    }
}
