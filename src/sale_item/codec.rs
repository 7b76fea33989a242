//! The serialised form of a sale item, shared by RDB files, DUMP payloads and
//! AOF rewrites so that there is one format to keep compatible.
//!
//! An item is a header chunk followed by record chunks of at most
//! [`RECORDS_PER_CHUNK`] buyers or requests each, so that neither a save nor
//! an AOF line ever has to hold a whole large ledger in one buffer.
//!
//! ```text
//! header:   'H' version:u8 unlimited:u8 stock limit initial added sold refunded:i64
//!           [start end:i64] [expired:i64] [outbox:u8 {stream_len:u32 stream maxlen:i64}]
//!           buyers:u64 requests:u64
//! buyers:   'B' count:u32 { user_len:u8 user units:i64 }*
//! requests: 'Q' count:u32 { id_len:u8 id user_len:u8 user qty:i64 reply:i64 state:u8
//!           deadline:i64 }*
//! ```
//! Version 2 added the sale window to the header, version 3 the units
//! expired by lapsed holds (`expired:i64` after the window) and the 'Q'
//! request chunk, whose state replaces the refunded flag of the older 'R'
//! chunk (`refunded:u8` after `reply`); version 4 the order stream. Older
//! chunks stay readable.
//! Integers are little-endian. Every read is bounds-checked: damaged input
//! yields a [`DecodeError`], never a panic.
//!
//! Input is also checked against the sale's bookkeeping, because a DUMP
//! payload only carries a checksum its sender computes: RESTORE, a full
//! sync or a hand-made AOF file must not be able to build an item that
//! no sequence of sales produces. See [`SaleItem::check_bookkeeping`] for
//! the rules; each one is kept by every write to an item, and each one
//! holds for every prefix of the chunks of a good item (records only ever
//! add to sums bounded by the header), so that an item rebuilt from part of
//! its chunks still saves into something that loads again.

use super::ledger::{Buyer, Lookup, NewRequest, RequestState};
use super::{Outbox, SaleItem, Stock, Window, MAX_ID_LEN, UNLIMITED_STOCK};
use std::collections::{HashMap, HashSet};

/// Bumped whenever the layout changes; older versions stay readable.
/// Version 2 added the sale window, version 3 holds, version 4 the outbox.
pub const FORMAT_VERSION: u8 = 4;

pub const RECORDS_PER_CHUNK: usize = 1024;

const HEADER_TAG: u8 = b'H';
const BUYERS_TAG: u8 = b'B';
/// Requests as the first release wrote them, with a refunded flag.
const REFUNDABLE_REQUESTS_TAG: u8 = b'R';
/// Requests with their state and hold deadline.
const REQUESTS_TAG: u8 = b'Q';

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DecodeError(pub &'static str);

/// Record counts announced by a header, checked once every chunk is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Expected {
    pub buyers: u64,
    pub requests: u64,
}

pub fn is_header(chunk: &[u8]) -> bool {
    chunk.first() == Some(&HEADER_TAG)
}

impl SaleItem {
    /// Calls `emit` with the header chunk, then with each record chunk.
    pub fn encode_chunks(&self, mut emit: impl FnMut(&[u8])) {
        let mut out = Vec::with_capacity(128);
        out.push(HEADER_TAG);
        out.push(FORMAT_VERSION);
        out.push(u8::from(self.stock == Stock::Unlimited));
        let stock = match self.stock {
            Stock::Limited(units) => units,
            Stock::Unlimited => 0,
        };
        for field in [
            stock,
            self.limit,
            self.initial,
            self.added,
            self.sold,
            self.refunded,
            self.window.start,
            self.window.end,
            self.expired,
        ] {
            out.extend_from_slice(&field.to_le_bytes());
        }
        match &self.outbox {
            Some(outbox) => {
                out.push(1);
                out.extend_from_slice(&(outbox.stream.len() as u32).to_le_bytes());
                out.extend_from_slice(&outbox.stream);
                out.extend_from_slice(&outbox.maxlen.to_le_bytes());
            }
            None => out.push(0),
        }
        out.extend_from_slice(&(self.ledger.holder_count() as u64).to_le_bytes());
        out.extend_from_slice(&(self.ledger.request_count() as u64).to_le_bytes());
        emit(&out);

        let buyers: Vec<_> = self.buyers().collect();
        for chunk in buyers.chunks(RECORDS_PER_CHUNK) {
            out.clear();
            out.push(BUYERS_TAG);
            out.extend_from_slice(&(chunk.len() as u32).to_le_bytes());
            for (user, units) in chunk {
                put_id(&mut out, user);
                out.extend_from_slice(&units.to_le_bytes());
            }
            emit(&out);
        }

        let requests: Vec<_> = self.requests().collect();
        for chunk in requests.chunks(RECORDS_PER_CHUNK) {
            out.clear();
            out.push(REQUESTS_TAG);
            out.extend_from_slice(&(chunk.len() as u32).to_le_bytes());
            for (id, request) in chunk {
                put_id(&mut out, id);
                put_id(&mut out, request.user);
                out.extend_from_slice(&request.qty.to_le_bytes());
                out.extend_from_slice(&request.reply.to_le_bytes());
                out.push(request.state.code());
                out.extend_from_slice(&request.deadline.to_le_bytes());
            }
            emit(&out);
        }
    }

    /// Builds an empty item from a header chunk.
    pub fn decode_header(chunk: &[u8]) -> Result<(SaleItem, Expected), DecodeError> {
        let mut input = Reader(chunk);
        if input.u8()? != HEADER_TAG {
            return Err(DecodeError("not a header chunk"));
        }
        let version = input.u8()?;
        if version > FORMAT_VERSION {
            return Err(DecodeError("written by a newer version of the module"));
        }
        let unlimited = match input.u8()? {
            0 => false,
            1 => true,
            _ => return Err(DecodeError("bad unlimited flag")),
        };
        let stock = input.non_negative()?;
        let limit = input.non_negative()?;
        let mut item = SaleItem::new(
            if unlimited {
                Stock::Unlimited
            } else {
                Stock::Limited(stock)
            },
            limit,
        );
        item.initial = input.non_negative()?;
        item.added = input.non_negative()?;
        item.sold = input.non_negative()?;
        item.refunded = input.non_negative()?;
        if version >= 2 {
            let (start, end) = (input.non_negative()?, input.non_negative()?);
            item.window = Window::new(start, end).map_err(|_| DecodeError("bad sale window"))?;
        }
        if version >= 3 {
            item.expired = input.non_negative()?;
        }
        if version >= 4 && input.u8()? == 1 {
            let len = input.u32()? as usize;
            let stream = input.take(len)?;
            if stream.is_empty() {
                return Err(DecodeError("empty stream key"));
            }
            item.outbox = Some(Outbox {
                stream: stream.into(),
                maxlen: input.non_negative()?,
            });
        }
        let expected = Expected {
            buyers: input.u64()?,
            requests: input.u64()?,
        };
        input.finish()?;
        item.check_counters(expected.buyers)?;
        Ok((item, expected))
    }

    /// Adds the records of one buyers or requests chunk, all or none.
    /// Returns how many records it held.
    pub fn load_chunk(&mut self, chunk: &[u8]) -> Result<usize, DecodeError> {
        let mut input = Reader(chunk);
        let tag = input.u8()?;
        if tag != BUYERS_TAG && tag != REQUESTS_TAG && tag != REFUNDABLE_REQUESTS_TAG {
            return Err(DecodeError("unknown chunk"));
        }
        let count = input.u32()? as usize;
        if count == 0 || count > RECORDS_PER_CHUNK {
            return Err(DecodeError("bad record count"));
        }
        if tag == BUYERS_TAG {
            let mut records = Vec::with_capacity(count);
            for _ in 0..count {
                let user = input.id()?;
                let units = input.non_negative()?;
                if units == 0 {
                    return Err(DecodeError("buyer holding nothing"));
                }
                records.push((user, units));
            }
            input.finish()?;
            // Early refusals, so that a bad chunk loads nothing; the sum over
            // every chunk is checked once the item is complete.
            let mut chunk_units = 0i64;
            for (_, units) in &records {
                self.check_buyer(*units)?;
                chunk_units = within(chunk_units.checked_add(*units), self.net_sold())
                    .ok_or(DecodeError("buyers hold more units than were sold"))?;
            }
            let mut seen = HashSet::with_capacity(count);
            for (user, _) in &records {
                if self.bought(user) > 0 || !seen.insert(*user) {
                    return Err(DecodeError("duplicate buyer"));
                }
            }
            for (user, units) in records {
                let mut buyer = self.buyer_for_load(user)?;
                self.ledger.set_units(&mut buyer, units);
            }
        } else {
            let mut records = Vec::with_capacity(count);
            for _ in 0..count {
                let id = input.id()?;
                let user = input.id()?;
                let qty = input.non_negative()?;
                if qty == 0 {
                    return Err(DecodeError("request of nothing"));
                }
                let reply = input.non_negative()?;
                let (state, deadline) = if tag == REQUESTS_TAG {
                    let state = RequestState::from_code(input.u8()?)
                        .ok_or(DecodeError("bad request state"))?;
                    (state, input.non_negative()?)
                } else {
                    match input.u8()? {
                        0 => (RequestState::Purchased, 0),
                        1 => (RequestState::Refunded, 0),
                        _ => return Err(DecodeError("bad refunded flag")),
                    }
                };
                let request = NewRequest {
                    qty,
                    reply,
                    state,
                    deadline,
                };
                records.push((id, user, request));
            }
            input.finish()?;
            let mut held = self.held;
            for (_, user, request) in &records {
                self.check_request(request)?;
                // Buyers' chunks come first, so a live request's units are
                // already counted in its user's.
                let bound = match request.state {
                    RequestState::Purchased | RequestState::Held => self.bought(user),
                    RequestState::Refunded => self.refunded,
                    RequestState::Expired => self.expired,
                };
                if request.qty > bound {
                    return Err(DecodeError("request for more units than were counted"));
                }
                if request.state == RequestState::Held {
                    held = within(held.checked_add(request.qty), self.net_sold())
                        .ok_or(DecodeError("more units held than were sold"))?;
                }
            }
            let mut seen = HashSet::with_capacity(count);
            for (id, ..) in &records {
                if self.request(id).is_some() || !seen.insert(*id) {
                    return Err(DecodeError("duplicate request id"));
                }
            }
            for (id, user, request) in records {
                let buyer = self.buyer_for_load(user)?;
                let Lookup::Missing(hash) = self.ledger.find_request(id) else {
                    return Err(DecodeError("duplicate request id"));
                };
                let handle = self
                    .ledger
                    .add_request(hash, id, &buyer, request)
                    .map_err(|_| DecodeError("item too large"))?;
                if request.state == RequestState::Held {
                    self.holds.insert((request.deadline, handle), request.qty);
                    // Bounded by the sold units, checked above.
                    self.held = self.held.saturating_add(request.qty);
                }
            }
        }
        Ok(count)
    }

    /// True once the records announced by the header have all been loaded.
    pub fn is_loaded(&self, expected: Expected) -> bool {
        self.ledger.holder_count() as u64 >= expected.buyers
            && self.ledger.request_count() as u64 >= expected.requests
    }

    /// The buyer number of `user`, added holding nothing if new: requests
    /// may name a user whose units were all refunded.
    fn buyer_for_load(&mut self, user: &[u8]) -> Result<Buyer, DecodeError> {
        match self.ledger.find_buyer(user) {
            Lookup::Found(buyer) => Ok(buyer),
            Lookup::Missing(hash) => self
                .ledger
                .add_buyer(hash, user)
                .map_err(|_| DecodeError("item too large")),
        }
    }

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

    /// Checks the whole item against the sale's bookkeeping, in one pass
    /// over its records:
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
        let net_sold = self.net_sold();
        let mut units_total = 0i64;
        for (_, units) in self.buyers() {
            self.check_buyer(units)?;
            units_total = within(units_total.checked_add(units), net_sold)
                .ok_or(DecodeError("buyers hold more units than were sold"))?;
        }
        let (mut refunded, mut expired, mut held, mut holds) = (0i64, 0i64, 0i64, 0usize);
        let mut live: HashMap<&[u8], i64> = HashMap::new();
        for (_, request) in self.requests() {
            self.check_request(&NewRequest {
                qty: request.qty,
                reply: request.reply,
                state: request.state,
                deadline: request.deadline,
            })?;
            let (sum, bound) = match request.state {
                RequestState::Refunded => (&mut refunded, self.refunded),
                RequestState::Expired => (&mut expired, self.expired),
                RequestState::Purchased | RequestState::Held => {
                    if request.state == RequestState::Held {
                        held = within(held.checked_add(request.qty), net_sold)
                            .ok_or(DecodeError("more units held than were sold"))?;
                        holds += 1;
                    }
                    (live.entry(request.user).or_default(), net_sold)
                }
            };
            *sum = within(sum.checked_add(request.qty), bound)
                .ok_or(DecodeError("requests for more units than were counted"))?;
        }
        for (user, units) in live {
            if units > self.bought(user) {
                return Err(DecodeError("requests for more units than their user holds"));
            }
        }
        if held != self.held || holds != self.holds.len() {
            return Err(DecodeError("held units differ from the held requests"));
        }
        Ok(())
    }

    /// Checks the header's counters against each other, and against the
    /// `holders` announced (each holds at least one unit):
    ///
    /// - everything supplied (`initial + added`) fits in an i64, as ADD
    ///   keeps it, so that a refund can always put units back;
    /// - units refunded plus units expired are at most the units sold;
    /// - a limited item's stock plus the units sold and not given back is
    ///   what was supplied; an unlimited item was supplied nothing (ADD
    ///   leaves it alone).
    fn check_counters(&self, holders: u64) -> Result<(), DecodeError> {
        let supplied = self
            .initial
            .checked_add(self.added)
            .ok_or(DecodeError("units supplied overflow"))?;
        let given_back = within(self.refunded.checked_add(self.expired), self.sold)
            .ok_or(DecodeError("more units given back than sold"))?;
        let net_sold = self.sold - given_back;
        match self.stock {
            Stock::Limited(stock) if stock.checked_add(net_sold) != Some(supplied) => {
                return Err(DecodeError(
                    "stock and units sold differ from units supplied",
                ));
            }
            Stock::Unlimited if self.initial != 0 || self.added != 0 => {
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
    fn net_sold(&self) -> i64 {
        self.sold
            .checked_sub(self.refunded)
            .and_then(|units| units.checked_sub(self.expired))
            .map_or(0, |units| units.max(0))
    }

    /// The rules one buyer record follows on its own.
    fn check_buyer(&self, units: i64) -> Result<(), DecodeError> {
        if units <= 0 {
            return Err(DecodeError("buyer holding nothing"));
        }
        if self.limit > 0 && units > self.limit {
            return Err(DecodeError("buyer holds more than the per-user limit"));
        }
        Ok(())
    }

    /// The rules one request record follows on its own.
    fn check_request(&self, request: &NewRequest) -> Result<(), DecodeError> {
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

    /// Everything ever put on sale; `check_counters` refuses an overflow.
    fn supplied(&self) -> i64 {
        self.initial.saturating_add(self.added)
    }
}

/// `sum` if it did not overflow and is at most `bound`.
fn within(sum: Option<i64>, bound: i64) -> Option<i64> {
    sum.filter(|sum| *sum <= bound)
}

fn put_id(out: &mut Vec<u8>, id: &[u8]) {
    // Ids are bounded by MAX_ID_LEN when they enter the item, so they fit.
    out.push(id.len() as u8);
    out.extend_from_slice(id);
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, len: usize) -> Result<&'a [u8], DecodeError> {
        let (head, rest) = self
            .0
            .split_at_checked(len)
            .ok_or(DecodeError("truncated chunk"))?;
        self.0 = rest;
        Ok(head)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], DecodeError> {
        let bytes = self.take(N)?;
        bytes.try_into().map_err(|_| DecodeError("truncated chunk"))
    }

    fn u8(&mut self) -> Result<u8, DecodeError> {
        Ok(u8::from_le_bytes(self.array()?))
    }

    fn u32(&mut self) -> Result<u32, DecodeError> {
        Ok(u32::from_le_bytes(self.array()?))
    }

    fn u64(&mut self) -> Result<u64, DecodeError> {
        Ok(u64::from_le_bytes(self.array()?))
    }

    fn non_negative(&mut self) -> Result<i64, DecodeError> {
        let value = i64::from_le_bytes(self.array()?);
        if value < 0 {
            return Err(DecodeError("negative counter"));
        }
        Ok(value)
    }

    fn id(&mut self) -> Result<&'a [u8], DecodeError> {
        let len = usize::from(self.u8()?);
        if len == 0 || len > MAX_ID_LEN {
            return Err(DecodeError("bad id length"));
        }
        self.take(len)
    }

    fn finish(&self) -> Result<(), DecodeError> {
        if self.0.is_empty() {
            Ok(())
        } else {
            Err(DecodeError("trailing bytes in chunk"))
        }
    }
}
