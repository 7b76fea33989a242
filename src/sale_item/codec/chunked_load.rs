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
        if self.variants_due().is_some() {
            return self.load_next_variant_chunk(chunk);
        }
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
        self.chunks_due().is_some() || self.variants_due().is_some()
    }

    /// Ends a chunked rebuild that stopped short (an AOF cut off): the
    /// records that came are kept if they agree with the counters.
    pub fn end_partial_load(&mut self) -> Result<(), DecodeError> {
        if let Some(header) = self.take_variants_due() {
            if self.variants().len() != header.names.len() {
                return Err(DecodeError("variants cut short"));
            }
            if let Some(last) = self.variants_mut().last_mut() {
                if last.item.is_partly_loaded() {
                    last.item.end_partial_load()?;
                }
            }
            return self.check_variants();
        }
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

impl SaleItem {
    /// An item with variants to rebuild chunk by chunk: each variant's
    /// header and records follow, in the order `header` names them.
    pub fn begin_variants_load(header: VariantsHeader) -> SaleItem {
        let mut item = SaleItem::new(crate::sale_item::Stock::Limited(0), header.limit);
        if let Some(rare) = item.rare_mut(true) {
            rare.variants_due = Some(Box::new(header));
        }
        item
    }

    /// True while an item with variants being rebuilt waits for its next
    /// variant's header.
    pub fn awaits_variant(&self) -> bool {
        self.variants_due().is_some_and(|header| {
            self.variants().len() < header.names.len()
                && self
                    .variants()
                    .last()
                    .is_none_or(|last| !last.item.is_partly_loaded())
        })
    }

    fn variants_due(&self) -> Option<&VariantsHeader> {
        self.rare.as_ref()?.variants_due.as_deref()
    }

    fn take_variants_due(&mut self) -> Option<Box<VariantsHeader>> {
        self.rare.as_mut()?.variants_due.take()
    }

    /// A chunk of an item with variants being rebuilt: a header begins the
    /// next variant once the last is complete, records go to the last.
    /// The variants are checked against each other once all are in.
    fn load_next_variant_chunk(&mut self, chunk: &[u8]) -> Result<(), DecodeError> {
        let Some(header) = self.variants_due() else {
            return Err(DecodeError("no records are due for this item"));
        };
        let announced = header.names.len();
        let loaded = self.variants().len();
        let last_partly_loaded = self
            .variants()
            .last()
            .is_some_and(|last| last.item.is_partly_loaded());
        if last_partly_loaded {
            if let Some(last) = self.variants_mut().last_mut() {
                last.item.load_next_chunk(chunk)?;
            }
        } else {
            if !is_header(chunk) {
                return Err(DecodeError("a variant begins with its header"));
            }
            if loaded >= announced {
                return Err(DecodeError("more variants than the header announced"));
            }
            let name = header.names.get(loaded).cloned().unwrap_or_default();
            let (mut item, expected) = SaleItem::decode_header(chunk)?;
            item.begin_chunked_load(expected)?;
            let mut variants = self
                .rare
                .as_mut()
                .map(|rare| std::mem::take(&mut rare.variants))
                .unwrap_or_default();
            variants.push(crate::sale_item::Variant {
                name,
                item: Box::new(item),
            });
            self.set_variants(variants);
        }
        let complete = self.variants().len() == announced
            && self
                .variants()
                .last()
                .is_some_and(|last| !last.item.is_partly_loaded());
        if complete {
            self.take_variants_due();
            self.check_variants()?;
            if let Some(first) = self.variants().first() {
                let window = first.item.window();
                let stream = first.item.order_stream().cloned();
                self.set_window(window);
                self.set_order_stream(stream);
            }
        }
        Ok(())
    }
}
