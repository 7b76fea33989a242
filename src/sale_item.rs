//! One flash-sale item: its stock, per-user limit, what every buyer holds, and
//! the ledger of request ids. This module knows nothing about Redis, so every
//! rule of the sale is unit- and property-tested without a server.

pub mod codec;
mod ledger;

use ledger::{Ledger, Lookup, NewRequest};
pub use ledger::{RequestState, RequestView};
use std::collections::{BTreeMap, HashMap};

/// Longest user id or request id accepted, in bytes. Ids are stored per
/// purchase, so the bound keeps one hostile client from inflating an item.
pub const MAX_ID_LEN: usize = 128;

/// The stock an unlimited item reports everywhere: it never runs out.
pub const UNLIMITED_STOCK: i64 = i64::MAX;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stock {
    Limited(i64),
    Unlimited,
}

impl Stock {
    /// What clients see as the remaining stock.
    pub fn remaining(self) -> i64 {
        match self {
            Stock::Limited(units) => units,
            Stock::Unlimited => UNLIMITED_STOCK,
        }
    }
}

/// What a DEDUCT did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Deduction {
    /// Units taken now; the remaining stock after it.
    Bought {
        remaining: i64,
    },
    /// The request id already bought; nothing changed, same reply as then.
    Replayed {
        remaining: i64,
    },
    SoldOut,
    LimitExceeded,
    /// The request id bought once and was refunded, or held and let lapse;
    /// it may not buy again.
    Refunded,
    /// The sale window has not opened yet.
    NotStarted,
    /// The sale window has closed.
    Ended,
}

/// When the item is on sale, in Unix milliseconds: from `start` (inclusive)
/// to `end` (exclusive); 0 leaves that side open.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Window {
    pub start: i64,
    pub end: i64,
}

impl Window {
    /// A window, if its bounds are non-negative and `end` follows `start`.
    pub fn new(start: i64, end: i64) -> Result<Window, ItemError> {
        if start < 0 || end < 0 || (start > 0 && end > 0 && end <= start) {
            return Err(ItemError::BadWindow);
        }
        Ok(Window { start, end })
    }

    pub fn is_always_open(&self) -> bool {
        self.start == 0 && self.end == 0
    }

    /// Why a purchase at `now` is refused, if it is.
    fn refusal(&self, now: i64) -> Option<Deduction> {
        if self.start > 0 && now < self.start {
            Some(Deduction::NotStarted)
        } else if self.end > 0 && now >= self.end {
            Some(Deduction::Ended)
        } else {
            None
        }
    }
}

/// Where the item writes an event for every purchase, confirmation, refund
/// and lapse, in the same atomic step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outbox {
    pub stream: Box<[u8]>,
    /// Entries the stream keeps at most (exact trimming); 0 keeps them all.
    pub maxlen: i64,
}

/// A hold that lapsed, as released.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lapsed {
    pub request_id: Vec<u8>,
    pub user: Vec<u8>,
    pub qty: i64,
}

/// The time a purchase is judged at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Moment {
    /// The server's clock, in Unix milliseconds.
    At(i64),
    /// The master already judged the time (a replica applying its purchase,
    /// or an AOF replay); judging again by another clock would diverge.
    Decided,
}

/// What an ADD did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Restock {
    /// Stock grew; the remaining stock after it.
    Added { remaining: i64 },
    /// An unlimited item has nothing to add to.
    Unlimited,
}

/// Calls the item refuses; none of them changes anything.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ItemError {
    /// A counter would leave the range of a signed 64-bit integer.
    Overflow,
    /// The request id was used before by another user or for another quantity.
    RequestMismatch,
    /// Quantities are positive.
    NonPositiveQuantity,
    /// User ids and request ids are 1 to MAX_ID_LEN bytes.
    BadId,
    /// The item cannot record another purchase.
    Full,
    /// A sale window's bounds are negative, or its end does not follow its
    /// start.
    BadWindow,
    /// A hold is found again by its request id, so it needs one.
    HoldWithoutId,
}

/// What a CONFIRM did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Confirmation {
    /// A pending hold became a purchase now.
    Confirmed,
    /// The purchase was final already.
    AlreadyConfirmed,
    /// The request id is unknown, refunded, or its hold lapsed.
    Invalid,
}

impl From<ledger::Full> for ItemError {
    fn from(_: ledger::Full) -> Self {
        ItemError::Full
    }
}

fn valid_id(id: &[u8]) -> bool {
    !id.is_empty() && id.len() <= MAX_ID_LEN
}

/// Counters reported by SECKILL.INFO.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ItemStats {
    pub stock: i64,
    pub unlimited: bool,
    pub limit: i64,
    pub initial: i64,
    pub added: i64,
    pub sold: i64,
    pub refunded: i64,
    /// Units in pending holds.
    pub held: i64,
    /// Pending holds.
    pub holds: usize,
    /// Units given back by holds that lapsed.
    pub expired: i64,
    pub buyers: usize,
    pub requests: usize,
    pub window: Window,
}

#[derive(Clone)]
pub struct SaleItem {
    stock: Stock,
    /// Most units one user may hold at once; 0 means no cap.
    limit: i64,
    initial: i64,
    /// Units added by restocks since INIT.
    added: i64,
    /// Units ever sold, refunded ones included.
    sold: i64,
    /// Units ever given back by refunds.
    refunded: i64,
    /// Units ever given back by holds that lapsed.
    expired: i64,
    /// Units in pending holds; they count as sold until confirmed, refunded
    /// or lapsed.
    held: i64,
    /// Units of each pending hold, by deadline (Unix ms) and request record:
    /// reads sum the lapsed ones without touching the ledger.
    holds: BTreeMap<(i64, u32), i64>,
    window: Window,
    outbox: Option<Outbox>,
    /// What every buyer holds, and every purchase made with a request id.
    ledger: Ledger,
}

impl SaleItem {
    /// A new item. `limit` 0 means no per-user cap. Negative values are
    /// rejected by the caller's parser; here they are clamped defensively.
    pub fn new(stock: Stock, limit: i64) -> Self {
        let stock = match stock {
            Stock::Limited(units) => Stock::Limited(units.max(0)),
            Stock::Unlimited => Stock::Unlimited,
        };
        let initial = match stock {
            Stock::Limited(units) => units,
            Stock::Unlimited => 0,
        };
        SaleItem {
            stock,
            limit: limit.max(0),
            initial,
            added: 0,
            sold: 0,
            refunded: 0,
            expired: 0,
            held: 0,
            holds: BTreeMap::new(),
            window: Window::default(),
            outbox: None,
            ledger: Ledger::default(),
        }
    }

    pub fn outbox(&self) -> Option<&Outbox> {
        self.outbox.as_ref()
    }

    pub fn set_outbox(&mut self, outbox: Option<Outbox>) {
        self.outbox = outbox;
    }

    pub fn window(&self) -> Window {
        self.window
    }

    pub fn set_window(&mut self, window: Window) {
        self.window = window;
    }

    pub fn remaining(&self) -> i64 {
        self.stock.remaining()
    }

    /// Units `user` holds now.
    pub fn bought(&self, user: &[u8]) -> i64 {
        self.ledger.units_of(user)
    }

    /// The purchase recorded under `request_id`, if any.
    pub fn request(&self, request_id: &[u8]) -> Option<RequestView<'_>> {
        match self.ledger.find_request(request_id) {
            Lookup::Found(handle) => Some(self.ledger.request(handle)),
            Lookup::Missing(_) => None,
        }
    }

    pub fn stats(&self) -> ItemStats {
        ItemStats {
            stock: self.remaining(),
            unlimited: self.stock == Stock::Unlimited,
            limit: self.limit,
            initial: self.initial,
            added: self.added,
            sold: self.sold,
            refunded: self.refunded,
            held: self.held,
            holds: self.holds.len(),
            expired: self.expired,
            buyers: self.ledger.holder_count(),
            requests: self.ledger.request_count(),
            window: self.window,
        }
    }

    /// Puts `qty` more units on sale.
    pub fn add(&mut self, qty: i64) -> Result<Restock, ItemError> {
        if qty <= 0 {
            return Err(ItemError::NonPositiveQuantity);
        }
        let Stock::Limited(units) = self.stock else {
            return Ok(Restock::Unlimited);
        };
        // Everything ever supplied must stay representable, so that a later
        // refund can always put units back without overflowing.
        let added = self.added.checked_add(qty).ok_or(ItemError::Overflow)?;
        self.initial.checked_add(added).ok_or(ItemError::Overflow)?;
        let remaining = units.checked_add(qty).ok_or(ItemError::Overflow)?;
        self.added = added;
        self.stock = Stock::Limited(remaining);
        Ok(Restock::Added { remaining })
    }

    /// Sells `qty` units to `user` if the sale window, the stock and the
    /// user's limit allow, recording the purchase under `request_id` when
    /// one is given. With `hold_until` (Unix ms; it needs a request id) the
    /// units are reserved until CONFIRM, REFUND or that deadline. Due holds
    /// are the caller's to release first (`release_due`), so that it can
    /// replicate the release.
    pub fn deduct(
        &mut self,
        user: &[u8],
        qty: i64,
        request_id: Option<&[u8]>,
        moment: Moment,
        hold_until: Option<i64>,
    ) -> Result<Deduction, ItemError> {
        if qty <= 0 {
            return Err(ItemError::NonPositiveQuantity);
        }
        if !valid_id(user) || !request_id.is_none_or(valid_id) {
            return Err(ItemError::BadId);
        }
        if hold_until.is_some() && request_id.is_none() {
            return Err(ItemError::HoldWithoutId);
        }
        let request_hash = match request_id.map(|id| self.ledger.find_request(id)) {
            Some(Lookup::Found(handle)) => {
                let request = self.ledger.request(handle);
                if request.user != user || request.qty != qty {
                    return Err(ItemError::RequestMismatch);
                }
                return Ok(match request.state {
                    RequestState::Refunded | RequestState::Expired => Deduction::Refunded,
                    RequestState::Purchased | RequestState::Held => Deduction::Replayed {
                        remaining: request.reply,
                    },
                });
            }
            Some(Lookup::Missing(hash)) => Some(hash),
            None => None,
        };

        if let Moment::At(now) = moment {
            if let Some(refusal) = self.window.refusal(now) {
                return Ok(refusal);
            }
        }
        // Stock first: a sold-out item answers without looking at the buyer.
        let stock = match self.stock {
            Stock::Limited(units) if units < qty => return Ok(Deduction::SoldOut),
            Stock::Limited(units) => Stock::Limited(units - qty),
            Stock::Unlimited => Stock::Unlimited,
        };
        let buyer = self.ledger.find_buyer(user);
        let held = match buyer {
            Lookup::Found(buyer) => buyer.units,
            Lookup::Missing(_) => 0,
        };
        let now_held = match held.checked_add(qty) {
            Some(units) if self.limit == 0 || units <= self.limit => units,
            Some(_) => return Ok(Deduction::LimitExceeded),
            None if self.limit > 0 => return Ok(Deduction::LimitExceeded),
            None => return Err(ItemError::Overflow),
        };
        let sold = self.sold.checked_add(qty).ok_or(ItemError::Overflow)?;
        let held = match hold_until {
            Some(_) => self.held.checked_add(qty).ok_or(ItemError::Overflow)?,
            None => self.held,
        };

        let mut buyer = match buyer {
            Lookup::Found(buyer) => buyer,
            Lookup::Missing(hash) => self.ledger.add_buyer(hash, user)?,
        };
        let remaining = stock.remaining();
        if let (Some(id), Some(hash)) = (request_id, request_hash) {
            let request = NewRequest {
                qty,
                reply: remaining,
                state: if hold_until.is_some() {
                    RequestState::Held
                } else {
                    RequestState::Purchased
                },
                deadline: hold_until.unwrap_or(0).max(0),
            };
            let handle = self.ledger.add_request(hash, id, &buyer, request)?;
            if hold_until.is_some() {
                self.holds.insert((request.deadline, handle), qty);
            }
        }
        self.ledger.set_units(&mut buyer, now_held);
        self.stock = stock;
        self.sold = sold;
        self.held = held;
        Ok(Deduction::Bought { remaining })
    }

    /// Turns the pending hold under `request_id` into a purchase for good.
    pub fn confirm(&mut self, request_id: &[u8]) -> Confirmation {
        let Lookup::Found(handle) = self.ledger.find_request(request_id) else {
            return Confirmation::Invalid;
        };
        let request = self.ledger.request(handle);
        match request.state {
            RequestState::Purchased => Confirmation::AlreadyConfirmed,
            RequestState::Refunded | RequestState::Expired => Confirmation::Invalid,
            RequestState::Held => {
                self.holds.remove(&(request.deadline, handle));
                self.held = self.held.saturating_sub(request.qty).max(0);
                self.ledger.set_state(handle, RequestState::Purchased);
                Confirmation::Confirmed
            }
        }
    }

    /// The earliest deadline among pending holds.
    pub fn next_deadline(&self) -> Option<i64> {
        self.holds
            .first_key_value()
            .map(|((deadline, _), _)| *deadline)
    }

    /// Releases at most `max` holds whose deadline is `now` or earlier:
    /// their units go back to the stock and to their users' quotas. Returns
    /// the request ids released, for the caller to replicate and announce.
    pub fn release_due(&mut self, now: i64, max: usize) -> Vec<Lapsed> {
        let due: Vec<(i64, u32)> = self
            .holds
            .range(..=(now, u32::MAX))
            .take(max)
            .map(|(hold, _)| *hold)
            .collect();
        due.into_iter().map(|hold| self.lapse(hold)).collect()
    }

    /// Releases the named holds whatever the time: what a replica or an AOF
    /// replay does when its master released them. Returns those that were
    /// still pending.
    pub fn release(&mut self, request_ids: &[&[u8]]) -> Vec<Lapsed> {
        let mut released = Vec::new();
        for id in request_ids {
            let Lookup::Found(handle) = self.ledger.find_request(id) else {
                continue;
            };
            let request = self.ledger.request(handle);
            if request.state == RequestState::Held {
                released.push(self.lapse((request.deadline, handle)));
            }
        }
        released
    }

    /// Ends one pending hold as lapsed.
    fn lapse(&mut self, (deadline, handle): (i64, u32)) -> Lapsed {
        self.holds.remove(&(deadline, handle));
        let request = self.ledger.request(handle);
        let qty = request.qty;
        let lapsed = Lapsed {
            request_id: self.ledger.request_id(handle).to_vec(),
            user: request.user.to_vec(),
            qty,
        };
        if let Lookup::Found(mut buyer) = self.ledger.find_buyer(request.user) {
            let units = buyer.units.saturating_sub(qty).max(0);
            self.ledger.set_units(&mut buyer, units);
        }
        if let Stock::Limited(units) = self.stock {
            self.stock = Stock::Limited(units.saturating_add(qty));
        }
        self.held = self.held.saturating_sub(qty).max(0);
        self.expired = self.expired.saturating_add(qty);
        self.ledger.set_state(handle, RequestState::Expired);
        lapsed
    }

    /// Pending holds, earliest deadline first: (request id, user, qty,
    /// deadline). Those due at `now` are left out: they are as good as
    /// released.
    pub fn pending_holds(&self, now: i64) -> impl Iterator<Item = (&[u8], RequestView<'_>)> {
        self.holds
            .range((now.saturating_add(1), 0)..)
            .map(|((_, handle), _)| {
                (
                    self.ledger.request_id(*handle),
                    self.ledger.request(*handle),
                )
            })
    }

    /// The item's counters as they will be once every hold due at `now` is
    /// released, without releasing anything: what reads report.
    pub fn stats_at(&self, now: i64) -> ItemStats {
        let mut stats = self.stats();
        // Units lapsing per user, to tell which buyers hold nothing after.
        let mut lapsing_users: HashMap<&[u8], i64> = HashMap::new();
        for ((_, handle), qty) in self.holds.range(..=(now, u32::MAX)) {
            stats.held = stats.held.saturating_sub(*qty);
            stats.holds = stats.holds.saturating_sub(1);
            stats.expired = stats.expired.saturating_add(*qty);
            if let Stock::Limited(_) = self.stock {
                stats.stock = stats.stock.saturating_add(*qty);
            }
            let units = lapsing_users
                .entry(self.ledger.request(*handle).user)
                .or_default();
            *units = units.saturating_add(*qty);
        }
        for (user, lapsing) in lapsing_users {
            let held = self.bought(user);
            if held > 0 && held <= lapsing {
                stats.buyers = stats.buyers.saturating_sub(1);
            }
        }
        stats
    }

    /// The stock once every hold due at `now` is released: what GET reports.
    pub fn remaining_at(&self, now: i64) -> i64 {
        match self.stock {
            Stock::Limited(units) => self
                .holds
                .range(..=(now, u32::MAX))
                .fold(units, |units, (_, qty)| units.saturating_add(*qty)),
            Stock::Unlimited => UNLIMITED_STOCK,
        }
    }

    /// Units `user` will hold once every hold due at `now` is released.
    pub fn bought_at(&self, user: &[u8], now: i64) -> i64 {
        let lapsing = self
            .holds
            .range(..=(now, u32::MAX))
            .filter(|((_, handle), _)| self.ledger.request(*handle).user == user)
            .fold(0i64, |units, (_, qty)| units.saturating_add(*qty));
        self.bought(user).saturating_sub(lapsing).max(0)
    }

    /// Gives back the units bought under `request_id`, once. Returns the
    /// units returned: 0 when the id is unknown or already refunded.
    pub fn refund(&mut self, request_id: &[u8]) -> Result<i64, ItemError> {
        let Lookup::Found(handle) = self.ledger.find_request(request_id) else {
            return Ok(0);
        };
        let request = self.ledger.request(handle);
        let (state, deadline, qty) = (request.state, request.deadline, request.qty);
        if matches!(state, RequestState::Refunded | RequestState::Expired) {
            return Ok(0);
        }
        let Lookup::Found(mut buyer) = self.ledger.find_buyer(request.user) else {
            // Every request names a stored buyer; a damaged item refunds
            // nothing rather than guess.
            return Ok(0);
        };
        let stock = match self.stock {
            Stock::Limited(units) => {
                Stock::Limited(units.checked_add(qty).ok_or(ItemError::Overflow)?)
            }
            Stock::Unlimited => Stock::Unlimited,
        };
        let refunded = self.refunded.checked_add(qty).ok_or(ItemError::Overflow)?;
        // A consistent item always holds at least `qty` for this user; a
        // damaged one loses the units instead of going negative.
        let now_held = buyer.units.saturating_sub(qty).max(0);

        self.ledger.set_units(&mut buyer, now_held);
        if state == RequestState::Held {
            self.holds.remove(&(deadline, handle));
            self.held = self.held.saturating_sub(qty).max(0);
        }
        self.ledger.set_state(handle, RequestState::Refunded);
        self.stock = stock;
        self.refunded = refunded;
        Ok(qty)
    }

    /// Users holding at least one unit, with their units.
    pub fn buyers(&self) -> impl Iterator<Item = (&[u8], i64)> {
        self.ledger.holders()
    }

    pub fn requests(&self) -> impl Iterator<Item = (&[u8], RequestView<'_>)> {
        self.ledger.requests()
    }

    /// Items whose freeing takes long enough to be worth doing off the
    /// main thread (UNLINK, FLUSHALL ASYNC) report their record count.
    pub fn record_count(&self) -> usize {
        self.ledger
            .buyer_count()
            .saturating_add(self.ledger.request_count())
    }

    /// The heap this item occupies, for MEMORY USAGE.
    pub fn memory_usage(&self) -> usize {
        // A B-tree entry is its key and value plus about a third again in
        // node overhead.
        let hold_entry = std::mem::size_of::<((i64, u32), i64)>() * 4 / 3;
        std::mem::size_of::<Self>() + self.ledger.memory_usage() + self.holds.len() * hold_entry
    }

    fn sorted_content(&self) -> SortedContent<'_> {
        let mut buyers: Vec<_> = self.buyers().collect();
        buyers.sort_unstable();
        let mut requests: Vec<_> = self.requests().collect();
        requests.sort_unstable_by(|a, b| a.0.cmp(b.0));
        (buyers, requests)
    }
}

type SortedContent<'a> = (Vec<(&'a [u8], i64)>, Vec<(&'a [u8], RequestView<'a>)>);

/// Two items are equal when they hold the same sale, whatever order their
/// records were stored in.
impl PartialEq for SaleItem {
    fn eq(&self, other: &Self) -> bool {
        self.stats() == other.stats() && self.sorted_content() == other.sorted_content()
    }
}

impl Eq for SaleItem {}

impl std::fmt::Debug for SaleItem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (buyers, requests) = self.sorted_content();
        f.debug_struct("SaleItem")
            .field("stats", &self.stats())
            .field("buyers", &buyers)
            .field("requests", &requests)
            .finish()
    }
}

#[cfg(test)]
mod tests;
