//! Each call judged and applied in one go, as the unit and property tests
//! drive an item. The module never does this: it judges, publishes what it
//! decided, then applies (see `write.rs`), so none of it is built outside
//! the tests.

use super::*;

/// A hold that lapsed, as released.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lapsed {
    pub request_id: Vec<u8>,
    pub user: Vec<u8>,
    pub qty: i64,
}

/// What an ADD did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Restock {
    /// Stock grew; the remaining stock after it.
    Added { remaining: i64 },
    /// An unlimited item has nothing to add to.
    Unlimited,
}

impl Restock {
    /// ADD's reply.
    pub fn reply(self) -> i64 {
        match self {
            Restock::Added { remaining } => remaining,
            Restock::Unlimited => UNLIMITED_STOCK,
        }
    }
}

impl SaleItem {
    /// Puts `qty` more units on sale.
    pub fn add(&mut self, qty: i64) -> Result<Restock, ItemError> {
        Ok(match self.judge_add(qty, Moment::Untimed)? {
            Verdict::Answer(_) => Restock::Unlimited,
            Verdict::Change(change) => Restock::Added {
                remaining: self.apply(&[], change),
            },
        })
    }
    /// Sells `qty` units to `user` if the sale window, the stock and the
    /// user's limit allow, recording the purchase under `request_id` when
    /// one is given. With `hold_until` (Unix ms; it needs a request id) the
    /// units are reserved until CONFIRM, REFUND or that deadline. Judged at
    /// `moment`, releasing the lapsed holds its sale needs, as the module does.
    pub fn deduct(
        &mut self,
        user: &[u8],
        qty: i64,
        request_id: Option<&[u8]>,
        moment: Moment,
        hold_until: Option<i64>,
    ) -> Result<Deduction, ItemError> {
        let order = Order {
            user,
            qty,
            request_id,
            hold_until,
        };
        Ok(match self.judge_deduct(order, moment)? {
            Verdict::Answer(deduction) => deduction,
            Verdict::Change(change) => {
                let settle = match moment.lapses_at() {
                    Some(at) => self.settle_plan(&change, at, 0),
                    None => Vec::new(),
                };
                Deduction::Bought {
                    remaining: self.apply(&settle, change),
                }
            }
        })
    }

    /// Turns the pending hold under `request_id` into a purchase for good.
    pub fn confirm(&mut self, request_id: &[u8]) -> Confirmation {
        match self.judge_confirm(request_id, Moment::Untimed) {
            Verdict::Answer(confirmation) => confirmation,
            Verdict::Change(change) => {
                self.apply(&[], change);
                Confirmation::Confirmed
            }
        }
    }
    /// Releases at most `max` holds whose deadline is `now` or earlier:
    /// their units go back to the stock and to their users' quotas.
    pub fn release_due(&mut self, now: i64, max: usize) -> Vec<Lapsed> {
        let due: Vec<HoldRef> = self
            .ledger
            .holds
            .due_at(now)
            .take(max)
            .map(|(hold, _)| hold)
            .collect();
        let lapsed = due.iter().map(|hold| self.lapsed(*hold)).collect();
        self.apply(&due, Change::Nothing);
        lapsed
    }

    /// Releases the named holds whatever the time: what a replica or an AOF
    /// replay does when its master released them. Returns those that were
    /// still pending.
    pub fn release(&mut self, request_ids: &[&[u8]]) -> Vec<Lapsed> {
        match self.judge_release(request_ids, Moment::Untimed) {
            Verdict::Answer(_) => Vec::new(),
            Verdict::Change(Change::Release(holds)) => {
                let lapsed = holds.iter().map(|hold| self.lapsed(*hold)).collect();
                self.apply(&[], Change::Release(holds));
                lapsed
            }
            Verdict::Change(change) => {
                self.apply(&[], change);
                Vec::new()
            }
        }
    }
    /// Gives back the units bought under `request_id`, once. Returns the
    /// units returned: 0 when the id is unknown or already refunded.
    pub fn refund(&mut self, request_id: &[u8]) -> Result<i64, ItemError> {
        Ok(match self.judge_refund(request_id, Moment::Untimed)? {
            Verdict::Answer(units) => units,
            Verdict::Change(change) => self.apply(&[], change),
        })
    }
    /// What releasing `hold` will report, read before it is released.
    pub fn lapsed(&self, (_, handle): HoldRef) -> Lapsed {
        let request = self.ledger.request(handle);
        Lapsed {
            request_id: self.ledger.request_id(handle).to_vec(),
            user: request.user.to_vec(),
            qty: request.qty,
        }
    }
}

impl SaleItem {
    /// `TAKE`, judged and applied: the units taken (or taken then, for a
    /// replay).
    pub fn take(&mut self, take: Take) -> Result<i64, ItemError> {
        Ok(match self.judge_take(take)? {
            Verdict::Answer(taken) => taken,
            Verdict::Change(change) => self.apply(&[], change),
        })
    }

    /// `ADD ... ID`, judged and applied: the stock after the first call.
    pub fn receive(&mut self, transfer_id: &[u8], units: i64) -> Result<i64, ItemError> {
        self.receive_at(transfer_id, units, Moment::Untimed)
    }

    /// `receive` judged at `moment`, releasing no lapsed hold.
    pub fn receive_at(
        &mut self,
        transfer_id: &[u8],
        units: i64,
        moment: Moment,
    ) -> Result<i64, ItemError> {
        Ok(match self.judge_transfer_in(transfer_id, units, moment)? {
            Verdict::Answer(reply) => reply,
            Verdict::Change(change) => self.apply(&[], change),
        })
    }

    /// `SETTLE`, judged and applied.
    pub fn settle(&mut self, transfer_id: &[u8]) -> i64 {
        match self.judge_settle(transfer_id) {
            Verdict::Answer(reply) => reply,
            Verdict::Change(change) => self.apply(&[], change),
        }
    }
}
