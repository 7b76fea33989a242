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
    /// For an item with variants: its header, the variants loaded so far
    /// and the one being loaded (`item` then stands for nothing).
    variants: Option<Box<VariantsLoad>>,
}

struct VariantsLoad {
    header: VariantsHeader,
    loaded: Vec<SaleItem>,
    current: Option<WholeLoad>,
}

impl WholeLoad {
    pub fn begin(header: &[u8]) -> Result<WholeLoad, DecodeError> {
        if is_variants_header(header) {
            let header = VariantsHeader::decode(header)?;
            return Ok(WholeLoad {
                item: SaleItem::new(crate::sale_item::Stock::Limited(0), 0),
                expected: Expected {
                    buyers: 0,
                    requests: 0,
                },
                tally: Tally::default(),
                unindexed: None,
                last_buyer: None,
                variants: Some(Box::new(VariantsLoad {
                    header,
                    loaded: Vec::new(),
                    current: None,
                })),
            });
        }
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
            variants: None,
        })
    }

    /// True once the records the header announced have all come: the
    /// caller then reads no further chunk.
    pub fn is_complete(&self) -> bool {
        if let Some(variants) = &self.variants {
            return variants.current.is_none()
                && variants.loaded.len() == variants.header.names.len();
        }
        let unindexed = self.unindexed.as_ref().map_or(0, Unindexed::request_count);
        self.item.ledger.holder_count() as u64 >= self.expected.buyers
            && (self.item.ledger.request_count() + unindexed) as u64 >= self.expected.requests
    }

    /// Adds the records of one chunk. An error means the item cannot be
    /// trusted: the caller drops it.
    pub fn add_chunk(&mut self, chunk: &[u8]) -> Result<(), DecodeError> {
        if let Some(variants) = self.variants.as_deref_mut() {
            return variants.add_chunk(chunk);
        }
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
        if let Some(variants) = self.variants {
            if variants.current.is_some() {
                return Err(DecodeError("variant cut short"));
            }
            return variants.header.assemble(variants.loaded);
        }
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

impl VariantsLoad {
    /// A variant's header begins it; its records follow until it is
    /// complete, and it is checked then.
    fn add_chunk(&mut self, chunk: &[u8]) -> Result<(), DecodeError> {
        match self.current.as_mut() {
            Some(current) => current.add_chunk(chunk)?,
            None => {
                if self.loaded.len() >= self.header.names.len() {
                    return Err(DecodeError("more variants than the header announced"));
                }
                if !is_header(chunk) {
                    return Err(DecodeError("a variant begins with its header"));
                }
                self.current = Some(WholeLoad::begin(chunk)?);
            }
        }
        if self.current.as_ref().is_some_and(WholeLoad::is_complete) {
            if let Some(current) = self.current.take() {
                self.loaded.push(current.finish()?);
            }
        }
        Ok(())
    }
}
