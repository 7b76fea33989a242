//! Rebuilding an item one chunk at a time, as SECKILL.LOADCHUNK does, the
//! item whole between chunks.

use crate::sale_item::SaleItem;

use super::*;

impl SaleItem {
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
}
