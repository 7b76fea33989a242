//! Reading the header and the current record chunks (groups) into an
//! item, each record checked as it is stored.

use super::reader::Reader;
use super::*;
use crate::sale_item::bookkeeping::{within, Tally};
use crate::sale_item::ledger::{Buyer, Lookup, NewRequest, RequestState, Unindexed, READ_AHEAD};
use crate::sale_item::transfer::{Transfer, MAX_TRANSFERS};
use crate::sale_item::{SaleItem, Stock, StreamSetting, Window, UNLIMITED_STOCK};

impl SaleItem {
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
        let stream_setting = if version >= 4 { input.u8()? } else { NO_STREAM };
        let confirmed = match stream_setting {
            NO_STREAM => None,
            CONFIRMED_STREAM => Some(true),
            UNCONFIRMED_STREAM if version >= 7 => Some(false),
            _ => return Err(DecodeError("bad order stream flag")),
        };
        if let Some(confirmed) = confirmed {
            let len = input.u32()? as usize;
            let stream = input.take(len)?;
            if stream.is_empty() {
                return Err(DecodeError("empty stream key"));
            }
            item.set_order_stream(Some(StreamSetting {
                stream: stream.into(),
                maxlen: input.non_negative()?,
                confirmed,
            }));
        }
        if version >= 6 {
            item.decode_transfers(&mut input)?;
        }
        if version >= 8 {
            // Any value is consistent: it only says which moment a
            // relative hold replicated as sent is judged at, alike on
            // every server that loads it. Set only when not 0, as above.
            let moment = i64::from_le_bytes(input.array()?);
            if moment != 0 {
                item.ledger.replicated_moment = moment;
            }
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

    pub(super) fn load_groups(
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
    pub(super) fn load_groups_unindexed(
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

    pub(super) fn load_request(
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
    pub(super) fn load_request_of(
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
    pub(super) fn load_request_unindexed(
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
    pub(super) fn admit_loaded_request(
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
    pub(super) fn hold_loaded_request(&mut self, handle: u32, request: &NewRequest, held: i64) {
        if request.state == RequestState::Held {
            let buyer = self.ledger.request_buyer(handle);
            self.ledger
                .add_hold((request.deadline, handle), request.qty, buyer);
            self.ledger.held = held;
        }
    }

    /// Reads the transfers of a version 6 header, each checked on its own
    /// and their sums against the moved counters.
    pub(super) fn decode_transfers(&mut self, input: &mut Reader<'_>) -> Result<(), DecodeError> {
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

/// One record of a group chunk, as parsed before any is stored.
#[derive(Clone, Copy)]
pub(super) enum GroupRecord<'a> {
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
