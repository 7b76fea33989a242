//! Loading an item in one go (RDB, full sync, RESTORE), its group
//! records indexed all at once at the end.

use crate::sale_item::ledger::{Buyer, Duplicate, Unindexed};

use super::reader::Reader;
use super::*;
use crate::sale_item::bookkeeping::Tally;
use crate::sale_item::SaleItem;

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
    pub(super) fn index_unindexed(&mut self) -> Result<(), DecodeError> {
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
    pub(super) fn finish_unchecked(mut self) -> Result<(SaleItem, Expected, Tally), DecodeError> {
        self.index_unindexed()?;
        Ok((self.item, self.expected, self.tally))
    }
}
