//! The serialised form of a sale item, shared by RDB files, DUMP payloads and
//! AOF rewrites so that there is one format to keep compatible.
//!
//! An item is a header chunk followed by record chunks of at most
//! [`RECORDS_PER_CHUNK`] records each, so that neither a save nor an AOF
//! line ever has to hold a whole large ledger in one buffer.
//!
//! ```text
//! header:   'H' version:u8 unlimited:u8 stock limit initial added sold refunded:i64
//!           [start end:i64] [expired:i64] [outbox:u8 {stream_len:u32 stream maxlen:i64}]
//!           buyers:u64 requests:u64
//! groups:   'G' count:u32 { user_len:u8 user units:varint requests:varint
//!           { id_len:u8 id qty:varint reply:varint state:u8 deadline:varint }* }*
//! ```
//! A group is one buyer followed by its requests; `count` is the number of
//! buyers and requests in the chunk. A buyer whose requests do not fit in
//! one chunk continues in a group of the next chunk, with units 0 (which
//! add nothing to a buyer already loaded). Grouping lets a loader store
//! each request under its buyer without looking the buyer up again, and
//! varints make a chunk about half the size of fixed-width integers.
//!
//! Version 2 added the sale window to the header, version 3 the units
//! expired by lapsed holds (`expired:i64` after the window) and the 'Q'
//! request chunk, whose state replaces the refunded flag of the older 'R'
//! chunk (`refunded:u8` after `reply`); version 4 the order stream; version
//! 5 the group chunk, in place of separate buyers and requests chunks:
//!
//! ```text
//! buyers:   'B' count:u32 { user_len:u8 user units:i64 }*
//! requests: 'Q' count:u32 { id_len:u8 id user_len:u8 user qty:i64 reply:i64 state:u8
//!           deadline:i64 }*
//! ```
//! Version 6 added stock transfers between the parts of a split item, at
//! the end of the header, before the record counts:
//!
//! ```text
//!           moved_out moved_in:i64 transfers:u32 { kind:u8 id_len:u8 id
//!           { requested:varint taken:varint dest_len:u8 dest   (kind 0 open, 1 settled)
//!           | units:varint reply:varint } }*                   (kind 2 received)
//! ```
//! (`dest_len` 0: no destination was given.)
//!
//! Version 7 writes the outbox byte as 2 for an order stream that came with
//! a RESTORE and is not confirmed yet (1: confirmed).
//!
//! Older chunks stay readable. Fixed-width integers are little-endian;
//! varints carry seven bits a byte, low first, at most ten bytes. Every
//! read is bounds-checked: damaged input yields a [`DecodeError`], never a
//! panic.
//!
//! Input is also checked against the sale's bookkeeping, because a DUMP
//! payload only carries a checksum its sender computes: RESTORE, a full
//! sync or a hand-made AOF file must not be able to build an item that
//! no sequence of sales produces. See [`SaleItem::check_bookkeeping`] for
//! the rules; each one is kept by every write to an item, and each one
//! holds for every prefix of the chunks of a good item (records only ever
//! add to sums bounded by the header), so that an item rebuilt from part of
//! its chunks still saves into something that loads again.

use super::ledger::{
    put_varint, sort_by_handle, Buyer, Duplicate, Lookup, NewRequest, RequestState, Unindexed,
    READ_AHEAD,
};
use super::transfer::{Transfer, MAX_TRANSFERS};
use super::{Outbox, SaleItem, Stock, Window, MAX_ID_LEN, UNLIMITED_STOCK};

/// Bumped whenever the layout changes; older versions stay readable.
/// Version 2 added the sale window, version 3 holds, version 4 the outbox,
/// version 5 group chunks, version 6 stock transfers, version 7 order
/// streams not yet confirmed.
pub const FORMAT_VERSION: u8 = 7;

// The header's outbox byte.
const NO_OUTBOX: u8 = 0;
const OUTBOX: u8 = 1;
const UNCONFIRMED_OUTBOX: u8 = 2;

// Kinds of transfer records.
const TRANSFER_OPEN: u8 = 0;
const TRANSFER_SETTLED: u8 = 1;
const TRANSFER_RECEIVED: u8 = 2;

pub const RECORDS_PER_CHUNK: usize = 1024;
/// The most records of each kind a header can have the indexes sized for
/// before any record has come.
const PRESIZE_LIMIT: u64 = 1 << 20;

const HEADER_TAG: u8 = b'H';
const BUYERS_TAG: u8 = b'B';
/// Requests as the first release wrote them, with a refunded flag.
const REFUNDABLE_REQUESTS_TAG: u8 = b'R';
/// Requests with their state and hold deadline.
const REQUESTS_TAG: u8 = b'Q';
/// Buyers, each followed by its requests, with varints.
const GROUPS_TAG: u8 = b'G';

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
            self.window().start,
            self.window().end,
            self.ledger.expired,
        ] {
            out.extend_from_slice(&field.to_le_bytes());
        }
        match self.outbox() {
            Some(outbox) => {
                out.push(if outbox.confirmed {
                    OUTBOX
                } else {
                    UNCONFIRMED_OUTBOX
                });
                out.extend_from_slice(&(outbox.stream.len() as u32).to_le_bytes());
                out.extend_from_slice(&outbox.stream);
                out.extend_from_slice(&outbox.maxlen.to_le_bytes());
            }
            None => out.push(NO_OUTBOX),
        }
        self.encode_transfers(&mut out);
        out.extend_from_slice(&(self.ledger.holder_count() as u64).to_le_bytes());
        out.extend_from_slice(&(self.ledger.request_count() as u64).to_le_bytes());
        emit(&out);

        let (buyers, requests) = self.ledger.groups();
        let mut pending = requests.as_slice();
        let mut records = 0;
        let mut flush = |out: &mut Vec<u8>, records: &mut usize| {
            if *records > 0 {
                if let Some(count) = out.get_mut(1..5) {
                    count.copy_from_slice(&(*records as u32).to_le_bytes());
                }
                emit(out);
            }
            out.clear();
            out.push(GROUPS_TAG);
            out.extend_from_slice(&0u32.to_le_bytes());
            *records = 0;
        };
        flush(&mut out, &mut records);
        for (buyer, units) in buyers {
            // Requests whose buyer sorts before this one have none: skipped.
            while pending.first().is_some_and(|(owner, _)| *owner < buyer) {
                pending = pending.get(1..).unwrap_or(&[]);
            }
            let mine = pending.partition_point(|(owner, _)| *owner == buyer);
            let (mut own, rest) = pending.split_at(mine);
            pending = rest;
            if units == 0 && own.is_empty() {
                continue;
            }
            let mut group_units = units;
            loop {
                // A group starts where it and, if it has any, one request
                // fit: a buyer with neither units nor requests in a chunk
                // says nothing.
                if records + 1 + usize::from(!own.is_empty()) > RECORDS_PER_CHUNK {
                    flush(&mut out, &mut records);
                }
                let fitting = own.len().min(RECORDS_PER_CHUNK - records - 1);
                let (now, later) = own.split_at(fitting);
                put_id(&mut out, self.ledger.name(buyer));
                put_varint(&mut out, group_units as u64);
                put_varint(&mut out, now.len() as u64);
                for (_, handle) in now {
                    let request = self.ledger.request_record(*handle);
                    put_id(&mut out, self.ledger.request_id(*handle));
                    put_varint(&mut out, request.qty as u64);
                    put_varint(&mut out, request.reply as u64);
                    out.push(request.state.code());
                    put_varint(&mut out, request.deadline as u64);
                }
                records += 1 + now.len();
                own = later;
                group_units = 0;
                if own.is_empty() {
                    break;
                }
            }
        }
        flush(&mut out, &mut records);
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
        // The figure an unlimited item reports: a limited item never has
        // it (INIT and ADD keep below it), or clients would read it as
        // unlimited.
        if !unlimited && stock == UNLIMITED_STOCK {
            return Err(DecodeError("limited stock at the unlimited figure"));
        }
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
            item.set_window(Window::new(start, end).map_err(|_| DecodeError("bad sale window"))?);
        }
        if version >= 3 {
            // Set only when not 0, so that an item nobody bought from
            // allocates no ledger.
            let expired = input.non_negative()?;
            if expired != 0 {
                item.ledger.expired = expired;
            }
        }
        let outbox = if version >= 4 { input.u8()? } else { NO_OUTBOX };
        let confirmed = match outbox {
            NO_OUTBOX => None,
            OUTBOX => Some(true),
            UNCONFIRMED_OUTBOX if version >= 7 => Some(false),
            _ => return Err(DecodeError("bad outbox flag")),
        };
        if let Some(confirmed) = confirmed {
            let len = input.u32()? as usize;
            let stream = input.take(len)?;
            if stream.is_empty() {
                return Err(DecodeError("empty stream key"));
            }
            item.set_outbox(Some(Outbox {
                stream: stream.into(),
                maxlen: input.non_negative()?,
                confirmed,
            }));
        }
        if version >= 6 {
            item.decode_transfers(&mut input)?;
        }
        let expected = Expected {
            buyers: input.u64()?,
            requests: input.u64()?,
        };
        input.finish()?;
        item.check_counters(expected.buyers)?;
        // Sized up front rather than doubled while loading, up to a bound:
        // the counts come from the input, which may lie.
        if expected.buyers > 0 || expected.requests > 0 {
            item.ledger.reserve(
                expected.buyers.min(PRESIZE_LIMIT) as usize,
                expected.requests.min(PRESIZE_LIMIT) as usize,
            );
        }
        Ok((item, expected))
    }

    /// Adds the records of one record chunk. Returns how many
    /// records it held. A chunk refused part-way may leave some of its
    /// records in: every caller drops an item whose chunk is refused.
    ///
    /// Each record is checked and stored in one pass, with one lookup per
    /// id, prefetched some records ahead, so that the item is whole after
    /// every chunk (SECKILL.LOADCHUNK). A load of a whole item at once
    /// (`WholeLoad`) indexes its records at the end instead, which is
    /// cheaper still.
    pub fn load_chunk(&mut self, chunk: &[u8]) -> Result<usize, DecodeError> {
        self.load_chunk_tallied(chunk, &mut Tally::default())
    }

    /// `load_chunk`, counting each record stored into `tally`, so that a
    /// load of a whole item can be checked with `check_loaded_tally`.
    pub fn load_chunk_tallied(
        &mut self,
        chunk: &[u8],
        tally: &mut Tally,
    ) -> Result<usize, DecodeError> {
        let mut input = Reader(chunk);
        let (tag, count) = input.record_chunk_start()?;
        match tag {
            BUYERS_TAG => self.load_buyers(&mut input, count, tally)?,
            GROUPS_TAG => self.load_groups(&mut input, count, tally)?,
            _ => self.load_requests(&mut input, count, tag, tally)?,
        }
        input.finish()?;
        Ok(count)
    }

    fn load_groups(
        &mut self,
        input: &mut Reader<'_>,
        count: usize,
        tally: &mut Tally,
    ) -> Result<(), DecodeError> {
        let mut records = Vec::with_capacity(count);
        while records.len() < count {
            let user = input.id()?;
            let units = input.non_negative_varint()?;
            let requests = input.varint()?;
            if requests > (count - records.len() - 1) as u64 {
                return Err(DecodeError("bad record count"));
            }
            records.push(GroupRecord::Buyer {
                hash: self.ledger.hash_id(user),
                user,
                units,
                requests: requests as usize,
            });
            for _ in 0..requests {
                let id = input.id()?;
                let qty = input.non_negative_varint()?;
                let reply = input.non_negative_varint()?;
                let state =
                    RequestState::from_code(input.u8()?).ok_or(DecodeError("bad request state"))?;
                let deadline = input.non_negative_varint()?;
                records.push(GroupRecord::Request {
                    hash: self.ledger.hash_id(id),
                    id,
                    request: NewRequest {
                        qty,
                        reply,
                        state,
                        deadline,
                    },
                });
            }
        }
        let mut buyer = None;
        for (number, record) in records.iter().enumerate() {
            match records.get(number + READ_AHEAD) {
                Some(GroupRecord::Buyer { hash, .. }) => self.ledger.prefetch_buyer(*hash),
                Some(GroupRecord::Request { hash, .. }) => self.ledger.prefetch_request(*hash),
                None => {}
            }
            match *record {
                GroupRecord::Buyer {
                    hash,
                    user,
                    units,
                    requests,
                } => {
                    // Refused unless it ends its chunk: the first release of
                    // format 5 started there the group of a buyer whose
                    // requests all went to the next chunk, which names the
                    // buyer again. There it stores nothing: a buyer record
                    // holding nothing and with no requests would be memory
                    // no count, save or digest ever shows.
                    let says_nothing = units == 0 && requests == 0;
                    if says_nothing && number + 1 == records.len() {
                        continue;
                    }
                    let mut found = match self.ledger.find_buyer_hashed(hash, user) {
                        Lookup::Found(found) if found.units > 0 && units > 0 => {
                            return Err(DecodeError("duplicate buyer"));
                        }
                        Lookup::Found(found) => found,
                        Lookup::Missing(_) if says_nothing => {
                            return Err(DecodeError("buyer holding nothing"));
                        }
                        Lookup::Missing(hash) => self
                            .ledger
                            .add_buyer(hash, user, units)
                            .map_err(|_| DecodeError("item too large"))?,
                    };
                    if units > 0 {
                        self.tally_holder(tally, found.handle(), units)?;
                        // A buyer a request chunk named first, holding
                        // nothing until now.
                        if found.units != units {
                            self.ledger.set_units(&mut found, units);
                        }
                    }
                    buyer = Some(found);
                }
                GroupRecord::Request { hash, id, request } => {
                    // Counted by the group's request count, so a buyer
                    // always comes first.
                    let Some(buyer) = buyer else {
                        return Err(DecodeError("request outside a group"));
                    };
                    self.load_request_of(hash, id, &buyer, request, tally)?;
                }
            }
        }
        Ok(())
    }

    /// `load_groups` for a whole load: each record goes to the arena as it
    /// is read, and is indexed with every other one at the end, so that
    /// nothing is looked up while loading. A buyer is only ever written in
    /// one group, or in one group and continuations at the start of the
    /// chunks after it (its requests did not fit one chunk), so the one
    /// buyer a group may find again is `last`, the buyer of the last group
    /// of the chunk before, and only in the first group of a chunk; one
    /// named again anywhere else is a duplicate, refused when the records
    /// are indexed.
    fn load_groups_unindexed(
        &mut self,
        input: &mut Reader<'_>,
        count: usize,
        tally: &mut Tally,
        unindexed: &mut Unindexed,
        last: &mut Option<Buyer>,
    ) -> Result<(), DecodeError> {
        let mut records = 0;
        while records < count {
            let user = input.id()?;
            let units = input.non_negative_varint()?;
            let requests = input.varint()?;
            if requests > (count - records - 1) as u64 {
                return Err(DecodeError("bad record count"));
            }
            let first_group = records == 0;
            records += 1 + requests as usize;
            if units == 0 && requests == 0 && records == count {
                // As in `load_groups`: stores nothing, and the group
                // before stays the one the next chunk may continue.
                continue;
            }
            let continued = last
                .take()
                .filter(|buyer| first_group && self.ledger.name(buyer.handle()) == user);
            let mut buyer = match continued {
                Some(found) if found.units > 0 && units > 0 => {
                    return Err(DecodeError("duplicate buyer"));
                }
                Some(found) => found,
                // Refused, as in `load_groups` (at a chunk's end it was
                // passed over above).
                None if units == 0 && requests == 0 => {
                    return Err(DecodeError("buyer holding nothing"));
                }
                None => {
                    let hash = self.ledger.hash_id(user);
                    self.ledger
                        .add_buyer_unindexed(hash, user, units, unindexed)
                        .map_err(|_| DecodeError("item too large"))?
                }
            };
            if units > 0 {
                self.tally_holder(tally, buyer.handle(), units)?;
                if buyer.units != units {
                    self.ledger.set_units(&mut buyer, units);
                }
            }
            for _ in 0..requests {
                let id = input.id()?;
                let qty = input.non_negative_varint()?;
                let reply = input.non_negative_varint()?;
                let state =
                    RequestState::from_code(input.u8()?).ok_or(DecodeError("bad request state"))?;
                let deadline = input.non_negative_varint()?;
                let request = NewRequest {
                    qty,
                    reply,
                    state,
                    deadline,
                };
                let hash = self.ledger.hash_id(id);
                self.load_request_unindexed(hash, id, &buyer, request, tally, unindexed)?;
            }
            *last = Some(buyer);
        }
        Ok(())
    }

    fn load_buyers(
        &mut self,
        input: &mut Reader<'_>,
        count: usize,
        tally: &mut Tally,
    ) -> Result<(), DecodeError> {
        let mut records = Vec::with_capacity(count);
        for _ in 0..count {
            let user = input.id()?;
            let units = input.non_negative()?;
            records.push((self.ledger.hash_id(user), user, units));
        }
        for (number, (hash, user, units)) in records.iter().enumerate() {
            if let Some((ahead, ..)) = records.get(number + READ_AHEAD) {
                self.ledger.prefetch_buyer(*ahead);
            }
            self.check_buyer(*units)?;
            // A buyer holding nothing is one a request chunk named first.
            let mut buyer = match self.ledger.find_buyer_hashed(*hash, user) {
                Lookup::Found(buyer) if buyer.units > 0 => {
                    return Err(DecodeError("duplicate buyer"));
                }
                Lookup::Found(buyer) => buyer,
                Lookup::Missing(hash) => self
                    .ledger
                    .add_buyer(hash, user, *units)
                    .map_err(|_| DecodeError("item too large"))?,
            };
            self.tally_holder(tally, buyer.handle(), *units)?;
            if buyer.units != *units {
                self.ledger.set_units(&mut buyer, *units);
            }
        }
        Ok(())
    }

    fn load_requests(
        &mut self,
        input: &mut Reader<'_>,
        count: usize,
        tag: u8,
        tally: &mut Tally,
    ) -> Result<(), DecodeError> {
        let mut records = Vec::with_capacity(count);
        for _ in 0..count {
            let id = input.id()?;
            let user = input.id()?;
            let qty = input.non_negative()?;
            let reply = input.non_negative()?;
            let (state, deadline) = if tag == REQUESTS_TAG {
                let state =
                    RequestState::from_code(input.u8()?).ok_or(DecodeError("bad request state"))?;
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
            let hashes = (self.ledger.hash_id(id), self.ledger.hash_id(user));
            records.push((hashes, id, user, request));
        }
        for (number, ((id_hash, user_hash), id, user, request)) in records.iter().enumerate() {
            // Two stages ahead: the index slots first, then the name the
            // buyer's slot points to, once that slot has arrived.
            if let Some(((id_ahead, user_ahead), ..)) = records.get(number + READ_AHEAD) {
                self.ledger.prefetch_request(*id_ahead);
                self.ledger.prefetch_buyer(*user_ahead);
            }
            if let Some(((_, user_ahead), ..)) = records.get(number + READ_AHEAD / 2) {
                self.ledger.prefetch_buyer_name(*user_ahead);
            }
            self.load_request(*id_hash, id, *user_hash, user, *request, tally)?;
        }
        Ok(())
    }

    fn load_request(
        &mut self,
        id_hash: u64,
        id: &[u8],
        user_hash: u64,
        user: &[u8],
        request: NewRequest,
        tally: &mut Tally,
    ) -> Result<(), DecodeError> {
        self.check_request(&request)?;
        // Requests may name a user whose units were all refunded: such a
        // buyer is added holding nothing.
        let buyer = match self.ledger.find_buyer_hashed(user_hash, user) {
            Lookup::Found(buyer) => buyer,
            Lookup::Missing(hash) => self
                .ledger
                .add_buyer(hash, user, 0)
                .map_err(|_| DecodeError("item too large"))?,
        };
        self.load_request_of(id_hash, id, &buyer, request, tally)
    }

    /// Stores a request of `buyer`, after the checks one record allows.
    fn load_request_of(
        &mut self,
        id_hash: u64,
        id: &[u8],
        buyer: &Buyer,
        request: NewRequest,
        tally: &mut Tally,
    ) -> Result<(), DecodeError> {
        let held = self.admit_loaded_request(buyer, &request, tally)?;
        let handle = self
            .ledger
            .add_new_request(id_hash, id, buyer, request)
            .map_err(|_| DecodeError("item too large"))?
            .ok_or(DecodeError("duplicate request id"))?;
        self.hold_loaded_request(handle, &request, held);
        Ok(())
    }

    /// `load_request_of` for a whole load, which indexes the request with
    /// every other one at the end (`WholeLoad::finish`).
    fn load_request_unindexed(
        &mut self,
        id_hash: u64,
        id: &[u8],
        buyer: &Buyer,
        request: NewRequest,
        tally: &mut Tally,
        unindexed: &mut Unindexed,
    ) -> Result<(), DecodeError> {
        let held = self.admit_loaded_request(buyer, &request, tally)?;
        let handle = self
            .ledger
            .add_request_unindexed(id_hash, id, buyer, request, unindexed)
            .map_err(|_| DecodeError("item too large"))?;
        self.hold_loaded_request(handle, &request, held);
        Ok(())
    }

    /// The checks a loaded request of `buyer` must pass before it is
    /// stored, and its count in `tally`. Returns the item's held units
    /// once it is stored.
    fn admit_loaded_request(
        &self,
        buyer: &Buyer,
        request: &NewRequest,
        tally: &mut Tally,
    ) -> Result<i64, DecodeError> {
        // The request's own rules are checked as it is tallied, below.
        // Buyers come before their requests, so a live request's units are
        // already counted in its user's.
        let bound = match request.state {
            RequestState::Purchased | RequestState::Held => buyer.units,
            RequestState::Refunded => self.refunded,
            RequestState::Expired => self.ledger.expired,
        };
        if request.qty > bound {
            return Err(DecodeError("request for more units than were counted"));
        }
        let held = if request.state == RequestState::Held {
            within(self.ledger.held.checked_add(request.qty), self.net_sold())
                .ok_or(DecodeError("more units held than were sold"))?
        } else {
            self.ledger.held
        };
        self.tally_request(tally, buyer.handle(), request)?;
        Ok(held)
    }

    /// Puts a loaded request stored at `handle` among the pending holds,
    /// if it is one.
    fn hold_loaded_request(&mut self, handle: u32, request: &NewRequest, held: i64) {
        if request.state == RequestState::Held {
            self.ledger
                .holds
                .insert((request.deadline, handle), request.qty);
            self.ledger.held = held;
        }
    }

    /// Starts rebuilding the item chunk by chunk, as SECKILL.LOADCHUNK does:
    /// the records `expected` by its header are checked once all are in.
    /// An item with no records is complete, and checked, at once.
    pub fn begin_chunked_load(&mut self, expected: Expected) -> Result<(), DecodeError> {
        if expected.buyers == 0 && expected.requests == 0 {
            return self.check_loaded(expected);
        }
        self.set_chunks_due(Some(expected));
        Ok(())
    }

    /// Adds one record chunk to an item being rebuilt chunk by chunk. Once
    /// the announced records are all in, the whole item is checked
    /// (`check_loaded`); an error means the item cannot be trusted.
    pub fn load_next_chunk(&mut self, chunk: &[u8]) -> Result<(), DecodeError> {
        let Some(expected) = self.chunks_due() else {
            return Err(DecodeError("no records are due for this item"));
        };
        self.load_chunk(chunk)?;
        if self.ledger.holder_count() as u64 > expected.buyers
            || self.ledger.request_count() as u64 > expected.requests
        {
            return Err(DecodeError("more records than the header announced"));
        }
        if self.is_loaded(expected) {
            self.set_chunks_due(None);
            self.check_loaded(expected)?;
        }
        Ok(())
    }

    /// True while records announced by the header are still due.
    pub fn is_partly_loaded(&self) -> bool {
        self.chunks_due().is_some()
    }

    /// Ends a chunked rebuild that stopped short (an AOF cut off): the
    /// records that came are kept if they agree with the counters.
    pub fn end_partial_load(&mut self) -> Result<(), DecodeError> {
        self.set_chunks_due(None);
        // The indexes were sized for every record the header announced.
        self.ledger.shrink_to_fit();
        self.check_bookkeeping()
    }

    /// True once the records announced by the header have all been loaded.
    pub fn is_loaded(&self, expected: Expected) -> bool {
        self.ledger.holder_count() as u64 >= expected.buyers
            && self.ledger.request_count() as u64 >= expected.requests
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
    fn tally_holder(&self, tally: &mut Tally, buyer: u32, units: i64) -> Result<(), DecodeError> {
        self.check_buyer(units)?;
        tally.units = within(tally.units.checked_add(units), self.net_sold())
            .ok_or(DecodeError("buyers hold more units than were sold"))?;
        tally.holders.push((buyer, units));
        Ok(())
    }

    /// Counts one request record of the buyer at handle `buyer`: its own
    /// rules, and the sums of refunded, lapsed and held units so far.
    fn tally_request(
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
                tally.live.push((buyer, request.qty));
                (&mut tally.held, self.net_sold())
            }
            RequestState::Purchased => {
                tally.live.push((buyer, request.qty));
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
    fn check_tally(&self, tally: Tally) -> Result<(), DecodeError> {
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
        sort_by_handle(&mut live, |(handle, _)| *handle);
        let mut holders = holders.into_iter().peekable();
        let mut live = live.into_iter().peekable();
        while let Some((user, qty)) = live.next() {
            let mut requested = qty;
            while let Some((_, qty)) = live.next_if(|(next, _)| *next == user) {
                requested = requested.saturating_add(qty);
            }
            while holders.next_if(|(holder, _)| *holder < user).is_some() {}
            match holders.next_if(|(holder, _)| *holder == user) {
                Some((_, units)) if requested <= units => {}
                _ => return Err(DecodeError("requests for more units than their user holds")),
            }
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
    fn check_counters(&self, holders: u64) -> Result<(), DecodeError> {
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
    fn net_sold(&self) -> i64 {
        self.sold
            .checked_sub(self.refunded)
            .and_then(|units| units.checked_sub(self.ledger.expired))
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

    /// Everything ever put on sale here, received transfers included:
    /// a bound of every stock the item had.
    fn supplied(&self) -> i64 {
        self.supplied_with_transfers()
    }

    fn encode_transfers(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.moved_out().to_le_bytes());
        out.extend_from_slice(&self.moved_in().to_le_bytes());
        let Some(transfers) = self.transfers() else {
            out.extend_from_slice(&0u32.to_le_bytes());
            return;
        };
        out.extend_from_slice(&(transfers.by_id.len() as u32).to_le_bytes());
        for (id, transfer) in transfers.iter() {
            match transfer {
                Transfer::Out {
                    requested,
                    taken,
                    destination,
                    open,
                } => {
                    out.push(if *open {
                        TRANSFER_OPEN
                    } else {
                        TRANSFER_SETTLED
                    });
                    put_id(out, id);
                    put_varint(out, *requested as u64);
                    put_varint(out, *taken as u64);
                    match destination {
                        Some(destination) => put_id(out, destination),
                        None => out.push(0),
                    }
                }
                Transfer::In { units, reply } => {
                    out.push(TRANSFER_RECEIVED);
                    put_id(out, id);
                    put_varint(out, *units as u64);
                    put_varint(out, *reply as u64);
                }
            }
        }
    }

    /// Reads the transfers of a version 6 header, each checked on its own
    /// and their sums against the moved counters.
    fn decode_transfers(&mut self, input: &mut Reader<'_>) -> Result<(), DecodeError> {
        let moved_out = input.non_negative()?;
        let moved_in = input.non_negative()?;
        let count = input.u32()? as usize;
        if count > MAX_TRANSFERS {
            return Err(DecodeError("more transfers than an item keeps"));
        }
        if count == 0 && moved_out == 0 && moved_in == 0 {
            return Ok(());
        }
        let (mut out_sum, mut in_sum) = (0i64, 0i64);
        let mut by_id = std::collections::BTreeMap::new();
        for _ in 0..count {
            let kind = input.u8()?;
            let id = input.id()?;
            let transfer = match kind {
                TRANSFER_OPEN | TRANSFER_SETTLED => {
                    let requested = input.non_negative_varint()?;
                    let taken = input.non_negative_varint()?;
                    let destination = match input.u8()? {
                        0 => None,
                        len => Some(Box::from(input.take(usize::from(len))?)),
                    };
                    let open = kind == TRANSFER_OPEN;
                    if requested == 0 || taken == 0 || taken > requested {
                        return Err(DecodeError("bad transfer given out"));
                    }
                    out_sum = out_sum
                        .checked_add(taken)
                        .ok_or(DecodeError("transfers overflow"))?;
                    Transfer::Out {
                        requested,
                        taken,
                        destination,
                        open,
                    }
                }
                TRANSFER_RECEIVED => {
                    let units = input.non_negative_varint()?;
                    let reply = input.non_negative_varint()?;
                    if units == 0 {
                        return Err(DecodeError("bad transfer received"));
                    }
                    in_sum = in_sum
                        .checked_add(units)
                        .ok_or(DecodeError("transfers overflow"))?;
                    Transfer::In { units, reply }
                }
                _ => return Err(DecodeError("unknown transfer kind")),
            };
            if by_id.insert(Box::from(id), transfer).is_some() {
                return Err(DecodeError("transfer id recorded twice"));
            }
        }
        if out_sum != moved_out || in_sum != moved_in {
            return Err(DecodeError("transfers differ from the units moved"));
        }
        let transfers = self.transfers_mut();
        transfers.by_id = by_id;
        transfers.moved_out = moved_out;
        transfers.moved_in = moved_in;
        // Replies are stocks the item could have had: at most everything
        // supplied to it, which is known once the counters are read.
        let supplied = self.supplied();
        let replies_ok = self.transfers().into_iter().flat_map(|t| t.iter()).all(
            |(_, transfer)| match transfer {
                Transfer::In { reply, .. } => *reply <= supplied,
                Transfer::Out { .. } => true,
            },
        );
        if !replies_ok {
            return Err(DecodeError("transfer reply is not a stock the item had"));
        }
        Ok(())
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

/// What the rules of [`SaleItem::check_bookkeeping`] need from an item's
/// records, gathered one record at a time: by a walk over a stored item,
/// or by a loader as it stores each record, which then needs no second
/// pass over a big item (`check_loaded_tally`).
#[derive(Default)]
pub struct Tally {
    /// Holders by the handle of their record, with their units.
    holders: Vec<(u32, i64)>,
    /// Purchased and held requests by their buyer's handle, with units.
    live: Vec<(u32, i64)>,
    units: i64,
    refunded: i64,
    expired: i64,
    held: i64,
    holds: usize,
    requests: usize,
}

/// An item loaded in one go, as `rdb_load` loads one from an RDB file, a
/// full sync or RESTORE: the header, then record chunks until the header's
/// counts are met, then `finish`. Unlike a chunked load (`load_next_chunk`,
/// for SECKILL.LOADCHUNK, where the item must be whole between chunks),
/// the records of group chunks are indexed only at the end, all at once
/// and in the order of their index slots, which takes a fraction of the
/// time of a lookup per record as it comes.
pub struct WholeLoad {
    item: SaleItem,
    expected: Expected,
    /// Counts every record as it is stored, so that checking the whole
    /// item takes no second pass over it.
    tally: Tally,
    /// The records of group chunks, not indexed yet. `None` once a chunk of
    /// an older kind has come: its requests name their buyers, which must
    /// then be found by name as each comes.
    unindexed: Option<Unindexed>,
    /// The buyer of the last group read, which the first group of the next
    /// chunk may continue.
    last_buyer: Option<Buyer>,
}

impl WholeLoad {
    pub fn begin(header: &[u8]) -> Result<WholeLoad, DecodeError> {
        let (item, expected) = SaleItem::decode_header(header)?;
        let unindexed = Unindexed::with_capacity(
            expected.buyers.min(PRESIZE_LIMIT) as usize,
            expected.requests.min(PRESIZE_LIMIT) as usize,
        );
        Ok(WholeLoad {
            item,
            expected,
            tally: Tally::default(),
            unindexed: Some(unindexed),
            last_buyer: None,
        })
    }

    /// True once the records the header announced have all come: the
    /// caller then reads no further chunk.
    pub fn is_complete(&self) -> bool {
        let unindexed = self.unindexed.as_ref().map_or(0, Unindexed::request_count);
        self.item.ledger.holder_count() as u64 >= self.expected.buyers
            && (self.item.ledger.request_count() + unindexed) as u64 >= self.expected.requests
    }

    /// Adds the records of one chunk. An error means the item cannot be
    /// trusted: the caller drops it.
    pub fn add_chunk(&mut self, chunk: &[u8]) -> Result<(), DecodeError> {
        let mut input = Reader(chunk);
        let (tag, count) = input.record_chunk_start()?;
        if let (GROUPS_TAG, Some(unindexed)) = (tag, self.unindexed.as_mut()) {
            self.item.load_groups_unindexed(
                &mut input,
                count,
                &mut self.tally,
                unindexed,
                &mut self.last_buyer,
            )?;
            return input.finish();
        }
        self.index_unindexed()?;
        self.item.load_chunk_tallied(chunk, &mut self.tally)?;
        Ok(())
    }

    /// Indexes the records loaded so far without an index, if any.
    fn index_unindexed(&mut self) -> Result<(), DecodeError> {
        let Some(unindexed) = self.unindexed.take() else {
            return Ok(());
        };
        if unindexed.is_empty() {
            return Ok(());
        }
        self.item
            .ledger
            .index_unindexed(unindexed)
            .map_err(|duplicate| match duplicate {
                Duplicate::Buyer => DecodeError("duplicate buyer"),
                Duplicate::Request => DecodeError("duplicate request id"),
            })
    }

    /// Indexes the records and checks the whole item: its counts against
    /// the header's, its records against its counters.
    pub fn finish(self) -> Result<SaleItem, DecodeError> {
        let (item, expected, tally) = self.finish_unchecked()?;
        item.check_loaded_tally(expected, tally)?;
        Ok(item)
    }

    /// `finish` without the final check, for tests that check the item in
    /// another way too.
    fn finish_unchecked(mut self) -> Result<(SaleItem, Expected, Tally), DecodeError> {
        self.index_unindexed()?;
        Ok((self.item, self.expected, self.tally))
    }
}

/// One record of a group chunk, as parsed before any is stored.
#[derive(Clone, Copy)]
enum GroupRecord<'a> {
    Buyer {
        hash: u64,
        user: &'a [u8],
        units: i64,
        requests: usize,
    },
    Request {
        hash: u64,
        id: &'a [u8],
        request: NewRequest,
    },
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    /// The tag and record count a record chunk starts with.
    fn record_chunk_start(&mut self) -> Result<(u8, usize), DecodeError> {
        let tag = self.u8()?;
        if ![
            BUYERS_TAG,
            REQUESTS_TAG,
            REFUNDABLE_REQUESTS_TAG,
            GROUPS_TAG,
        ]
        .contains(&tag)
        {
            return Err(DecodeError("unknown chunk"));
        }
        let count = self.u32()? as usize;
        if count == 0 || count > RECORDS_PER_CHUNK {
            return Err(DecodeError("bad record count"));
        }
        Ok((tag, count))
    }

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

    #[inline(always)]
    fn varint(&mut self) -> Result<u64, DecodeError> {
        // Most numbers of a record (units, quantities, request counts, no
        // deadline) fit one byte.
        if let Some((&byte, rest)) = self.0.split_first() {
            if byte < 0x80 {
                self.0 = rest;
                return Ok(u64::from(byte));
            }
        }
        self.long_varint()
    }

    #[inline(never)]
    fn long_varint(&mut self) -> Result<u64, DecodeError> {
        let mut value = 0u64;
        for shift in (0..70).step_by(7) {
            let byte = self.u8()?;
            let bits = u64::from(byte & 0x7f);
            // The tenth byte holds the top bit of a u64 and nothing more.
            if shift == 63 && bits > 1 {
                return Err(DecodeError("varint out of range"));
            }
            value |= bits << shift;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(DecodeError("varint out of range"))
    }

    #[inline(always)]
    fn non_negative_varint(&mut self) -> Result<i64, DecodeError> {
        i64::try_from(self.varint()?).map_err(|_| DecodeError("negative counter"))
    }

    #[inline]
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sale_item::{Moment, RequestState};
    use proptest::prelude::*;
    use std::collections::HashMap;

    /// Every chunk of `item`, header first.
    fn chunks_of(item: &SaleItem) -> Vec<Vec<u8>> {
        let mut chunks = Vec::new();
        item.encode_chunks(|chunk| chunks.push(chunk.to_vec()));
        chunks
    }

    /// Loads chunks as `rdb_load` does: the header, then records until the
    /// header's counts are met, then the full check. Chunks left over are
    /// refused too, as Redis refuses a module value without its end marker.
    ///
    /// The tally the load gathers and a walk over the loaded item must
    /// agree on whether it holds: the loader checks with the first, every
    /// other path with the second.
    fn load(chunks: &[Vec<u8>]) -> Result<SaleItem, DecodeError> {
        let (header, records) = chunks.split_first().ok_or(DecodeError("no chunks"))?;
        let mut load = WholeLoad::begin(header)?;
        let mut records = records.iter();
        while !load.is_complete() {
            load.add_chunk(records.next().ok_or(DecodeError("short read"))?)?;
        }
        if records.next().is_some() {
            return Err(DecodeError("chunks after the item"));
        }
        let (item, expected, tally) = load.finish_unchecked()?;
        let walked = item.check_loaded(expected);
        let tallied = item.check_loaded_tally(expected, tally);
        assert_eq!(
            walked.is_ok(),
            tallied.is_ok(),
            "walk {walked:?}, tally {tallied:?}"
        );
        walked?;
        Ok(item)
    }

    /// The bookkeeping every accepted item keeps, checked through the public
    /// view of the item only, independently of `check_bookkeeping`.
    fn assert_consistent(item: &SaleItem) {
        let stats = item.stats();
        let (sold, refunded, expired) = (
            i128::from(stats.sold),
            i128::from(stats.refunded),
            i128::from(stats.expired),
        );
        let net_sold = sold - refunded - expired;
        assert!(net_sold >= 0, "more given back than sold: {stats:?}");
        if stats.unlimited {
            assert_eq!((stats.initial, stats.added), (0, 0));
        } else {
            assert!(stats.stock >= 0);
            assert_eq!(
                i128::from(stats.stock) + net_sold + i128::from(stats.moved_out)
                    - i128::from(stats.moved_in),
                i128::from(stats.initial) + i128::from(stats.added),
                "stock + sold - refunded - expired is what was supplied: {stats:?}"
            );
            assert!(stats.initial.checked_add(stats.added).is_some());
        }
        let units: i128 = item.buyers().map(|(_, units)| i128::from(units)).sum();
        assert!(units <= net_sold, "buyers hold more than was sold");
        assert!(item.buyers().all(|(_, units)| units > 0));
        if stats.limit > 0 {
            assert!(item.buyers().all(|(_, units)| units <= stats.limit));
        }
        let mut live: HashMap<&[u8], i128> = HashMap::new();
        let (mut refunds, mut lapses, mut held, mut holds) = (0i128, 0i128, 0i128, 0usize);
        for (_, request) in item.requests() {
            assert!(request.qty > 0);
            match request.state {
                RequestState::Refunded => refunds += i128::from(request.qty),
                RequestState::Expired => lapses += i128::from(request.qty),
                RequestState::Purchased | RequestState::Held => {
                    *live.entry(request.user).or_default() += i128::from(request.qty);
                }
            }
            if request.state == RequestState::Held {
                assert!(request.deadline > 0);
                held += i128::from(request.qty);
                holds += 1;
            }
        }
        assert!(refunds <= refunded && lapses <= expired);
        assert_eq!((held, holds), (i128::from(stats.held), stats.holds));
        assert!(held <= net_sold);
        for (user, units) in live {
            assert!(
                units <= i128::from(item.bought(user)),
                "requests beyond units"
            );
        }
    }

    /// What a sale keeps exactly, beyond the bounds the loader checks.
    fn assert_exact(item: &SaleItem) {
        let stats = item.stats();
        let units: i128 = item.buyers().map(|(_, units)| i128::from(units)).sum();
        let sum_of = |state| -> i128 {
            item.requests()
                .filter(|(_, request)| request.state == state)
                .map(|(_, request)| i128::from(request.qty))
                .sum()
        };
        assert_eq!(
            units,
            i128::from(stats.sold) - i128::from(stats.refunded) - i128::from(stats.expired)
        );
        assert_eq!(sum_of(RequestState::Refunded), i128::from(stats.refunded));
        assert_eq!(sum_of(RequestState::Expired), i128::from(stats.expired));
    }

    #[derive(Clone, Debug)]
    enum Op {
        Add(i64),
        Deduct {
            user: u8,
            qty: i64,
            request: Option<u8>,
            /// Hold for this many ms from the current time.
            hold: Option<i64>,
            /// Applied as a replica or an AOF replay would: window not judged.
            decided: bool,
        },
        Refund(u8),
        Confirm(u8),
        /// Time passes, then due holds are released, as the sweep does.
        Wait(i64),
        /// Holds released by name, as a replica applies its master's.
        Release(Vec<u8>),
        Window(i64, i64),
        /// A transfer given out, received, or settled (ids 0..8).
        Take(u8, i64),
        Receive(u8, i64),
        Settle(u8),
    }

    fn quantity() -> impl Strategy<Value = i64> {
        prop_oneof![8 => 1i64..4, 1 => Just(i64::MAX / 2), 1 => Just(i64::MAX)]
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            1 => quantity().prop_map(Op::Add),
            6 => (0u8..6, quantity(), proptest::option::of(0u8..16),
                  proptest::option::of(1i64..50), any::<bool>())
                .prop_map(|(user, qty, request, hold, decided)| Op::Deduct {
                    user, qty, request, hold, decided,
                }),
            2 => (0u8..16).prop_map(Op::Refund),
            2 => (0u8..16).prop_map(Op::Confirm),
            2 => (0i64..40).prop_map(Op::Wait),
            1 => proptest::collection::vec(0u8..16, 1..4).prop_map(Op::Release),
            1 => (0i64..3_000, 0i64..3_000).prop_map(|(start, end)| Op::Window(start, end)),
            1 => (0u8..8, quantity()).prop_map(|(id, qty)| Op::Take(id, qty)),
            1 => (0u8..8, quantity()).prop_map(|(id, qty)| Op::Receive(id, qty)),
            1 => (0u8..8).prop_map(Op::Settle),
        ]
    }

    fn user(n: u8) -> Vec<u8> {
        format!("user{n}").into_bytes()
    }

    fn request(n: u8) -> Vec<u8> {
        format!("req{n}").into_bytes()
    }

    /// Applies `op` at `now` as the command layer would, ignoring refusals:
    /// they change nothing.
    fn apply(item: &mut SaleItem, op: &Op, now: &mut i64) {
        match op {
            Op::Add(qty) => {
                let _ = item.add(*qty);
            }
            Op::Deduct {
                user: n,
                qty,
                request: id,
                hold,
                decided,
            } => {
                let id = id.map(request);
                let hold = hold.filter(|_| id.is_some()).map(|ms| *now + ms);
                let moment = if *decided {
                    Moment::Decided
                } else {
                    Moment::At(*now)
                };
                let _ = item.deduct(&user(*n), *qty, id.as_deref(), moment, hold);
            }
            Op::Refund(n) => {
                let _ = item.refund(&request(*n));
            }
            Op::Confirm(n) => {
                item.confirm(&request(*n));
            }
            Op::Wait(ms) => {
                *now += ms;
                item.release_due(*now, usize::MAX);
            }
            Op::Release(ids) => {
                let ids: Vec<Vec<u8>> = ids.iter().map(|n| request(*n)).collect();
                let ids: Vec<&[u8]> = ids.iter().map(Vec::as_slice).collect();
                item.release(&ids);
            }
            Op::Window(start, end) => {
                if let Ok(window) = Window::new(*start, *end) {
                    item.set_window(window);
                }
            }
            Op::Take(id, qty) => {
                let id = format!("move{id}");
                let _ = item.take(crate::sale_item::Take {
                    transfer_id: id.as_bytes(),
                    requested: *qty,
                    destination: Some(b"part:2".as_slice()),
                    decided: None,
                });
            }
            Op::Receive(id, qty) => {
                let _ = item.receive(format!("move{id}").as_bytes(), *qty);
            }
            Op::Settle(id) => {
                item.settle(format!("move{id}").as_bytes());
            }
        }
    }

    fn new_item(stock: Option<i64>, limit: i64, stream: bool) -> SaleItem {
        let mut item = SaleItem::new(stock.map_or(Stock::Unlimited, Stock::Limited), limit);
        if stream {
            item.set_outbox(Some(Outbox {
                stream: b"{sku}:orders".as_slice().into(),
                maxlen: 100,
                confirmed: true,
            }));
        }
        item
    }

    fn stock() -> impl Strategy<Value = Option<i64>> {
        prop_oneof![
            4 => (0i64..30).prop_map(Some),
            1 => Just(Some(i64::MAX - 2)),
            2 => Just(None),
        ]
    }

    /// Every prefix of `chunks` (the header and the first record chunks)
    /// loads into an item that passes the bookkeeping check: what an AOF
    /// cut short rebuilds still saves into something that loads.
    fn assert_every_prefix_loads(chunks: &[Vec<u8>]) {
        for end in 1..=chunks.len() {
            let (mut item, _) = SaleItem::decode_header(&chunks[0]).unwrap();
            for chunk in &chunks[1..end] {
                item.load_chunk(chunk).unwrap();
            }
            assert_eq!(item.check_bookkeeping(), Ok(()), "prefix of {end} chunks");
            assert_consistent(&item);
            assert_eq!(load(&chunks_of(&item)), Ok(item));
        }
    }

    proptest! {
        #[test]
        fn every_item_built_by_sales_round_trips_and_passes_the_checks(
            stock in stock(),
            limit in prop_oneof![Just(0i64), 1i64..4],
            stream in any::<bool>(),
            ops in proptest::collection::vec(op(), 0..120),
        ) {
            let mut item = new_item(stock, limit, stream);
            let mut now = 1_000i64;
            for op in &ops {
                apply(&mut item, op, &mut now);
                prop_assert_eq!(item.check_bookkeeping(), Ok(()));
                assert_consistent(&item);
                assert_exact(&item);
            }
            let chunks = chunks_of(&item);
            prop_assert_eq!(load(&chunks), Ok(item.clone()));
            assert_every_prefix_loads(&chunks);
        }

        #[test]
        fn a_damaged_encoding_is_refused_or_loads_a_consistent_item(
            stock in stock(),
            limit in prop_oneof![Just(0i64), 1i64..4],
            ops in proptest::collection::vec(op(), 0..60),
            damage in proptest::collection::vec(damage(), 1..4),
            after in proptest::collection::vec(op(), 0..30),
        ) {
            let mut item = new_item(stock, limit, false);
            let mut now = 1_000i64;
            for op in &ops {
                apply(&mut item, op, &mut now);
            }
            let mut chunks = chunks_of(&item);
            for damage in &damage {
                damage.apply(&mut chunks);
            }
            if let Ok(mut loaded) = load(&chunks) {
                assert_consistent(&loaded);
                // Whatever happens to an accepted item next, it still saves
                // into something that loads: a server that took it can
                // restart.
                for op in &after {
                    apply(&mut loaded, op, &mut now);
                    assert_consistent(&loaded);
                }
                prop_assert_eq!(load(&chunks_of(&loaded)), Ok(loaded));
            }
        }
    }

    /// One way to damage an encoded item.
    #[derive(Clone, Debug)]
    enum Damage {
        /// Sets the i64 at `field` (0 stock .. 8 expired) of the header.
        HeaderField {
            field: usize,
            value: i64,
        },
        /// Sets one of the header's record counts (0 buyers, 1 requests).
        HeaderCount {
            which: usize,
            value: u64,
        },
        /// XORs one byte of one chunk.
        Flip {
            chunk: usize,
            at: usize,
            mask: u8,
        },
        /// Writes an i64 at some byte of one chunk.
        Overwrite {
            chunk: usize,
            at: usize,
            value: i64,
        },
        Duplicate(usize),
        Drop(usize),
        Swap(usize, usize),
    }

    fn interesting() -> impl Strategy<Value = i64> {
        prop_oneof![
            Just(0i64),
            Just(1),
            Just(2),
            Just(i64::MAX),
            Just(i64::MAX - 1),
            Just(-1),
            0i64..40,
            any::<i64>(),
        ]
    }

    fn damage() -> impl Strategy<Value = Damage> {
        prop_oneof![
            3 => (0usize..9, interesting())
                .prop_map(|(field, value)| Damage::HeaderField { field, value }),
            1 => (0usize..2, 0u64..20)
                .prop_map(|(which, value)| Damage::HeaderCount { which, value }),
            2 => (0usize..8, any::<usize>(), 1u8..=255)
                .prop_map(|(chunk, at, mask)| Damage::Flip { chunk, at, mask }),
            2 => (1usize..8, any::<usize>(), interesting())
                .prop_map(|(chunk, at, value)| Damage::Overwrite { chunk, at, value }),
            1 => (1usize..8).prop_map(Damage::Duplicate),
            1 => (1usize..8).prop_map(Damage::Drop),
            1 => (1usize..8, 1usize..8).prop_map(|(a, b)| Damage::Swap(a, b)),
        ]
    }

    /// Where the i64 `field` sits in a version 4 header: after the tag, the
    /// version and the unlimited flag.
    fn field_at(field: usize) -> usize {
        3 + 8 * field
    }

    impl Damage {
        fn apply(&self, chunks: &mut Vec<Vec<u8>>) {
            let len = chunks.len();
            match *self {
                // Earlier damage may have put a short chunk first.
                Damage::HeaderField { field, value } if chunks[0].len() >= field_at(9) => {
                    let at = field_at(field);
                    chunks[0][at..at + 8].copy_from_slice(&value.to_le_bytes());
                }
                Damage::HeaderCount { which, value } if chunks[0].len() >= 16 => {
                    let header = &mut chunks[0];
                    let at = header.len() - 16 + 8 * which;
                    header[at..at + 8].copy_from_slice(&value.to_le_bytes());
                }
                Damage::HeaderField { .. } | Damage::HeaderCount { .. } => {}
                Damage::Flip { chunk, at, mask } => {
                    let chunk = &mut chunks[chunk % len];
                    let at = at % chunk.len();
                    chunk[at] ^= mask;
                }
                Damage::Overwrite { chunk, at, value } => {
                    let chunk = &mut chunks[chunk % len];
                    if chunk.len() >= 8 {
                        let at = at % (chunk.len() - 7);
                        chunk[at..at + 8].copy_from_slice(&value.to_le_bytes());
                    }
                }
                Damage::Duplicate(chunk) => {
                    let copy = chunks[chunk % len].clone();
                    chunks.insert(chunk % len, copy);
                }
                Damage::Drop(chunk) if len > 1 => {
                    chunks.remove(chunk % len);
                }
                Damage::Drop(_) => {}
                Damage::Swap(a, b) => chunks.swap(a % len, b % len),
            }
        }
    }

    /// A sale with every kind of record: alice 2 units (r1, and one unit
    /// without a request id), bob 1 unit held (r2), a refund (r3) and a
    /// lapsed hold (r4). Limit 3, 10 units.
    fn sample() -> SaleItem {
        let mut item = SaleItem::new(Stock::Limited(10), 3);
        let at = Moment::At(1_000);
        item.deduct(b"alice", 1, Some(b"r1"), at, None).unwrap();
        item.deduct(b"alice", 1, None, at, None).unwrap();
        item.deduct(b"bob", 1, Some(b"r2"), at, Some(5_000))
            .unwrap();
        item.deduct(b"carol", 2, Some(b"r3"), at, None).unwrap();
        item.refund(b"r3").unwrap();
        item.deduct(b"dave", 1, Some(b"r4"), at, Some(2_000))
            .unwrap();
        item.release_due(2_000, usize::MAX);
        item
    }

    fn with_field(mut header: Vec<u8>, field: usize, value: i64) -> Vec<u8> {
        let at = field_at(field);
        header[at..at + 8].copy_from_slice(&value.to_le_bytes());
        header
    }

    const STOCK: usize = 0;
    const INITIAL: usize = 2;
    const ADDED: usize = 3;
    const SOLD: usize = 4;
    const REFUNDED: usize = 5;
    const EXPIRED: usize = 8;

    #[test]
    fn the_sample_is_a_sale_that_loads() {
        let item = sample();
        let stats = item.stats();
        assert_eq!(
            (
                stats.stock,
                stats.sold,
                stats.refunded,
                stats.expired,
                stats.held
            ),
            (7, 6, 2, 1, 1)
        );
        assert_eq!(load(&chunks_of(&item)), Ok(item));
    }

    #[test]
    fn headers_whose_counters_disagree_are_refused() {
        let header = chunks_of(&sample()).remove(0);
        let refused =
            |field, value| SaleItem::decode_header(&with_field(header.clone(), field, value));
        assert!(refused(STOCK, 7).is_ok(), "the header itself is fine");
        for (field, value, reason) in [
            (STOCK, 8, "stock and units sold differ from units supplied"),
            (SOLD, 7, "stock and units sold differ from units supplied"),
            (
                INITIAL,
                11,
                "stock and units sold differ from units supplied",
            ),
            (REFUNDED, 7, "more units given back than sold"),
            (EXPIRED, 7, "more units given back than sold"),
            (REFUNDED, i64::MAX, "more units given back than sold"),
            (ADDED, i64::MAX, "units supplied overflow"),
            (STOCK, i64::MAX, "limited stock at the unlimited figure"),
        ] {
            assert_eq!(
                refused(field, value).map(|_| ()),
                Err(DecodeError(reason)),
                "field {field} = {value}"
            );
        }
        // Refunded plus expired beyond sold, each of them below it.
        let both = with_field(with_field(header.clone(), REFUNDED, 4), EXPIRED, 3);
        assert_eq!(
            SaleItem::decode_header(&both).map(|_| ()),
            Err(DecodeError("more units given back than sold"))
        );
    }

    #[test]
    fn a_header_announcing_more_buyers_than_units_sold_is_refused() {
        let mut header = chunks_of(&sample()).remove(0);
        let at = header.len() - 16;
        header[at..at + 8].copy_from_slice(&4u64.to_le_bytes());
        assert_eq!(
            SaleItem::decode_header(&header).map(|_| ()),
            Err(DecodeError("more buyers than units sold"))
        );
    }

    #[test]
    fn an_unlimited_item_with_units_supplied_is_refused() {
        let header = chunks_of(&SaleItem::new(Stock::Unlimited, 0)).remove(0);
        assert!(SaleItem::decode_header(&header).is_ok());
        for field in [INITIAL, ADDED] {
            assert_eq!(
                SaleItem::decode_header(&with_field(header.clone(), field, 5)).map(|_| ()),
                Err(DecodeError("unlimited item with units supplied"))
            );
        }
    }

    /// A buyers chunk, as the encoder writes one.
    fn buyers_chunk(buyers: &[(&[u8], i64)]) -> Vec<u8> {
        let mut chunk = vec![BUYERS_TAG];
        chunk.extend_from_slice(&(buyers.len() as u32).to_le_bytes());
        for (user, units) in buyers {
            put_id(&mut chunk, user);
            chunk.extend_from_slice(&units.to_le_bytes());
        }
        chunk
    }

    /// A request record: id, user, qty, reply, state, deadline.
    type Record<'a> = (&'a [u8], &'a [u8], i64, i64, RequestState, i64);

    /// A requests chunk, as the encoder writes one.
    fn requests_chunk(requests: &[Record]) -> Vec<u8> {
        let mut chunk = vec![REQUESTS_TAG];
        chunk.extend_from_slice(&(requests.len() as u32).to_le_bytes());
        for (id, user, qty, reply, state, deadline) in requests {
            put_id(&mut chunk, id);
            put_id(&mut chunk, user);
            chunk.extend_from_slice(&qty.to_le_bytes());
            chunk.extend_from_slice(&reply.to_le_bytes());
            chunk.push(state.code());
            chunk.extend_from_slice(&deadline.to_le_bytes());
        }
        chunk
    }

    /// A group chunk: each buyer with its units and its requests (id, qty,
    /// reply, state, deadline); `count` as announced.
    type Group<'a> = (&'a [u8], u64, &'a [(&'a [u8], u64, u64, u8, u64)]);

    fn groups_chunk(count: u32, groups: &[Group]) -> Vec<u8> {
        let mut chunk = vec![GROUPS_TAG];
        chunk.extend_from_slice(&count.to_le_bytes());
        for (user, units, requests) in groups {
            put_id(&mut chunk, user);
            put_varint(&mut chunk, *units);
            put_varint(&mut chunk, requests.len() as u64);
            for (id, qty, reply, state, deadline) in *requests {
                put_id(&mut chunk, id);
                put_varint(&mut chunk, *qty);
                put_varint(&mut chunk, *reply);
                chunk.push(*state);
                put_varint(&mut chunk, *deadline);
            }
        }
        chunk
    }

    #[test]
    fn a_buyer_with_more_requests_than_a_chunk_holds_continues_in_the_next() {
        let mut item = SaleItem::new(Stock::Unlimited, 0);
        for n in 0..2_500 {
            let id = format!("order:{n}");
            item.deduct(b"whale", 1, Some(id.as_bytes()), Moment::At(1_000), None)
                .unwrap();
        }
        item.deduct(b"minnow", 1, Some(b"last"), Moment::At(1_000), None)
            .unwrap();
        let chunks = chunks_of(&item);
        // 2,503 records (two buyers, 2,501 requests) in chunks of 1,024.
        assert_eq!(chunks.len(), 4);
        assert!(chunks[1..].iter().all(|chunk| chunk[0] == GROUPS_TAG));
        assert_eq!(load(&chunks), Ok(item));
    }

    /// The (units, request count) of each group of a group chunk.
    fn group_heads(chunk: &[u8]) -> Vec<(u64, u64)> {
        let mut input = Reader(chunk.get(5..).unwrap_or(&[]));
        let mut heads = Vec::new();
        while !input.0.is_empty() {
            input.id().unwrap();
            let head = (input.varint().unwrap(), input.varint().unwrap());
            for _ in 0..head.1 {
                input.id().unwrap();
                input.varint().unwrap();
                input.varint().unwrap();
                input.u8().unwrap();
                input.varint().unwrap();
            }
            heads.push(head);
        }
        heads
    }

    /// A buyer whose units were all refunded still has its requests saved,
    /// wherever its group falls against a chunk's end.
    #[test]
    fn a_buyer_holding_nothing_at_a_chunk_boundary_round_trips() {
        let at = Moment::At(1_000);
        for padding in 0..6 {
            let mut item = SaleItem::new(Stock::Unlimited, 0);
            for n in 0..padding {
                let user = format!("plain:{n}");
                item.deduct(user.as_bytes(), 1, None, at, None).unwrap();
            }
            for n in 0..510 {
                let (user, id) = (format!("user:{n}"), format!("order:{n}"));
                item.deduct(user.as_bytes(), 1, Some(id.as_bytes()), at, None)
                    .unwrap();
            }
            item.deduct(b"z", 1, Some(b"oz"), at, None).unwrap();
            item.refund(b"oz").unwrap();
            let chunks = chunks_of(&item);
            for chunk in &chunks[1..] {
                assert!(
                    group_heads(chunk)
                        .iter()
                        .all(|(units, requests)| units + requests > 0),
                    "{padding} plain buyers first: a group that says nothing"
                );
            }
            assert_eq!(load(&chunks), Ok(item), "{padding} plain buyers first");
        }
        // What the first release of format 5 wrote at a chunk's end, a
        // group with neither units nor requests, loads: its requests come
        // in the next chunk.
        let mut item = counters_only();
        let refunded = RequestState::Refunded.code();
        item.load_chunk(&groups_chunk(1, &[(b"a", 0, &[])]))
            .unwrap();
        item.load_chunk(&groups_chunk(
            2,
            &[(b"a", 0, &[(b"r1", 1, 5, refunded, 0)])],
        ))
        .unwrap();
        assert_eq!(
            item.check_loaded(Expected {
                buyers: 0,
                requests: 1
            }),
            Ok(())
        );
    }

    /// A group holding nothing at a chunk's end (what the first release of
    /// format 5 wrote before a buyer's requests went on in the next chunk)
    /// stores nothing, however many chunks of them come: found by an attack
    /// that made 200,000 of them hold 5 MB no count or save showed.
    #[test]
    fn groups_holding_nothing_at_chunk_ends_store_nothing() {
        let item = counters_only();
        let refunded = RequestState::Refunded.code();
        let mut chunks: Vec<Vec<u8>> = (0..100)
            .map(|n| groups_chunk(1, &[(format!("p{n}").as_bytes(), 0, &[])]))
            .collect();
        chunks.push(groups_chunk(2, &[(b"a", 1, &[]), (b"z", 0, &[])]));
        chunks.push(groups_chunk(2, &[(b"z", 0, &[(b"r1", 1, 5, refunded, 0)])]));
        let loaded = load_both_ways(&item, &chunks);
        // a, and z for its refunded request.
        assert_eq!(loaded.ledger.buyer_count(), 2);
        assert_eq!(
            loaded.request(b"r1").map(|request| request.user),
            Some(&b"z"[..])
        );
        assert_eq!(
            loaded.check_loaded(Expected {
                buyers: 1,
                requests: 1
            }),
            Ok(())
        );
    }

    #[test]
    fn group_chunks_that_no_save_writes_are_refused() {
        let item = counters_only();
        let purchased = RequestState::Purchased.code();
        let cases: Vec<(Vec<u8>, &str)> = vec![
            // More requests than the chunk announces records.
            (
                groups_chunk(
                    2,
                    &[(
                        b"a",
                        1,
                        &[(b"r1", 1, 5, purchased, 0), (b"r2", 1, 5, purchased, 0)],
                    )],
                ),
                "bad record count",
            ),
            // Fewer records than announced.
            (
                groups_chunk(3, &[(b"a", 1, &[(b"r1", 1, 5, purchased, 0)])]),
                "truncated chunk",
            ),
            // A varint past 64 bits.
            (
                {
                    let mut chunk = vec![GROUPS_TAG, 1, 0, 0, 0];
                    put_id(&mut chunk, b"a");
                    chunk.extend_from_slice(&[0xff; 10]);
                    chunk.push(0);
                    chunk
                },
                "varint out of range",
            ),
            // Units beyond i64.
            (
                groups_chunk(1, &[(b"a", u64::MAX, &[])]),
                "negative counter",
            ),
            // A new buyer holding nothing and with no requests, before
            // the end of its chunk.
            (
                groups_chunk(2, &[(b"a", 0, &[]), (b"b", 1, &[])]),
                "buyer holding nothing",
            ),
            // A buyer twice, holding units both times.
            (
                groups_chunk(2, &[(b"a", 1, &[]), (b"a", 1, &[])]),
                "duplicate buyer",
            ),
            // A request id twice, under two groups.
            (
                groups_chunk(
                    4,
                    &[
                        (b"a", 1, &[(b"r1", 1, 5, purchased, 0)]),
                        (b"b", 1, &[(b"r1", 1, 5, purchased, 0)]),
                    ],
                ),
                "duplicate request id",
            ),
            // More units in a request than its buyer holds.
            (
                groups_chunk(2, &[(b"a", 1, &[(b"r1", 2, 5, purchased, 0)])]),
                "request for more units than were counted",
            ),
            (
                groups_chunk(2, &[(b"a", 1, &[(b"r1", 1, 5, 9, 0)])]),
                "bad request state",
            ),
        ];
        for (chunk, reason) in cases {
            let mut loaded = item.clone();
            assert_eq!(
                loaded.load_chunk(&chunk),
                Err(DecodeError(reason)),
                "{reason}"
            );
            assert_eq!(
                whole_load(&item, &[chunk]).map(|_| ()),
                Err(DecodeError(reason)),
                "{reason}, in a whole load"
            );
        }
        // A continuation (units 0) adds requests to a buyer loaded before.
        let mut loaded = item.clone();
        loaded
            .load_chunk(&groups_chunk(
                2,
                &[(b"a", 2, &[(b"r1", 1, 5, purchased, 0)])],
            ))
            .unwrap();
        loaded
            .load_chunk(&groups_chunk(
                2,
                &[(b"a", 0, &[(b"r2", 1, 5, purchased, 0)])],
            ))
            .unwrap();
        assert_eq!(loaded.bought(b"a"), 2);
        assert_eq!(loaded.stats().requests, 2);
        assert_eq!(
            loaded.check_loaded(Expected {
                buyers: 1,
                requests: 2
            }),
            Ok(())
        );
    }

    /// Loads `chunks` after a header of `item`'s counters as `rdb_load`
    /// does, every chunk whatever the counts, without the final check.
    fn whole_load(item: &SaleItem, chunks: &[Vec<u8>]) -> Result<SaleItem, DecodeError> {
        let mut load = WholeLoad::begin(&header_announcing(item, 2, 2))?;
        for chunk in chunks {
            load.add_chunk(chunk)?;
        }
        load.finish_unchecked().map(|(item, ..)| item)
    }

    /// Loads `chunks` after a header of `item`'s counters both as a whole
    /// load and chunk by chunk, which must build the same item.
    fn load_both_ways(item: &SaleItem, chunks: &[Vec<u8>]) -> SaleItem {
        let whole = whole_load(item, chunks).unwrap();
        let mut chunked = item.clone();
        for chunk in chunks {
            chunked.load_chunk(chunk).unwrap();
        }
        assert_eq!(whole, chunked);
        whole
    }

    #[test]
    fn a_whole_load_takes_chunks_of_every_kind_in_any_mix() {
        let item = counters_only();
        let purchased = RequestState::Purchased.code();
        let expired = RequestState::Expired.code();
        let chunks = [
            groups_chunk(2, &[(b"a", 1, &[(b"r1", 1, 5, purchased, 0)])]),
            buyers_chunk(&[(b"b", 1)]),
            requests_chunk(&[(b"r2", b"a", 1, 5, RequestState::Refunded, 0)]),
            // Group chunks after a chunk of an older kind: looked up again.
            groups_chunk(2, &[(b"c", 0, &[(b"r3", 1, 5, expired, 0)])]),
        ];
        let whole = load_both_ways(&item, &chunks);
        assert_eq!((whole.bought(b"a"), whole.bought(b"b")), (1, 1));
        assert_eq!(whole.stats().requests, 3);
        assert_eq!(whole.request(b"r3").map(|r| r.user), Some(&b"c"[..]));
        assert_eq!(
            whole.check_loaded(Expected {
                buyers: 2,
                requests: 3
            }),
            Ok(())
        );
    }

    /// A whole load indexes its group chunks' records at the end, so the
    /// only buyer it finds again is the last one of a chunk, continued by
    /// the first group of the next: a buyer named again anywhere else,
    /// which no save writes, is refused as a duplicate, where a
    /// chunked load looks every buyer up and takes the later group as more
    /// requests of the same buyer. Either way the item holds together.
    #[test]
    fn a_whole_load_refuses_a_buyer_named_in_two_groups_apart() {
        let item = counters_only();
        let refunded = RequestState::Refunded.code();
        let chunks = [groups_chunk(
            4,
            &[
                (b"a", 1, &[]),
                (b"b", 1, &[]),
                (b"a", 0, &[(b"r1", 1, 5, refunded, 0)]),
            ],
        )];
        assert_eq!(
            whole_load(&item, &chunks).map(|_| ()),
            Err(DecodeError("duplicate buyer"))
        );
        let mut chunked = item.clone();
        chunked.load_chunk(&chunks[0]).unwrap();
        assert_eq!(
            chunked.check_loaded(Expected {
                buyers: 2,
                requests: 1
            }),
            Ok(())
        );
        // A request id repeated in a later chunk is found at the end too.
        let purchased = RequestState::Purchased.code();
        let chunks = [
            groups_chunk(2, &[(b"a", 1, &[(b"r1", 1, 5, purchased, 0)])]),
            groups_chunk(2, &[(b"b", 1, &[(b"r1", 1, 5, purchased, 0)])]),
        ];
        assert_eq!(
            whole_load(&item, &chunks).map(|_| ()),
            Err(DecodeError("duplicate request id"))
        );
    }

    /// A header for `item`'s counters announcing the given record counts.
    fn header_announcing(item: &SaleItem, buyers: u64, requests: u64) -> Vec<u8> {
        let mut header = chunks_of(item).remove(0);
        let at = header.len() - 16;
        header[at..at + 8].copy_from_slice(&buyers.to_le_bytes());
        header[at + 8..].copy_from_slice(&requests.to_le_bytes());
        header
    }

    /// An item of 10 units, limit 3, with 4 sold, 1 refunded, 1 expired: 2
    /// units for the buyers, before any record is loaded.
    fn counters_only() -> SaleItem {
        let mut item = SaleItem::new(Stock::Limited(10), 3);
        let at = Moment::At(1_000);
        item.deduct(b"x", 2, None, at, None).unwrap();
        item.deduct(b"y", 1, Some(b"ry"), at, None).unwrap();
        item.refund(b"ry").unwrap();
        item.deduct(b"z", 1, Some(b"rz"), at, Some(1_500)).unwrap();
        item.release_due(1_500, usize::MAX);
        let (empty, _) = SaleItem::decode_header(&header_announcing(&item, 0, 0)).unwrap();
        empty
    }

    #[test]
    fn buyer_records_beyond_the_limit_or_the_units_sold_are_refused() {
        let mut item = counters_only();
        let before = item.clone();
        for (buyers, reason) in [
            (
                &[(&b"a"[..], 4i64)][..],
                "buyer holds more than the per-user limit",
            ),
            (
                &[(&b"a"[..], 2), (&b"b"[..], 1)][..],
                "buyers hold more units than were sold",
            ),
        ] {
            assert_eq!(
                item.load_chunk(&buyers_chunk(buyers)),
                Err(DecodeError(reason))
            );
            // A refused chunk may have loaded some records: its item is
            // dropped by every caller, so each case starts afresh.
            item = before.clone();
        }
        // Each chunk on its own is fine; together they hold too much.
        item.load_chunk(&buyers_chunk(&[(b"a", 2)])).unwrap();
        item.load_chunk(&buyers_chunk(&[(b"b", 1)])).unwrap();
        assert_eq!(
            item.check_loaded(Expected {
                buyers: 2,
                requests: 0
            }),
            Err(DecodeError("buyers hold more units than were sold"))
        );
    }

    #[test]
    fn request_records_the_counters_do_not_account_for_are_refused() {
        use RequestState::{Expired, Held, Purchased, Refunded};
        let mut item = counters_only();
        item.load_chunk(&buyers_chunk(&[(b"a", 1), (b"b", 1)]))
            .unwrap();
        let before = item.clone();
        for (request, reason) in [
            (
                (&b"r"[..], &b"a"[..], 2i64, 5i64, Purchased, 0i64),
                "request for more units than were counted",
            ),
            (
                (b"r", b"nobody", 1, 5, Purchased, 0),
                "request for more units than were counted",
            ),
            (
                (b"r", b"a", 2, 5, Refunded, 0),
                "request for more units than were counted",
            ),
            (
                (b"r", b"a", 2, 5, Expired, 0),
                "request for more units than were counted",
            ),
            ((b"r", b"a", 1, 5, Held, 0), "hold without a deadline"),
            (
                (b"r", b"a", 1, 11, Purchased, 0),
                "request reply is not a stock the item had",
            ),
        ] {
            assert_eq!(
                item.load_chunk(&requests_chunk(&[request])),
                Err(DecodeError(reason)),
                "{request:?}"
            );
            // A refused chunk may have loaded some records: its item is
            // dropped by every caller, so each case starts afresh.
            item = before.clone();
        }
        // Each request is within what alice holds; both together are not.
        item.load_chunk(&requests_chunk(&[(b"r1", b"a", 1, 5, Purchased, 0)]))
            .unwrap();
        item.load_chunk(&requests_chunk(&[(b"r2", b"a", 1, 5, Held, 9_000)]))
            .unwrap();
        assert_eq!(
            item.check_loaded(Expected {
                buyers: 2,
                requests: 2
            }),
            Err(DecodeError("requests for more units than their user holds"))
        );
    }

    #[test]
    fn refunds_and_lapses_beyond_their_counters_are_refused_once_complete() {
        use RequestState::{Expired, Refunded};
        let mut item = counters_only();
        item.load_chunk(&requests_chunk(&[(b"r1", b"a", 1, 5, Refunded, 0)]))
            .unwrap();
        item.load_chunk(&requests_chunk(&[(b"r2", b"a", 1, 5, Refunded, 0)]))
            .unwrap();
        assert_eq!(
            item.check_loaded(Expected {
                buyers: 0,
                requests: 2
            }),
            Err(DecodeError("requests for more units than were counted"))
        );
        let mut item = counters_only();
        let both = requests_chunk(&[
            (b"r1", b"a", 1, 5, Expired, 700),
            (b"r2", b"b", 1, 5, Expired, 700),
        ]);
        // Within one chunk the sum is refused at once...
        assert_eq!(
            item.clone().load_chunk(&both),
            Err(DecodeError("requests for more units than were counted"))
        );
        // ...and over two chunks once the item is complete.
        item.load_chunk(&requests_chunk(&[(b"r1", b"a", 1, 5, Expired, 700)]))
            .unwrap();
        item.load_chunk(&requests_chunk(&[(b"r2", b"b", 1, 5, Expired, 700)]))
            .unwrap();
        assert_eq!(
            item.check_loaded(Expected {
                buyers: 0,
                requests: 2
            }),
            Err(DecodeError("requests for more units than were counted"))
        );
    }

    #[test]
    fn an_unlimited_item_replies_unlimited_stock_only() {
        let mut item = SaleItem::new(Stock::Unlimited, 0);
        item.deduct(b"a", 1, None, Moment::At(1_000), None).unwrap();
        let (mut loaded, _) = SaleItem::decode_header(&header_announcing(&item, 1, 1)).unwrap();
        loaded.load_chunk(&buyers_chunk(&[(b"a", 1)])).unwrap();
        let request = |reply| requests_chunk(&[(b"r", b"a", 1, reply, RequestState::Purchased, 0)]);
        assert_eq!(
            loaded.load_chunk(&request(5)),
            Err(DecodeError("request reply is not a stock the item had"))
        );
        loaded.load_chunk(&request(UNLIMITED_STOCK)).unwrap();
        assert_eq!(
            loaded.check_loaded(Expected {
                buyers: 1,
                requests: 1
            }),
            Ok(())
        );
    }

    #[test]
    fn a_chunk_spliced_from_another_item_is_refused() {
        let item = sample();
        let mut other = SaleItem::new(Stock::Limited(10), 3);
        other
            .deduct(b"erin", 1, None, Moment::At(1_000), None)
            .unwrap();
        let mut chunks = chunks_of(&item);
        chunks.insert(2, chunks_of(&other).remove(1));
        // Announce the spliced buyer too, so that only the bookkeeping can
        // tell.
        let header = &mut chunks[0];
        let at = header.len() - 16;
        let buyers = u64::from_le_bytes(header[at..at + 8].try_into().unwrap());
        header[at..at + 8].copy_from_slice(&(buyers + 1).to_le_bytes());
        assert!(load(&chunks).is_err());
    }

    #[test]
    fn every_prefix_of_a_large_item_loads() {
        let mut item = SaleItem::new(Stock::Limited(10_000), 3);
        let at = Moment::At(1_000);
        for n in 0..2_500 {
            let user = format!("user{n}");
            let id = format!("req{n}");
            let hold = (n % 5 == 0).then_some(2_000 + n);
            item.deduct(user.as_bytes(), 1 + n % 2, Some(id.as_bytes()), at, hold)
                .unwrap();
            item.deduct(user.as_bytes(), 1, None, at, None).unwrap();
        }
        for n in (0..2_500).step_by(7) {
            item.refund(format!("req{n}").as_bytes()).unwrap();
        }
        item.release_due(3_000, usize::MAX);
        assert_exact(&item);
        let chunks = chunks_of(&item);
        assert!(chunks.len() > 4, "{} chunks", chunks.len());
        assert_every_prefix_loads(&chunks);
    }

    #[test]
    fn a_legal_item_with_the_largest_numbers_loads() {
        let at = Moment::At(1_000);
        let mut unlimited = SaleItem::new(Stock::Unlimited, 0);
        unlimited
            .deduct(b"a", i64::MAX, Some(b"r1"), at, Some(i64::MAX))
            .unwrap();
        assert_eq!(load(&chunks_of(&unlimited)), Ok(unlimited.clone()));
        unlimited.refund(b"r1").unwrap();
        unlimited
            .deduct(b"b", i64::MAX, None, at, None)
            .unwrap_err();
        assert_eq!(load(&chunks_of(&unlimited)), Ok(unlimited));

        // (ADD stops one short of the largest integer.)
        let mut limited = SaleItem::new(Stock::Limited(i64::MAX - 2), 0);
        limited.add(1).unwrap();
        limited
            .deduct(b"a", i64::MAX - 1, Some(b"r1"), at, None)
            .unwrap();
        assert_eq!(load(&chunks_of(&limited)), Ok(limited));
    }
}
