//! Every write to an item in two steps: judge, then apply.
//!
//! A `judge_*` method looks at the item without touching it and answers
//! either with a reply that changes nothing (sold out, a replay, a refusal)
//! or with a [`Change`] the item has agreed to. Only [`SaleItem::apply`]
//! mutates, and it cannot fail: whatever could go wrong was checked while
//! judging. The Redis layer uses the gap between the two to write the
//! order stream first, so that a sale and its event happen together or not
//! at all.
//!
//! Lapsed holds (deadline passed, not yet released) are judged as released
//! already, exactly as reads report them, however many there are. Releasing
//! them for real is the timer's sweep; a write releases only what it needs
//! first (enough units for the sale), picked by [`settle_plan`].
//!
//! [`settle_plan`]: SaleItem::settle_plan

use super::ledger::{Buyer, Lookup, NewRequest, RequestState};
use super::variants::Quota;
use super::{Confirmation, Deduction, ItemError, Moment, SaleItem, Stock, StreamSetting, Window};
use std::collections::HashSet;

pub use super::ledger::HoldRef;

/// A purchase as DEDUCT asks for it.
#[derive(Clone, Copy, Debug)]
pub struct Order<'a> {
    pub user: &'a [u8],
    pub qty: i64,
    pub request_id: Option<&'a [u8]>,
    /// Unix ms the units are held until; `None` buys for good.
    pub hold_until: Option<i64>,
}

/// A purchase the item agreed to, with what recording it needs.
#[derive(Clone, Copy)]
pub struct Purchase<'a> {
    pub order: Order<'a>,
    buyer: Lookup<Buyer>,
    request_hash: Option<u64>,
    /// The stock after the purchase, as reads report it: the reply.
    pub remaining: i64,
    /// The moment the purchase reaches replicas with (its `AT`), which the
    /// item keeps as its replicated moment; `None` leaves that as it is.
    pub replicated_moment: Option<i64>,
}

/// A change an item agreed to; [`SaleItem::apply`] makes it.
pub enum Change<'a> {
    /// Only the release of lapsed holds (the timer's sweep).
    Nothing,
    Deduct(Purchase<'a>),
    Confirm(HoldRef),
    /// Gives back `qty` units of the request at `handle`, and ends its hold
    /// if it is one.
    Refund {
        handle: u32,
        hold: Option<HoldRef>,
        qty: i64,
    },
    /// Ends the named pending holds now, as if they lapsed.
    Release(Vec<HoldRef>),
    Add(i64),
    Window(Window),
    StreamSetting(Option<StreamSetting>),
    /// Gives `taken` units to another part (`TAKE`).
    Take {
        transfer_id: &'a [u8],
        requested: i64,
        taken: i64,
        destination: Option<&'a [u8]>,
    },
    /// Receives `units` from another part (`ADD ... ID`), judged at
    /// `moment` for the stock it replies.
    TransferIn {
        transfer_id: &'a [u8],
        units: i64,
        moment: Moment,
    },
    /// Closes a transfer given out (`SETTLE`).
    Settle(&'a [u8]),
    /// Records loaded from outside (`IMPORT`).
    Import(Vec<super::ImportRecord<'a>>),
}

/// What judging a write decided.
pub enum Verdict<'a, T> {
    /// Reply `T`; nothing changes.
    Answer(T),
    /// Make this change.
    Change(Change<'a>),
}

/// What `INFO seckill` counts of a change, noted before it is applied
/// (applying consumes it).
pub enum Counted {
    Sold { qty: i64, hold: bool },
    Confirmed,
    Refunded(i64),
    Released,
    Added(i64),
    MovedOut,
    MovedIn(i64),
    Other,
}

impl Change<'_> {
    /// What `INFO seckill` counts of this change.
    pub fn counted(&self) -> Counted {
        match self {
            Change::Deduct(purchase) => Counted::Sold {
                qty: purchase.order.qty,
                hold: purchase.order.hold_until.is_some(),
            },
            Change::Confirm(_) => Counted::Confirmed,
            Change::Refund { qty, .. } => Counted::Refunded(*qty),
            Change::Release(_) => Counted::Released,
            Change::Add(qty) => Counted::Added(*qty),
            Change::Take { .. } => Counted::MovedOut,
            Change::TransferIn { units, .. } => Counted::MovedIn(*units),
            Change::Nothing
            | Change::Window(_)
            | Change::StreamSetting(_)
            | Change::Settle(_)
            | Change::Import(_) => Counted::Other,
        }
    }

    /// True for a change that places a hold (the sweep must watch it).
    pub fn adds_hold(&self) -> bool {
        match self {
            Change::Deduct(purchase) => purchase.order.hold_until.is_some(),
            Change::Import(records) => records.iter().any(|record| {
                matches!(
                    record,
                    super::ImportRecord::Request {
                        status: super::Status::Held,
                        ..
                    }
                )
            }),
            _ => false,
        }
    }

    /// True for a change that ends a hold (the sweep's deadline may move).
    pub fn ends_holds(&self) -> bool {
        matches!(
            self,
            Change::Confirm(_) | Change::Release(_) | Change::Refund { hold: Some(_), .. }
        )
    }
}

impl SaleItem {
    /// Units of holds lapsed at `moment`: of everyone, and of the buyer
    /// whose name handle is `buyer`.
    pub(super) fn lapsing(&self, moment: Moment, buyer: Option<u32>) -> (i64, i64) {
        let Some(at) = moment.lapses_at() else {
            return (0, 0);
        };
        let all = self.ledger.lapsed(at).units;
        let own = match buyer {
            Some(buyer) if all > 0 => self.ledger.lapsed_of(buyer, at),
            _ => 0,
        };
        (all, own)
    }

    /// The stock reads report at `at`: lapsed holds count as given back.
    pub fn remaining_at(&self, now: i64) -> i64 {
        self.virtual_stock(self.lapsing(Moment::Now(now), None).0)
    }

    pub(super) fn virtual_stock(&self, lapsing: i64) -> i64 {
        match self.stock {
            Stock::Limited(units) => units.saturating_add(lapsing),
            Stock::Unlimited => super::UNLIMITED_STOCK,
        }
    }

    /// True if a DEDUCT of `qty` (positive) units by a valid user id, with
    /// no request id, is answered sold out at any moment: the item's stock
    /// is short of it, no hold could lapse back into it and no window
    /// could refuse first. What `judge_deduct` answers then, found with
    /// three reads: once a flash sale sells out, nearly every call is this
    /// one.
    pub fn sold_out_for(&self, qty: i64) -> bool {
        matches!(self.stock, Stock::Limited(units) if units < qty)
            && self.ledger.holds.is_empty()
            && self.window().is_always_open()
    }

    /// Starts loading the index slots a purchase by the ids `hashed`
    /// carries (see [`Quota::hashing`]) reads first: an order's lines are
    /// looked up on several items, whose cache misses then overlap.
    pub fn prefetch_purchase(&self, hashed: &Quota) {
        if let Some(hash) = hashed.request_hash {
            self.ledger.prefetch_request(hash);
        }
        if let Some(hash) = hashed.user_hash {
            self.ledger.prefetch_buyer(hash);
        }
    }

    /// Judges a DEDUCT at `moment` of an item without variants.
    #[cfg(test)]
    pub fn judge_deduct<'a>(
        &self,
        order: Order<'a>,
        moment: Moment,
    ) -> Result<Verdict<'a, Deduction>, ItemError> {
        self.judge_deduct_within(order, moment, Quota::default())
    }

    /// Judges a DEDUCT at `moment` of a variant, which must also respect
    /// the `quota` of the item that has it (see `variants`).
    #[inline]
    pub fn judge_deduct_within<'a>(
        &self,
        order: Order<'a>,
        moment: Moment,
        quota: Quota,
    ) -> Result<Verdict<'a, Deduction>, ItemError> {
        let Order {
            user,
            qty,
            request_id,
            hold_until,
        } = order;
        if qty <= 0 {
            return Err(ItemError::NonPositiveQuantity);
        }
        if !super::valid_id(user) || !request_id.is_none_or(super::valid_id) {
            return Err(ItemError::BadId);
        }
        if hold_until.is_some() && request_id.is_none() {
            return Err(ItemError::HoldWithoutId);
        }
        quota.check_hashes_of(user, request_id);
        // The buyer's record, compared and read after the request is
        // looked up and the stock judged, starts loading now (its index
        // slot was prefetched with the item, see `prefetch_purchase`).
        if let Some(hash) = quota.user_hash {
            self.ledger.prefetch_buyer_name(hash);
        }
        let find_request = |id| match quota.request_hash {
            Some(hash) => self.ledger.find_request_hashed(hash, id),
            None => self.ledger.find_request(id),
        };
        let request_hash = match request_id.map(find_request) {
            Some(Lookup::Found(handle)) => {
                let request = self.ledger.request(handle);
                if request.user != user || request.qty != qty {
                    return Err(ItemError::RequestMismatch);
                }
                let lapsed =
                    request.state == RequestState::Held && moment.has_passed(request.deadline);
                return Ok(Verdict::Answer(match request.state {
                    RequestState::Refunded | RequestState::Expired => Deduction::Cancelled,
                    RequestState::Held if lapsed => Deduction::Cancelled,
                    RequestState::Purchased | RequestState::Held => Deduction::Replayed {
                        remaining: request.reply,
                    },
                }));
            }
            Some(Lookup::Missing(hash)) => Some(hash),
            None => None,
        };
        if let Some(now) = moment.now() {
            if let Some(refusal) = self.window().refusal(now) {
                return Ok(Verdict::Answer(refusal));
            }
        }
        // Stock first: a sold-out item answers without looking at the buyer.
        let lapsing = if self.ledger.holds.is_empty() {
            0
        } else {
            self.lapsing(moment, None).0
        };
        let remaining = match self.stock {
            Stock::Limited(_) => match self.virtual_stock(lapsing) {
                units if units < qty => return Ok(Verdict::Answer(Deduction::SoldOut)),
                units => units - qty,
            },
            Stock::Unlimited => super::UNLIMITED_STOCK,
        };
        let buyer = match quota.user_hash {
            Some(hash) => self.ledger.find_buyer_hashed(hash, user),
            None => self.ledger.find_buyer(user),
        };
        let own_lapsing = match buyer {
            Lookup::Found(buyer) if lapsing > 0 => self.lapsing(moment, Some(buyer.handle())).1,
            _ => 0,
        };
        let held = match buyer {
            Lookup::Found(buyer) => buyer.units.saturating_sub(own_lapsing).max(0),
            Lookup::Missing(_) => 0,
        };
        match held.checked_add(qty) {
            Some(units) if self.limit == 0 || units <= self.limit => {}
            Some(_) => return Ok(Verdict::Answer(Deduction::LimitExceeded)),
            None if self.limit > 0 => return Ok(Verdict::Answer(Deduction::LimitExceeded)),
            None => return Err(ItemError::Overflow),
        }
        if quota.exceeded_by(held, qty) {
            return Ok(Verdict::Answer(Deduction::LimitExceeded));
        }
        // The buyer's lapsed holds stay for the sweep to release: the
        // record keeps counting them until then, and must have room.
        if let Lookup::Found(buyer) = buyer {
            buyer.units.checked_add(qty).ok_or(ItemError::Overflow)?;
        }
        self.sold.checked_add(qty).ok_or(ItemError::Overflow)?;
        if hold_until.is_some() {
            self.ledger
                .held
                .checked_add(qty)
                .ok_or(ItemError::Overflow)?;
        }
        let new_user = matches!(buyer, Lookup::Missing(_)).then_some(user);
        if !self.ledger.has_room(new_user, request_id) {
            return Err(ItemError::Full);
        }
        Ok(Verdict::Change(Change::Deduct(Purchase {
            order,
            buyer,
            request_hash,
            remaining,
            replicated_moment: None,
        })))
    }

    /// Judges a CONFIRM of the hold under `request_id`.
    pub fn judge_confirm(
        &self,
        request_id: &[u8],
        moment: Moment,
    ) -> Verdict<'static, Confirmation> {
        let Lookup::Found(handle) = self.ledger.find_request(request_id) else {
            return Verdict::Answer(Confirmation::Cancelled);
        };
        let request = self.ledger.request(handle);
        match request.state {
            RequestState::Purchased => Verdict::Answer(Confirmation::AlreadyConfirmed),
            RequestState::Held if !moment.has_passed(request.deadline) => {
                Verdict::Change(Change::Confirm((request.deadline, handle)))
            }
            _ => Verdict::Answer(Confirmation::Cancelled),
        }
    }

    /// Judges a REFUND of what `request_id` bought; answers the units given
    /// back when nothing is (0).
    pub fn judge_refund(
        &self,
        request_id: &[u8],
        moment: Moment,
    ) -> Result<Verdict<'static, i64>, ItemError> {
        let Lookup::Found(handle) = self.ledger.find_request(request_id) else {
            return Ok(Verdict::Answer(0));
        };
        let request = self.ledger.request(handle);
        let hold = match request.state {
            RequestState::Purchased => None,
            RequestState::Held if !moment.has_passed(request.deadline) => {
                Some((request.deadline, handle))
            }
            _ => return Ok(Verdict::Answer(0)),
        };
        if matches!(self.ledger.find_buyer(request.user), Lookup::Missing(_)) {
            // Every request names a stored buyer; a damaged item refunds
            // nothing rather than guess.
            return Ok(Verdict::Answer(0));
        }
        // The stock may be given back every lapsed unit before this one.
        let (lapsing, _) = self.lapsing(moment, None);
        if let Stock::Limited(_) = self.stock {
            self.virtual_stock(lapsing)
                .checked_add(request.qty)
                .ok_or(ItemError::Overflow)?;
        }
        self.refunded
            .checked_add(request.qty)
            .ok_or(ItemError::Overflow)?;
        Ok(Verdict::Change(Change::Refund {
            handle,
            hold,
            qty: request.qty,
        }))
    }

    /// Judges a RELEASE of the named holds, whatever their deadline. A hold
    /// lapsed at `moment` counts as released already, as reads report it.
    /// Answers 0 when none of them is pending.
    pub fn judge_release(&self, request_ids: &[&[u8]], moment: Moment) -> Verdict<'static, i64> {
        let mut holds: Vec<HoldRef> = Vec::new();
        // In the order named, each once: a set, because a call may name
        // tens of thousands of ids (a search of the list for each made such
        // a call take half a second).
        let mut named = HashSet::new();
        for id in request_ids {
            if let Lookup::Found(handle) = self.ledger.find_request(id) {
                let request = self.ledger.request(handle);
                let hold = (request.deadline, handle);
                let pending =
                    request.state == RequestState::Held && !moment.has_passed(request.deadline);
                if pending && named.insert(hold) {
                    holds.push(hold);
                }
            }
        }
        if holds.is_empty() {
            Verdict::Answer(0)
        } else {
            Verdict::Change(Change::Release(holds))
        }
    }

    /// Judges an ADD of `qty` units; answers the stock of an unlimited item.
    pub fn judge_add(&self, qty: i64, moment: Moment) -> Result<Verdict<'static, i64>, ItemError> {
        if qty <= 0 {
            return Err(ItemError::NonPositiveQuantity);
        }
        if self.stock == Stock::Unlimited {
            return Ok(Verdict::Answer(self.remaining()));
        }
        // Everything ever supplied must stay representable, so that a later
        // refund can always put units back without overflowing, and below
        // the figure an unlimited item reports, so that no limited item's
        // stock reads as unlimited.
        let added = self.added.checked_add(qty).ok_or(ItemError::Overflow)?;
        let supplied = self
            .initial
            .checked_add(added)
            .and_then(|units| units.checked_add(self.moved_in()))
            .ok_or(ItemError::Overflow)?;
        if supplied == super::UNLIMITED_STOCK {
            return Err(ItemError::Overflow);
        }
        let (lapsing, _) = self.lapsing(moment, None);
        self.virtual_stock(lapsing)
            .checked_add(qty)
            .ok_or(ItemError::Overflow)?;
        Ok(Verdict::Change(Change::Add(qty)))
    }

    /// The lapsed holds to release before `change`, where this server
    /// decides releases: enough to cover the units it sells, and up to
    /// `budget` more, earliest first. A buyer's own lapsed holds need no
    /// release for its quota: the judge counts them as given back, and
    /// the buyer's record keeps them until the sweep releases them.
    pub fn settle_plan(&self, change: &Change, now: i64, budget: usize) -> Vec<HoldRef> {
        let mut needed = match (change, self.stock) {
            (Change::Deduct(purchase), Stock::Limited(units)) => {
                purchase.order.qty.saturating_sub(units)
            }
            _ => 0,
        };
        let mut plan: Vec<HoldRef> = Vec::new();
        // The usual case, on every write while lapsed holds wait for the
        // sweep: nothing to release, and no walk of them begun.
        if budget == 0 && needed <= 0 {
            return plan;
        }
        for (hold, qty) in self.ledger.holds.due_at(now) {
            if plan.len() >= budget && needed <= 0 {
                break;
            }
            plan.push(hold);
            needed = needed.saturating_sub(qty);
        }
        plan
    }

    /// The request id of `hold`: what its release is replicated with.
    pub fn hold_request_id(&self, (_, handle): HoldRef) -> &[u8] {
        self.ledger.request_id(handle)
    }

    /// Releases `holds` (from `settle_plan`), then makes `change`. Returns
    /// the reply figure of a change that has one (the stock after a DEDUCT
    /// or an ADD, the units a REFUND gave back).
    pub fn apply(&mut self, holds: &[HoldRef], change: Change) -> i64 {
        for hold in holds {
            if self.ledger.holds.contains(hold) {
                self.lapse(*hold);
            }
        }
        match change {
            Change::Nothing => 0,
            Change::Deduct(purchase) => self.record_purchase(purchase),
            Change::Confirm(hold) => {
                if let Some(qty) = self.ledger.remove_hold(&hold) {
                    self.ledger.held = self.ledger.held.saturating_sub(qty).max(0);
                    self.ledger.set_state(hold.1, RequestState::Purchased);
                }
                1
            }
            Change::Refund { handle, hold, qty } => self.record_refund(handle, hold, qty),
            Change::Release(holds) => {
                let pending = holds
                    .into_iter()
                    .filter(|hold| self.ledger.holds.contains(hold))
                    .collect::<Vec<_>>();
                for hold in &pending {
                    self.lapse(*hold);
                }
                pending.len() as i64
            }
            Change::Add(qty) => {
                if let Stock::Limited(units) = self.stock {
                    self.added = self.added.saturating_add(qty);
                    self.stock = Stock::Limited(units.saturating_add(qty));
                }
                self.remaining()
            }
            Change::Window(window) => {
                self.set_window(window);
                for variant in self.variants_mut() {
                    variant.item.set_window(window);
                }
                1
            }
            Change::Take {
                transfer_id,
                requested,
                taken,
                destination,
            } => self.apply_take(transfer_id, requested, taken, destination),
            Change::TransferIn {
                transfer_id,
                units,
                moment,
            } => self.apply_transfer_in(transfer_id, units, moment),
            Change::Settle(transfer_id) => self.apply_settle(transfer_id),
            Change::Import(records) => self.apply_import(records),
            Change::StreamSetting(stream_setting) => {
                for variant in self.variants_mut() {
                    variant.item.set_order_stream(stream_setting.clone());
                }
                self.set_order_stream(stream_setting);
                1
            }
        }
    }

    fn record_purchase(&mut self, purchase: Purchase) -> i64 {
        let Purchase {
            order,
            buyer,
            request_hash,
            remaining,
            replicated_moment,
            ..
        } = purchase;
        let ledger = &mut *self.ledger;
        if let Some(moment) = replicated_moment {
            ledger.replicated_moment = moment;
        }
        let mut buyer = match buyer {
            Lookup::Found(buyer) => buyer,
            // Room was checked while judging.
            Lookup::Missing(hash) => match ledger.add_buyer(hash, order.user, 0) {
                Ok(buyer) => buyer,
                Err(_) => return remaining,
            },
        };
        // To the record's units, not the judge's reading: the settle plan
        // may have released some of this buyer's lapsed holds since. Units
        // before the hold, so that the book never sees more held than the
        // buyer has (which would make it look for when the buyer empties).
        let holds = order.hold_until.is_some() && order.request_id.is_some();
        if holds {
            ledger.add_units_to_hold(&mut buyer, order.qty);
        } else {
            ledger.add_units(&mut buyer, order.qty);
        }
        let mut held = false;
        if let (Some(id), Some(hash)) = (order.request_id, request_hash) {
            let request = NewRequest {
                qty: order.qty,
                reply: remaining,
                state: if order.hold_until.is_some() {
                    RequestState::Held
                } else {
                    RequestState::Purchased
                },
                deadline: order.hold_until.unwrap_or(0).max(0),
            };
            if let Ok(handle) = ledger.add_request(hash, id, &buyer, request) {
                if order.hold_until.is_some() {
                    ledger.add_hold((request.deadline, handle), order.qty, buyer.handle());
                    ledger.held = ledger.held.saturating_add(order.qty);
                    held = true;
                }
            }
        }
        if holds && !held {
            ledger.held_units_untold(&buyer);
        }
        if let Stock::Limited(units) = self.stock {
            // The settle plan released enough for this: never below zero.
            self.stock = Stock::Limited(units.saturating_sub(order.qty).max(0));
        }
        self.sold = self.sold.saturating_add(order.qty);
        remaining
    }

    fn record_refund(&mut self, handle: u32, hold: Option<HoldRef>, qty: i64) -> i64 {
        // The hold first, then the units, so that the book never sees more
        // held than the buyer has.
        if let Some(hold) = hold {
            self.ledger.remove_hold(&hold);
            self.ledger.held = self.ledger.held.saturating_sub(qty).max(0);
        }
        let user = self.ledger.request(handle).user;
        if let Lookup::Found(mut buyer) = self.ledger.find_buyer(user) {
            // A consistent item always holds at least `qty` for this user; a
            // damaged one loses the units instead of going negative.
            let units = buyer.units.saturating_sub(qty).max(0);
            self.ledger.set_units(&mut buyer, units);
        }
        self.ledger.set_state(handle, RequestState::Refunded);
        if let Stock::Limited(units) = self.stock {
            self.stock = Stock::Limited(units.saturating_add(qty));
        }
        self.refunded = self.refunded.saturating_add(qty);
        qty
    }

    /// Ends one pending hold as lapsed: its units go back to the stock and
    /// to the buyer's quota.
    pub(super) fn lapse(&mut self, (deadline, handle): HoldRef) {
        let Some(qty) = self.ledger.remove_hold(&(deadline, handle)) else {
            return;
        };
        let user = self.ledger.request(handle).user;
        if let Lookup::Found(mut buyer) = self.ledger.find_buyer(user) {
            let units = buyer.units.saturating_sub(qty).max(0);
            self.ledger.set_units(&mut buyer, units);
        }
        if let Stock::Limited(units) = self.stock {
            self.stock = Stock::Limited(units.saturating_add(qty));
        }
        self.ledger.held = self.ledger.held.saturating_sub(qty).max(0);
        self.ledger.expired = self.ledger.expired.saturating_add(qty);
        self.ledger.set_state(handle, RequestState::Expired);
    }
}
