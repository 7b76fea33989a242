//! Compact storage for an item's buyers and request ids.
//!
//! A flash-sale item can hold millions of purchases, so the layout is chosen
//! for memory and for steady latency rather than convenience:
//!
//! - Every id lives once in an append-only arena of chunks (no allocation
//!   per record, and growing never copies what is already stored).
//! - Records are found through hash indexes of 4-byte handles. An index is
//!   split into many small tables once it grows, so that a resize only ever
//!   moves a small part of it: one big table would stop the server for as
//!   long as it takes to move every entry.
//!
//! Record layouts in the arena:
//! ```text
//! buyer:    len:u8 name
//! request:  len:u8 id  state:u8  buyer:u32  qty:varint  reply:varint  deadline:varint
//! ```

use hashbrown::{DefaultHashBuilder, HashTable};
use std::hash::BuildHasher;

/// Largest arena chunk; positions inside a chunk fit in 16 bits.
const MAX_CHUNK: usize = 1 << 16;
const FIRST_CHUNK: usize = 256;
/// Chunk numbers fit in the other 16 bits of a handle.
const MAX_CHUNKS: usize = 1 << 16;
/// Entries an index holds in one table before it splits into `SHARDS`.
const SPLIT_AT: usize = 1 << 14;
const SHARDS: usize = 64;

/// The arena or an index cannot take another record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Full;

#[derive(Clone, Default)]
struct Arena {
    chunks: Vec<Vec<u8>>,
}

impl Arena {
    /// Appends a record made of `parts` and returns its handle.
    fn push(&mut self, parts: &[&[u8]]) -> Result<u32, Full> {
        let len: usize = parts.iter().map(|part| part.len()).sum();
        let fits = self
            .chunks
            .last()
            .is_some_and(|chunk| chunk.len() + len <= chunk.capacity());
        if !fits {
            if self.chunks.len() >= MAX_CHUNKS || len > MAX_CHUNK {
                return Err(Full);
            }
            // Chunks double up to MAX_CHUNK, so a small item stays small.
            let size = (FIRST_CHUNK << self.chunks.len().min(8)).clamp(len, MAX_CHUNK);
            self.chunks.push(Vec::with_capacity(size));
        }
        let number = self.chunks.len() - 1;
        let chunk = self.chunks.last_mut().ok_or(Full)?;
        let position = chunk.len();
        for part in parts {
            chunk.extend_from_slice(part);
        }
        Ok(((number << 16) | position) as u32)
    }

    /// The bytes from the record at `handle` to the end of its chunk.
    fn record(&self, handle: u32) -> &[u8] {
        let (number, position) = (handle as usize >> 16, handle as usize & 0xffff);
        self.chunks
            .get(number)
            .and_then(|chunk| chunk.get(position..))
            .unwrap_or(&[])
    }

    fn record_mut(&mut self, handle: u32) -> &mut [u8] {
        let (number, position) = (handle as usize >> 16, handle as usize & 0xffff);
        self.chunks
            .get_mut(number)
            .and_then(|chunk| chunk.get_mut(position..))
            .unwrap_or(&mut [])
    }

    /// True if records of `first` and then `second` bytes can be pushed.
    fn has_room(&self, first: usize, second: usize) -> bool {
        let spare = self
            .chunks
            .last()
            .map_or(0, |chunk| chunk.capacity() - chunk.len());
        let new_chunks = MAX_CHUNKS.saturating_sub(self.chunks.len());
        // Each record either fits what is left, or opens a fresh chunk.
        match (first + second <= spare, first <= spare) {
            (true, _) => true,
            (false, true) => new_chunks >= 1,
            (false, false) => new_chunks >= 2 || (new_chunks == 1 && first + second <= MAX_CHUNK),
        }
    }

    fn allocated(&self) -> usize {
        self.chunks.capacity() * std::mem::size_of::<Vec<u8>>()
            + self.chunks.iter().map(Vec::capacity).sum::<usize>()
    }
}

/// The id at the start of a record: a length byte, then the bytes.
fn leading_id(record: &[u8]) -> &[u8] {
    let len = record.first().map_or(0, |len| usize::from(*len));
    record.get(1..1 + len).unwrap_or(&[])
}

fn put_varint(out: &mut [u8; 10], mut value: u64) -> &[u8] {
    // Seven bits a byte, low first; ten bytes hold any u64.
    let mut len = 0;
    for slot in out.iter_mut() {
        let byte = (value & 0x7f) as u8;
        value >>= 7;
        len += 1;
        if value == 0 {
            *slot = byte;
            break;
        }
        *slot = byte | 0x80;
    }
    out.get(..len).unwrap_or(&[])
}

fn take_varint(input: &mut &[u8]) -> u64 {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let Some((&byte, rest)) = input.split_first() else {
            break;
        };
        *input = rest;
        value |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            break;
        }
    }
    value
}

/// A hash index, split into `SHARDS` tables once large.
#[derive(Clone)]
struct Index<T> {
    shards: Vec<HashTable<T>>,
    len: usize,
}

impl<T> Default for Index<T> {
    fn default() -> Self {
        Index {
            shards: vec![HashTable::new()],
            len: 0,
        }
    }
}

impl<T: Copy> Index<T> {
    fn shard(&self, hash: u64) -> usize {
        // Bits that hashbrown uses neither for the bucket nor for the tag.
        if self.shards.len() == 1 {
            0
        } else {
            (hash >> 32) as usize % SHARDS
        }
    }

    fn find(&self, hash: u64, mut matches: impl FnMut(&T) -> bool) -> Option<T> {
        self.shards
            .get(self.shard(hash))?
            .find(hash, |entry| matches(entry))
            .copied()
    }

    fn find_mut(&mut self, hash: u64, mut matches: impl FnMut(&T) -> bool) -> Option<&mut T> {
        let shard = self.shard(hash);
        self.shards
            .get_mut(shard)?
            .find_mut(hash, |entry| matches(entry))
    }

    fn insert(&mut self, hash: u64, entry: T, rehash: impl Fn(&T) -> u64) {
        if self.shards.len() == 1 && self.len >= SPLIT_AT {
            let entries: Vec<T> = self.iter().collect();
            self.shards = (0..SHARDS).map(|_| HashTable::new()).collect();
            for entry in entries {
                let entry_hash = rehash(&entry);
                let shard = self.shard(entry_hash);
                if let Some(table) = self.shards.get_mut(shard) {
                    table.insert_unique(entry_hash, entry, &rehash);
                }
            }
        }
        let shard = self.shard(hash);
        if let Some(table) = self.shards.get_mut(shard) {
            table.insert_unique(hash, entry, rehash);
            self.len += 1;
        }
    }

    fn iter(&self) -> impl Iterator<Item = T> + '_ {
        self.shards.iter().flat_map(|table| table.iter().copied())
    }

    fn allocated(&self) -> usize {
        self.shards.capacity() * std::mem::size_of::<HashTable<T>>()
            + self
                .shards
                .iter()
                .map(HashTable::allocation_size)
                .sum::<usize>()
    }
}

/// A buyer as the index stores it: the arena handle of its name and the
/// units it holds, split in halves so that the entry takes 12 bytes.
#[derive(Clone, Copy)]
struct BuyerEntry {
    name: u32,
    units_low: u32,
    units_high: u32,
}

impl BuyerEntry {
    fn units(&self) -> i64 {
        ((u64::from(self.units_high) << 32) | u64::from(self.units_low)) as i64
    }

    fn set_units(&mut self, units: i64) {
        self.units_low = units as u64 as u32;
        self.units_high = ((units as u64) >> 32) as u32;
    }
}

/// Where a purchase made under a request id stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum RequestState {
    /// Bought for good: without a hold, or a hold that was confirmed.
    Purchased,
    Refunded,
    /// A reservation awaiting CONFIRM until its deadline.
    Held,
    /// A reservation whose deadline passed unconfirmed.
    Expired,
}

impl RequestState {
    pub fn code(self) -> u8 {
        match self {
            RequestState::Purchased => 0,
            RequestState::Refunded => 1,
            RequestState::Held => 2,
            RequestState::Expired => 3,
        }
    }

    pub fn from_code(code: u8) -> Option<RequestState> {
        Some(match code {
            0 => RequestState::Purchased,
            1 => RequestState::Refunded,
            2 => RequestState::Held,
            3 => RequestState::Expired,
            _ => return None,
        })
    }
}

/// A purchase recorded under a request id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct RequestView<'a> {
    pub user: &'a [u8],
    pub qty: i64,
    /// The remaining stock the purchase replied with.
    pub reply: i64,
    pub state: RequestState,
    /// Unix ms a hold lapses at; 0 for a purchase made without a hold.
    pub deadline: i64,
}

/// What `add_request` stores besides the id and the buyer.
#[derive(Clone, Copy, Debug)]
pub struct NewRequest {
    pub qty: i64,
    pub reply: i64,
    pub state: RequestState,
    pub deadline: i64,
}

/// Where a lookup found a record, or the hash to insert one with.
#[derive(Clone, Copy)]
pub enum Lookup<T> {
    Found(T),
    Missing(u64),
}

/// A buyer found by `find_buyer`: what `set_units` needs to find it again
/// without hashing its name twice.
#[derive(Clone, Copy)]
pub struct Buyer {
    hash: u64,
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

#[derive(Clone, Default)]
pub struct Ledger {
    hasher: DefaultHashBuilder,
    arena: Arena,
    /// Buyers and their units, by name.
    buyers: Index<BuyerEntry>,
    /// Arena handles of request records, by id.
    requests: Index<u32>,
    /// Buyers holding at least one unit.
    holders: usize,
}

impl Ledger {
    fn id_at(&self, handle: u32) -> &[u8] {
        leading_id(self.arena.record(handle))
    }

    pub fn find_buyer(&self, user: &[u8]) -> Lookup<Buyer> {
        let hash = self.hasher.hash_one(user);
        match self
            .buyers
            .find(hash, |entry| self.id_at(entry.name) == user)
        {
            Some(entry) => Lookup::Found(Buyer {
                hash,
                name: entry.name,
                units: entry.units(),
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

    pub fn set_units(&mut self, buyer: &mut Buyer, units: i64) {
        let name = buyer.name;
        if let Some(entry) = self.buyers.find_mut(buyer.hash, |entry| entry.name == name) {
            match (entry.units() > 0, units > 0) {
                (false, true) => self.holders += 1,
                (true, false) => self.holders -= 1,
                _ => {}
            }
            entry.set_units(units);
            buyer.units = units;
        }
    }

    /// Adds a buyer holding nothing yet; `hash` comes from `find_buyer`.
    pub fn add_buyer(&mut self, hash: u64, user: &[u8]) -> Result<Buyer, Full> {
        let name = self.arena.push(&[&[user.len() as u8], user])?;
        let entry = BuyerEntry {
            name,
            units_low: 0,
            units_high: 0,
        };
        let (hasher, arena) = (&self.hasher, &self.arena);
        self.buyers.insert(hash, entry, |entry| {
            hasher.hash_one(leading_id(arena.record(entry.name)))
        });
        Ok(Buyer {
            hash,
            name,
            units: 0,
        })
    }

    pub fn find_request(&self, id: &[u8]) -> Lookup<u32> {
        let hash = self.hasher.hash_one(id);
        match self.requests.find(hash, |handle| self.id_at(*handle) == id) {
            Some(handle) => Lookup::Found(handle),
            None => Lookup::Missing(hash),
        }
    }

    /// The details of the request at `handle`.
    pub fn request(&self, handle: u32) -> RequestView<'_> {
        let record = self.arena.record(handle);
        let id_len = leading_id(record).len();
        let mut rest = record.get(1 + id_len..).unwrap_or(&[]);
        let state = rest
            .first()
            .and_then(|code| RequestState::from_code(*code))
            .unwrap_or(RequestState::Purchased);
        let user = rest
            .get(1..5)
            .and_then(|bytes| bytes.try_into().ok())
            .map_or(0, u32::from_le_bytes);
        rest = rest.get(5..).unwrap_or(&[]);
        let qty = take_varint(&mut rest) as i64;
        let reply = take_varint(&mut rest) as i64;
        let deadline = take_varint(&mut rest) as i64;
        RequestView {
            user: self.id_at(user),
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
        let mut numbers = [[0; 10]; 3];
        let [qty_bytes, reply_bytes, deadline_bytes] = &mut numbers;
        let handle = self.arena.push(&[
            &[id.len() as u8],
            id,
            &[request.state.code()],
            &buyer.name.to_le_bytes(),
            put_varint(qty_bytes, request.qty as u64),
            put_varint(reply_bytes, request.reply as u64),
            put_varint(deadline_bytes, request.deadline as u64),
        ])?;
        let (hasher, arena) = (&self.hasher, &self.arena);
        self.requests.insert(hash, handle, |handle| {
            hasher.hash_one(leading_id(arena.record(*handle)))
        });
        Ok(handle)
    }

    pub fn set_state(&mut self, handle: u32, state: RequestState) {
        let record = self.arena.record_mut(handle);
        let at = 1 + record.first().map_or(0, |len| usize::from(*len));
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

    /// True if a buyer named `user` (when new) and a request with id
    /// `request_id` both fit, so that a sale judged possible never fails
    /// half-way through being recorded.
    pub fn has_room(&self, user: Option<&[u8]>, request_id: Option<&[u8]>) -> bool {
        // A record is its id and a length byte, plus at most 35 bytes of
        // state, buyer handle and three varints for a request.
        let buyer = user.map_or(0, |user| user.len() + 1);
        let request = request_id.map_or(0, |id| id.len() + 36);
        self.arena.has_room(buyer, request)
    }

    /// The request id of the record at `handle`.
    pub fn request_id(&self, handle: u32) -> &[u8] {
        self.id_at(handle)
    }

    /// Buyers holding at least one unit, with their units.
    pub fn holders(&self) -> impl Iterator<Item = (&[u8], i64)> {
        self.buyers
            .iter()
            .filter(|entry| entry.units() > 0)
            .map(|entry| (self.id_at(entry.name), entry.units()))
    }

    pub fn requests(&self) -> impl Iterator<Item = (&[u8], RequestView<'_>)> {
        self.requests
            .iter()
            .map(|handle| (self.id_at(handle), self.request(handle)))
    }

    pub fn holder_count(&self) -> usize {
        self.holders
    }

    pub fn request_count(&self) -> usize {
        self.requests.len
    }

    pub fn buyer_count(&self) -> usize {
        self.buyers.len
    }

    pub fn memory_usage(&self) -> usize {
        self.arena.allocated() + self.buyers.allocated() + self.requests.allocated()
    }
}
