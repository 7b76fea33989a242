//! The serialised form of a sale item, shared by RDB files, DUMP payloads and
//! AOF rewrites so that there is one format to keep compatible.
//!
//! An item is a header chunk followed by record chunks of at most
//! [`RECORDS_PER_CHUNK`] records each, so that neither a save nor an AOF
//! line ever has to hold a whole large ledger in one buffer.
//!
//! ```text
//! header:   'H' version:u8 unlimited:u8 stock limit initial added sold refunded:i64
//!           [start end:i64] [expired:i64] [stream:u8 {stream_len:u32 stream maxlen:i64}]
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
//! Version 7 writes the order stream byte as 2 for an order stream that came with
//! a RESTORE and is not confirmed yet (1: confirmed). Version 8 adds the
//! item's replicated moment (`replicated_moment:i64`, 0 for none) after the
//! transfers, before the record counts.
//!
//! Version 9 adds items with variants: a variants header, then each
//! variant as an item of its own (see `variants`).
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

mod chunked_load;
mod decode;
mod encode;
mod legacy;
mod reader;
#[cfg(test)]
mod tests;
mod variants;
mod whole_load;

pub use variants::{is_variants_header, VariantsHeader};
pub use whole_load::WholeLoad;

/// Bumped whenever the layout changes; older versions stay readable.
/// Version 2 added the sale window, version 3 holds, version 4 the order stream,
/// version 5 group chunks, version 6 stock transfers, version 7 order
/// streams not yet confirmed, version 8 the replicated moment, version 9
/// items with variants (see `variants`).
pub const FORMAT_VERSION: u8 = 9;

// The header's order stream byte.
const NO_STREAM: u8 = 0;
const CONFIRMED_STREAM: u8 = 1;
const UNCONFIRMED_STREAM: u8 = 2;

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
