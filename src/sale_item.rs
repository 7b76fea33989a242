//! One flash-sale item: its stock, per-user limit, what every buyer holds, and
//! the ledger of request ids. This module knows nothing about Redis, so every
//! rule of the sale is unit- and property-tested without a server.

pub mod codec;

use std::collections::HashMap;

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

/// A purchase made with a request id, kept so that a retry gets the same
/// answer and a refund can give back exactly what was taken.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    pub user: Box<[u8]>,
    pub qty: i64,
    /// The remaining stock the original DEDUCT replied with.
    pub reply: i64,
    pub refunded: bool,
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
    /// The request id bought once and was refunded; it may not buy again.
    Refunded,
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
    pub buyers: usize,
    pub requests: usize,
}

#[derive(Clone, Debug, PartialEq, Eq)]
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
    /// Units each user holds now; users holding nothing are not kept.
    buyers: HashMap<Box<[u8]>, i64>,
    requests: HashMap<Box<[u8]>, Request>,
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
            buyers: HashMap::new(),
            requests: HashMap::new(),
        }
    }

    pub fn remaining(&self) -> i64 {
        self.stock.remaining()
    }

    /// Units `user` holds now.
    pub fn bought(&self, user: &[u8]) -> i64 {
        self.buyers.get(user).copied().unwrap_or(0)
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
            buyers: self.buyers.len(),
            requests: self.requests.len(),
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

    /// Sells `qty` units to `user` if the stock and the user's limit allow,
    /// recording the purchase under `request_id` when one is given.
    pub fn deduct(
        &mut self,
        user: &[u8],
        qty: i64,
        request_id: Option<&[u8]>,
    ) -> Result<Deduction, ItemError> {
        if qty <= 0 {
            return Err(ItemError::NonPositiveQuantity);
        }
        if let Some(request) = request_id.and_then(|id| self.requests.get(id)) {
            if *request.user != *user || request.qty != qty {
                return Err(ItemError::RequestMismatch);
            }
            return Ok(if request.refunded {
                Deduction::Refunded
            } else {
                Deduction::Replayed {
                    remaining: request.reply,
                }
            });
        }

        // Stock first: a sold-out item answers without looking at the buyer.
        let stock = match self.stock {
            Stock::Limited(units) if units < qty => return Ok(Deduction::SoldOut),
            Stock::Limited(units) => Stock::Limited(units - qty),
            Stock::Unlimited => Stock::Unlimited,
        };
        let held = self.bought(user);
        let now_held = match held.checked_add(qty) {
            Some(units) if self.limit == 0 || units <= self.limit => units,
            Some(_) => return Ok(Deduction::LimitExceeded),
            None if self.limit > 0 => return Ok(Deduction::LimitExceeded),
            None => return Err(ItemError::Overflow),
        };
        let sold = self.sold.checked_add(qty).ok_or(ItemError::Overflow)?;

        self.stock = stock;
        self.sold = sold;
        match self.buyers.get_mut(user) {
            Some(units) => *units = now_held,
            None => {
                self.buyers.insert(user.into(), now_held);
            }
        }
        let remaining = stock.remaining();
        if let Some(id) = request_id {
            self.requests.insert(
                id.into(),
                Request {
                    user: user.into(),
                    qty,
                    reply: remaining,
                    refunded: false,
                },
            );
        }
        Ok(Deduction::Bought { remaining })
    }

    /// Gives back the units bought under `request_id`, once. Returns the
    /// units returned: 0 when the id is unknown or already refunded.
    pub fn refund(&mut self, request_id: &[u8]) -> Result<i64, ItemError> {
        let Some(request) = self.requests.get(request_id) else {
            return Ok(0);
        };
        if request.refunded {
            return Ok(0);
        }
        let qty = request.qty;
        let stock = match self.stock {
            Stock::Limited(units) => {
                Stock::Limited(units.checked_add(qty).ok_or(ItemError::Overflow)?)
            }
            Stock::Unlimited => Stock::Unlimited,
        };
        let refunded = self.refunded.checked_add(qty).ok_or(ItemError::Overflow)?;
        let held = self.bought(&request.user);
        // A consistent item always holds at least `qty` for this user; a
        // damaged one loses the buyer instead of going negative.
        let now_held = held.saturating_sub(qty).max(0);
        let user = request.user.clone();

        self.stock = stock;
        self.refunded = refunded;
        if now_held == 0 {
            self.buyers.remove(&user);
        } else if let Some(units) = self.buyers.get_mut(&user) {
            *units = now_held;
        }
        if let Some(request) = self.requests.get_mut(request_id) {
            request.refunded = true;
        }
        Ok(qty)
    }

    pub fn buyers(&self) -> impl Iterator<Item = (&[u8], i64)> {
        self.buyers.iter().map(|(user, units)| (&**user, *units))
    }

    pub fn requests(&self) -> impl Iterator<Item = (&[u8], &Request)> {
        self.requests.iter().map(|(id, request)| (&**id, request))
    }

    /// Items whose freeing takes long enough to be worth doing off the
    /// main thread (UNLINK, FLUSHALL ASYNC) report their record count.
    pub fn record_count(&self) -> usize {
        self.buyers.len().saturating_add(self.requests.len())
    }

    /// An estimate of the heap this item occupies, for MEMORY USAGE.
    pub fn memory_usage(&self) -> usize {
        // A hash table slot is the key/value pair plus one control byte.
        let buyer_slot = std::mem::size_of::<(Box<[u8]>, i64)>() + 1;
        let request_slot = std::mem::size_of::<(Box<[u8]>, Request)>() + 1;
        let buyer_bytes: usize = self.buyers.keys().map(|user| user.len()).sum();
        let request_bytes: usize = self
            .requests
            .iter()
            .map(|(id, request)| id.len() + request.user.len())
            .sum();
        std::mem::size_of::<Self>()
            + self.buyers.capacity() * buyer_slot
            + self.requests.capacity() * request_slot
            + buyer_bytes
            + request_bytes
    }
}

#[cfg(test)]
mod tests;
