//! The serialised form of an item with variants (format version 9): a
//! header of its own, then each variant as a whole item, in order.
//!
//! ```text
//! variants: 'V' version:u8 limit:i64 count:u8 { name_len:u8 name }*
//! ```
//! followed by `count` items (each a header chunk and its record chunks).
//! The sale window and the order stream are the variants' own, set alike
//! on all of them: a loader takes the first's and refuses variants that
//! disagree.
//!
//! Loaded, the variants are checked as every item is, and then against
//! each other: a request id names one purchase of one variant, and no
//! buyer holds more than the item's limit across them.

use super::reader::Reader;
use super::*;
use crate::sale_item::variants::{valid_variant_name, Variant, MAX_VARIANTS};
use crate::sale_item::SaleItem;
use std::collections::{HashMap, HashSet};

pub const VARIANTS_TAG: u8 = b'V';

/// True for the first chunk of an item with variants.
pub fn is_variants_header(chunk: &[u8]) -> bool {
    chunk.first() == Some(&VARIANTS_TAG)
}

/// What a variants header announces.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VariantsHeader {
    pub limit: i64,
    pub names: Vec<Box<[u8]>>,
}

impl SaleItem {
    /// The variants header chunk of an item with variants.
    pub(in crate::sale_item) fn encode_variants_header(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(16 + 16 * self.variants().len());
        out.push(VARIANTS_TAG);
        out.push(FORMAT_VERSION);
        out.extend_from_slice(&self.limit.to_le_bytes());
        out.push(self.variants().len() as u8);
        for variant in self.variants() {
            out.push(variant.name.len() as u8);
            out.extend_from_slice(&variant.name);
        }
        out
    }
}

impl VariantsHeader {
    pub fn decode(chunk: &[u8]) -> Result<VariantsHeader, DecodeError> {
        let mut input = Reader(chunk);
        if input.u8()? != VARIANTS_TAG {
            return Err(DecodeError("not a variants header"));
        }
        if input.u8()? > FORMAT_VERSION {
            return Err(DecodeError("written by a newer version of the module"));
        }
        let limit = input.non_negative()?;
        let count = usize::from(input.u8()?);
        if count == 0 || count > MAX_VARIANTS {
            return Err(DecodeError("bad variant count"));
        }
        let mut names: Vec<Box<[u8]>> = Vec::with_capacity(count);
        for _ in 0..count {
            let len = usize::from(input.u8()?);
            let name = input.take(len)?;
            if !valid_variant_name(name) {
                return Err(DecodeError("bad variant name"));
            }
            if names.iter().any(|known| **known == *name) {
                return Err(DecodeError("repeated variant name"));
            }
            names.push(name.into());
        }
        input.finish()?;
        Ok(VariantsHeader { limit, names })
    }

    /// The item once its variants are all loaded, each checked already:
    /// checked against each other.
    pub fn assemble(self, items: Vec<SaleItem>) -> Result<SaleItem, DecodeError> {
        if items.len() != self.names.len() {
            return Err(DecodeError("variant count differs from header"));
        }
        let variants = self
            .names
            .into_iter()
            .zip(items)
            .map(|(name, item)| Variant {
                name,
                item: Box::new(item),
            })
            .collect();
        let mut item = SaleItem::new(crate::sale_item::Stock::Limited(0), self.limit);
        item.set_variants(variants);
        item.check_variants()?;
        if let Some(first) = item.variants().first() {
            let window = first.item.window();
            let stream = first.item.order_stream().cloned();
            item.set_window(window);
            item.set_order_stream(stream);
        }
        Ok(item)
    }
}

impl SaleItem {
    /// The rules variants keep between them: the same window and order
    /// stream, no variants of their own, a request id and a transfer id in
    /// one variant at most, and no buyer over the item's limit across variants with units
    /// not in holds (a buyer's record keeps lapsed holds until the sweep
    /// releases them, as `check_bookkeeping` allows for one item).
    pub(super) fn check_variants(&self) -> Result<(), DecodeError> {
        let variants = self.variants();
        let Some(first) = variants.first() else {
            return Ok(());
        };
        let same_stream = |item: &SaleItem| match (item.order_stream(), first.item.order_stream()) {
            (None, None) => true,
            (Some(a), Some(b)) => a.stream == b.stream && a.maxlen == b.maxlen,
            _ => false,
        };
        for variant in variants {
            if variant.item.has_variants() {
                return Err(DecodeError("variant with variants"));
            }
            if variant.item.window() != first.item.window() || !same_stream(&variant.item) {
                return Err(DecodeError("variants with different settings"));
            }
        }
        let mut request_ids: HashSet<&[u8]> = HashSet::new();
        for variant in variants {
            for (id, _) in variant.item.requests() {
                if !request_ids.insert(id) {
                    return Err(DecodeError("request id in two variants"));
                }
            }
        }
        // A transfer id names one transfer of one variant, as TAKE and
        // ADD ... ID keep it.
        let mut transfer_ids: HashSet<&[u8]> = HashSet::new();
        for variant in variants {
            for (id, _) in variant.item.transfers().into_iter().flat_map(|t| t.iter()) {
                if !transfer_ids.insert(id) {
                    return Err(DecodeError("transfer id in two variants"));
                }
            }
        }
        if self.limit > 0 {
            let mut units: HashMap<&[u8], i64> = HashMap::new();
            for variant in variants {
                for (user, outside_holds) in variant.item.ledger.units_outside_holds() {
                    let total = units.entry(user).or_default();
                    *total = total.saturating_add(outside_holds);
                    if *total > self.limit {
                        return Err(DecodeError(
                            "buyer holds more than the limit across variants",
                        ));
                    }
                }
            }
        }
        Ok(())
    }
}
