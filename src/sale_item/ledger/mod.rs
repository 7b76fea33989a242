//! Compact storage for an item's buyers and request ids.
//!
//! A flash-sale item can hold millions of purchases, so the layout is chosen
//! for memory and for steady latency rather than convenience:
//!
//! - Every id lives once in an append-only arena of chunks (no allocation
//!   per record, and growing never copies what is already stored).
//! - Records are found through hash indexes of 4-byte handles that grow
//!   step by step (see `index`): one big table doubling at once would stop
//!   the server for as long as it takes to move every entry.
//!
//! Record layouts in the arena (`len` is the id's length less one, with the
//! top bit set on a request, so that the arena can be walked record by
//! record):
//! ```text
//! buyer:    len:u8 name  units:i64
//! request:  len:u8 id  state:u8  buyer:u32  qty:varint  reply:varint  deadline:varint
//! ```
//! A buyer's units sit in its record, next to the name a lookup compares
//! anyway, and a walk of the arena visits buyers in handle order: a full
//! check of an item is one front-to-back pass, with nothing to sort.

mod arena;
mod holds;
mod request;
mod scan;
mod sorted_map;
mod tail_map;
mod unindexed;

use super::index::{prefetch, Index};
use super::radix;
use arena::*;
pub use arena::{put_varint, Full};
use foldhash::fast::RandomState;
pub use holds::{HoldBook, HoldRef};
pub use request::{NewRequest, RequestRecord, RequestState, RequestView};
pub use scan::{BadCursor, Cursor, Scanned};
pub use sorted_map::set_allocator_size_classes;
use std::hash::BuildHasher;
use std::ops::{Deref, DerefMut};
use std::sync::LazyLock;
pub use unindexed::{Duplicate, Unindexed};

/// How many records ahead a full pass prefetches.
pub const READ_AHEAD: usize = 16;

/// Sorts records by an arena handle, stably (see `radix`).
pub fn sort_by_handle<T: Copy>(records: &mut Vec<T>, handle: impl Fn(&T) -> u32) {
    radix::sort_by_key(records, 32, handle);
}

fn slot_handle<const W: usize>(slot: &[u32; W]) -> u32 {
    slot.get(1).copied().unwrap_or(0)
}

/// Where a lookup found a record, or the hash to insert one with.
#[derive(Clone, Copy)]
pub enum Lookup<T> {
    Found(T),
    Missing(u64),
}

/// A buyer's record handle and its units.
pub type HandleUnits = (u32, i64);
/// A request as (buyer handle, request handle).
pub type RequestOfBuyer = (u32, u32);

/// A buyer found by `find_buyer`: where its record is, for `set_units`.
#[derive(Clone, Copy)]
pub struct Buyer {
    name: u32,
    pub units: i64,
}

impl Buyer {
    /// The arena handle of the buyer's name: what `request_buyer` returns
    /// for this buyer's requests.
    pub fn handle(&self) -> u32 {
        self.name
    }
}

/// One seed for every ledger's hashes, drawn at random when the module
/// loads, as Redis seeds its own dict hashes once per process: ids chosen
/// to collide cannot be prepared in advance.
static HASHER: LazyLock<RandomState> = LazyLock::new(RandomState::default);

/// The hash every ledger finds `id` by (see [`Ledger::hash_id`]).
pub fn hash_of(id: &[u8]) -> u64 {
    HASHER.hash_one(id)
}

#[derive(Clone, Default)]
pub struct Ledger {
    arena: Arena,
    /// Arena handles of buyer records, by name: slots of a tag and the
    /// handle.
    buyers: Index<2>,
    /// Arena handles of request records, by id: slots of a tag and the
    /// handle.
    requests: Index<2>,
    /// Buyers holding at least one unit.
    holders: usize,
    /// Every pending hold; changed only through `add_hold` and
    /// `remove_hold`, which keep its figures of lapsed holds in step.
    pub holds: HoldBook,
    /// Units in pending holds; they count as sold until confirmed, refunded
    /// or lapsed.
    pub held: i64,
    /// Units ever given back by holds that lapsed.
    pub expired: i64,
    /// The moment of the item's last purchase replicated with `AT` (0:
    /// none). See [`SaleItem::replicated_moment`](crate::sale_item::SaleItem::replicated_moment).
    pub replicated_moment: i64,
}

/// A ledger allocated by the first write that needs one: an item nobody
/// has bought from yet costs a pointer for it, not the ledger's size.
/// Reads of an item without one see an empty ledger; any `&mut` use
/// allocates it, so writes only take `&mut` once they have something to
/// record.
#[derive(Clone, Default)]
pub struct LazyLedger(Option<Box<Ledger>>);

static EMPTY_LEDGER: Ledger = Ledger::new();

impl Deref for LazyLedger {
    type Target = Ledger;

    fn deref(&self) -> &Ledger {
        self.0.as_deref().unwrap_or(&EMPTY_LEDGER)
    }
}

impl DerefMut for LazyLedger {
    #[inline]
    fn deref_mut(&mut self) -> &mut Ledger {
        self.0.get_or_insert_with(new_ledger)
    }
}

/// The ledger of an item's first write: once per item, kept out of line
/// so that every other `&mut` use stays a pointer check.
#[cold]
#[inline(never)]
fn new_ledger() -> Box<Ledger> {
    Box::default()
}

impl LazyLedger {
    /// Gives back index slots reserved for records that never came; an
    /// item with no ledger stays without one.
    pub fn shrink_to_fit(&mut self) {
        if let Some(ledger) = self.0.as_deref_mut() {
            ledger.buyers.shrink_to_fit();
            ledger.requests.shrink_to_fit();
        }
    }

    /// Bytes of the ledger and all it holds; 0 before the first write.
    pub fn memory_usage(&self) -> usize {
        self.0.as_deref().map_or(0, |ledger| {
            std::mem::size_of::<Ledger>() + ledger.heap_usage()
        })
    }
}

impl Ledger {
    const fn new() -> Ledger {
        Ledger {
            arena: Arena { chunks: Vec::new() },
            buyers: Index::new(),
            requests: Index::new(),
            holders: 0,
            holds: HoldBook::new(),
            held: 0,
            expired: 0,
            replicated_moment: 0,
        }
    }

    fn id_at(&self, handle: u32) -> &[u8] {
        leading_id(self.arena.record(handle))
    }

    /// The hash lookups of `id` use, for the `*_hashed` lookups.
    pub fn hash_id(&self, id: &[u8]) -> u64 {
        HASHER.hash_one(id)
    }

    /// Starts loading what a lookup of the buyer with `hash` reads first.
    pub fn prefetch_buyer(&self, hash: u64) {
        self.buyers.prefetch(hash);
    }

    /// Starts loading the name a lookup of the buyer with `hash` will
    /// compare; best called after `prefetch_buyer` had time to land.
    pub fn prefetch_buyer_name(&self, hash: u64) {
        if let Some(slot) = self.buyers.first_tagged(hash) {
            if let Some(first) = self.arena.record(slot_handle(slot)).first() {
                prefetch(first);
            }
        }
    }

    /// Starts loading what a lookup of the request with `hash` reads first.
    pub fn prefetch_request(&self, hash: u64) {
        self.requests.prefetch(hash);
    }

    pub fn find_buyer(&self, user: &[u8]) -> Lookup<Buyer> {
        self.find_buyer_hashed(self.hash_id(user), user)
    }

    /// `find_buyer` with the hash of `user` from `hash_id`.
    pub fn find_buyer_hashed(&self, hash: u64, user: &[u8]) -> Lookup<Buyer> {
        match self
            .buyers
            .find(hash, |slot| self.id_at(slot_handle(slot)) == user)
        {
            Some(slot) => Lookup::Found(Buyer {
                name: slot_handle(slot),
                units: self.buyer_units(slot_handle(slot)),
            }),
            None => Lookup::Missing(hash),
        }
    }

    /// The units `user` holds, 0 if none.
    pub fn units_of(&self, user: &[u8]) -> i64 {
        match self.find_buyer(user) {
            Lookup::Found(buyer) => buyer.units,
            Lookup::Missing(_) => 0,
        }
    }

    /// The units of the buyer record at `handle`.
    pub fn buyer_units(&self, handle: u32) -> i64 {
        units_in(&self.arena, handle)
    }

    pub fn set_units(&mut self, buyer: &mut Buyer, units: i64) {
        // The record's units, not `buyer.units`: a write may have settled
        // holds of this buyer since it was found.
        let before = self.buyer_units(buyer.name);
        self.write_units(buyer, before, units);
        if before != units {
            self.holds.units_changed(buyer.name, units);
        }
    }

    /// Adds `qty` to the units of `buyer`'s record (`set_units` of the
    /// record's units plus `qty`), reading the record once.
    #[inline]
    pub fn add_units(&mut self, buyer: &mut Buyer, qty: i64) {
        let before = self.buyer_units(buyer.name);
        self.write_units(buyer, before, before.saturating_add(qty));
        if before != buyer.units {
            self.holds.units_changed(buyer.name, buyer.units);
        }
    }

    /// `add_units` for a purchase that holds its units: the hold book
    /// learns of the units and the hold together, in `add_hold`, which
    /// must follow (or `held_units_untold`, should the hold not be made).
    /// Told apart, it moved the buyer's moment of emptying twice per hold.
    #[inline]
    pub fn add_units_to_hold(&mut self, buyer: &mut Buyer, qty: i64) {
        let before = self.buyer_units(buyer.name);
        self.write_units(buyer, before, before.saturating_add(qty));
    }

    /// Tells the hold book the units `add_units_to_hold` wrote, when no
    /// hold followed.
    pub fn held_units_untold(&mut self, buyer: &Buyer) {
        self.holds.units_changed(buyer.name, buyer.units);
    }

    /// Writes `units` to `buyer`'s record, which held `before`; the hold
    /// book is told by the caller.
    #[inline]
    fn write_units(&mut self, buyer: &mut Buyer, before: i64, units: i64) {
        match (before > 0, units > 0) {
            (false, true) => self.holders += 1,
            (true, false) => self.holders -= 1,
            _ => {}
        }
        let record = self.arena.record_mut(buyer.name);
        let at = 1 + record.first().map_or(0, |byte| id_len(*byte));
        if let Some(bytes) = record.get_mut(at..at + 8) {
            bytes.copy_from_slice(&units.to_le_bytes());
        }
        buyer.units = units;
    }

    /// Adds a buyer holding `units`; `hash` comes from `find_buyer`.
    pub fn add_buyer(&mut self, hash: u64, user: &[u8], units: i64) -> Result<Buyer, Full> {
        let buyer = self.push_buyer(user, units)?;
        self.buyers.insert(hash, [0, buyer.name]);
        Ok(buyer)
    }

    /// Writes a buyer record to the arena, unindexed.
    fn push_buyer(&mut self, user: &[u8], units: i64) -> Result<Buyer, Full> {
        let name = self.arena.push(BUYER_RECORD_EXTRA + user.len(), |out| {
            out.push(length_byte(user, false));
            out.extend_from_slice(user);
            out.extend_from_slice(&units.to_le_bytes());
        })?;
        if units > 0 {
            self.holders += 1;
        }
        Ok(Buyer { name, units })
    }

    pub fn find_request(&self, id: &[u8]) -> Lookup<u32> {
        self.find_request_hashed(self.hash_id(id), id)
    }

    /// `find_request` with the hash of `id` from `hash_id`.
    pub fn find_request_hashed(&self, hash: u64, id: &[u8]) -> Lookup<u32> {
        match self
            .requests
            .find(hash, |slot| self.id_at(slot_handle(slot)) == id)
        {
            Some(slot) => Lookup::Found(slot_handle(slot)),
            None => Lookup::Missing(hash),
        }
    }

    /// The details of the request at `handle`.
    pub fn request(&self, handle: u32) -> RequestView<'_> {
        let record = self.request_record(handle);
        RequestView {
            user: self.id_at(record.buyer),
            qty: record.qty,
            reply: record.reply,
            state: record.state,
            deadline: record.deadline,
        }
    }

    /// The request at `handle` as stored, without reading its user's name.
    pub fn request_record(&self, handle: u32) -> RequestRecord {
        let record = self.arena.record(handle);
        let id_len = leading_id(record).len();
        let mut rest = record.get(1 + id_len..).unwrap_or(&[]);
        let state = rest
            .first()
            .and_then(|code| RequestState::from_code(*code))
            .unwrap_or(RequestState::Purchased);
        let buyer = rest
            .get(1..5)
            .and_then(|bytes| bytes.try_into().ok())
            .map_or(0, u32::from_le_bytes);
        rest = rest.get(5..).unwrap_or(&[]);
        let qty = take_varint(&mut rest) as i64;
        let reply = take_varint(&mut rest) as i64;
        let deadline = take_varint(&mut rest) as i64;
        RequestRecord {
            buyer,
            qty,
            reply,
            state,
            deadline,
        }
    }

    /// Records a purchase by `buyer`; `hash` comes from `find_request`.
    /// Returns the record's handle.
    pub fn add_request(
        &mut self,
        hash: u64,
        id: &[u8],
        buyer: &Buyer,
        request: NewRequest,
    ) -> Result<u32, Full> {
        let handle = self.push_request(id, buyer, request)?;
        self.requests.insert(hash, [0, handle]);
        Ok(handle)
    }

    /// Writes a request record to the arena, unindexed.
    fn push_request(&mut self, id: &[u8], buyer: &Buyer, request: NewRequest) -> Result<u32, Full> {
        self.arena.push(REQUEST_RECORD_EXTRA + id.len(), |out| {
            out.push(length_byte(id, true));
            out.extend_from_slice(id);
            out.push(request.state.code());
            out.extend_from_slice(&buyer.name.to_le_bytes());
            put_varint(out, request.qty as u64);
            put_varint(out, request.reply as u64);
            put_varint(out, request.deadline as u64);
        })
    }

    /// `add_request` for a loader: unless a request with id `id` is there
    /// already (then `None`, and the item is to be dropped: the record
    /// written stays unused), with one probe of the index for both.
    pub fn add_new_request(
        &mut self,
        hash: u64,
        id: &[u8],
        buyer: &Buyer,
        request: NewRequest,
    ) -> Result<Option<u32>, Full> {
        let handle = self.push_request(id, buyer, request)?;
        let arena = &self.arena;
        let added = self.requests.insert_new(hash, [0, handle], |slot| {
            leading_id(arena.record(slot_handle(slot))) == id
        });
        Ok(added.then_some(handle))
    }

    pub fn set_state(&mut self, handle: u32, state: RequestState) {
        let record = self.arena.record_mut(handle);
        let at = 1 + record.first().map_or(0, |byte| id_len(*byte));
        if let Some(code) = record.get_mut(at) {
            *code = state.code();
        }
    }

    /// The buyer handle (see [`Buyer::handle`]) of the request at `handle`,
    /// without decoding the rest of the record.
    pub fn request_buyer(&self, handle: u32) -> u32 {
        let record = self.arena.record(handle);
        let at = 2 + leading_id(record).len();
        record
            .get(at..at + 4)
            .and_then(|bytes| bytes.try_into().ok())
            .map_or(0, u32::from_le_bytes)
    }

    /// True if records of `bytes` bytes in all fit, however they fall into
    /// chunks (each chunk may leave up to a record's size unused, at most
    /// half of it).
    pub fn has_room_for(&self, bytes: usize) -> bool {
        self.arena.has_room_for(bytes)
    }

    /// True if a buyer named `user` (when new) and a request with id
    /// `request_id` both fit, so that a sale judged possible never fails
    /// half-way through being recorded.
    pub fn has_room(&self, user: Option<&[u8]>, request_id: Option<&[u8]>) -> bool {
        let buyer = user.map_or(0, |user| BUYER_RECORD_EXTRA + user.len());
        let request = request_id.map_or(0, |id| REQUEST_RECORD_EXTRA + id.len());
        self.arena.has_room(buyer, request)
    }

    /// The request id of the record at `handle`.
    pub fn request_id(&self, handle: u32) -> &[u8] {
        self.id_at(handle)
    }

    pub fn requests(&self) -> impl Iterator<Item = (&[u8], RequestView<'_>)> {
        self.request_handles()
            .map(|handle| (self.id_at(handle), self.request(handle)))
    }

    /// The handles of every request record, for `request` and
    /// `request_buyer`.
    pub fn request_handles(&self) -> impl Iterator<Item = u32> + '_ {
        // Records are read in index order, which is random in the arena:
        // while one is decoded, the record some slots ahead is prefetched,
        // and the name of the buyer of the one half as far ahead, whose
        // record has arrived by then.
        let far = self.requests.iter().skip(READ_AHEAD).map(Some);
        let near = self.requests.iter().skip(READ_AHEAD / 2).map(Some);
        self.requests
            .iter()
            .zip(far.chain(std::iter::repeat(None)))
            .zip(near.chain(std::iter::repeat(None)))
            .map(|((slot, far), near)| {
                self.prefetch_record(far);
                if let Some(near) = near {
                    let buyer = self.request_buyer(slot_handle(near));
                    if let Some(first) = self.arena.record(buyer).first() {
                        prefetch(first);
                    }
                }
                slot_handle(slot)
            })
    }

    /// The handles of every request record in the order the records sit in
    /// the arena: a pass over them reads memory front to back.
    pub fn request_handles_in_arena_order(&self) -> impl Iterator<Item = u32> + '_ {
        self.walk()
            .filter(|(_, kind)| *kind == RecordKind::Request)
            .map(|(handle, _)| handle)
    }

    /// What a save writes as groups: every buyer (units 0 included) by the
    /// handle of its name, in arena order, and every request as (buyer
    /// handle, request handle), by buyer and then in arena order.
    pub fn groups(&self) -> (Vec<HandleUnits>, Vec<RequestOfBuyer>) {
        let buyers: Vec<HandleUnits> = self
            .walk()
            .filter(|(_, kind)| *kind == RecordKind::Buyer)
            .map(|(handle, _)| (handle, self.buyer_units(handle)))
            .collect();
        let mut requests: Vec<RequestOfBuyer> = self
            .request_handles_in_arena_order()
            .map(|handle| (self.request_buyer(handle), handle))
            .collect();
        // Stable: each buyer's requests stay in arena order.
        sort_by_handle(&mut requests, |(buyer, _)| *buyer);
        (buyers, requests)
    }

    /// The user id at a buyer handle (see [`Buyer::handle`]).
    pub fn name(&self, handle: u32) -> &[u8] {
        self.id_at(handle)
    }

    /// Every record, in the order written.
    fn walk(&self) -> ArenaWalk<'_> {
        ArenaWalk {
            chunks: &self.arena.chunks,
            number: 0,
            position: 0,
        }
    }

    fn prefetch_record<const W: usize>(&self, slot: Option<&[u32; W]>) {
        if let Some(first) = slot.and_then(|slot| self.arena.record(slot_handle(slot)).first()) {
            prefetch(first);
        }
    }

    /// Buyers holding at least one unit, with their units, in the order
    /// they first bought.
    pub fn holders(&self) -> impl Iterator<Item = (&[u8], i64)> {
        self.holder_handles()
            .map(|(handle, units)| (self.id_at(handle), units))
    }

    /// Buyers holding at least one unit, with their units not in pending
    /// holds.
    pub fn units_outside_holds(&self) -> impl Iterator<Item = (&[u8], i64)> {
        self.holder_handles().map(|(handle, units)| {
            let held = self.holds.held_by(handle);
            (self.id_at(handle), units.saturating_sub(held))
        })
    }

    /// Buyers holding at least one unit, as the handle of their record
    /// (see [`Buyer::handle`]) and their units, in handle order: one
    /// front-to-back pass over the arena.
    pub fn holder_handles(&self) -> impl Iterator<Item = (u32, i64)> + '_ {
        self.walk()
            .filter(|(_, kind)| *kind == RecordKind::Buyer)
            .map(|(handle, _)| (handle, self.buyer_units(handle)))
            .filter(|(_, units)| *units > 0)
    }

    pub fn holder_count(&self) -> usize {
        self.holders
    }

    pub fn request_count(&self) -> usize {
        self.requests.len()
    }

    pub fn buyer_count(&self) -> usize {
        self.buyers.len()
    }

    /// Sizes the indexes for `buyers` and `requests` more records in one
    /// allocation each, as a loader does before filling them.
    pub fn reserve(&mut self, buyers: usize, requests: usize) {
        self.buyers.reserve(buyers);
        self.requests.reserve(requests);
    }

    /// True while both indexes are moving entries to bigger tables.
    #[cfg(test)]
    pub fn is_resizing(&self) -> bool {
        self.buyers.is_resizing() && self.requests.is_resizing()
    }

    /// Bytes the ledger holds on the heap.
    fn heap_usage(&self) -> usize {
        self.arena.allocated()
            + self.buyers.allocated()
            + self.requests.allocated()
            + self.holds.heap_usage()
    }
}

/// The units of the buyer record at `handle` in `arena`.
fn units_in(arena: &Arena, handle: u32) -> i64 {
    let record = arena.record(handle);
    let at = 1 + leading_id(record).len();
    record
        .get(at..at + 8)
        .and_then(|bytes| bytes.try_into().ok())
        .map_or(0, i64::from_le_bytes)
}

#[cfg(test)]
mod tests;
