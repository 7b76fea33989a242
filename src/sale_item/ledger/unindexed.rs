//! Records a loader writes to the arena first and indexes all at once at
//! the end, which costs a fraction of indexing them one by one.

use super::arena::Full;
use super::{leading_id, slot_handle, Buyer, Ledger, NewRequest};
use crate::sale_item::index::tag_of;

/// Records a loader has written to the arena and not indexed yet, as
/// (tag, handle) index slots: see `Ledger::index_unindexed`.
#[derive(Default)]
pub struct Unindexed {
    buyers: Vec<[u32; 2]>,
    requests: Vec<[u32; 2]>,
}

impl Unindexed {
    /// Room for `buyers` and `requests` records. The caller bounds what a
    /// header announces: the counts come from the input, which may lie.
    pub fn with_capacity(buyers: usize, requests: usize) -> Unindexed {
        Unindexed {
            buyers: Vec::with_capacity(buyers),
            requests: Vec::with_capacity(requests),
        }
    }

    pub fn request_count(&self) -> usize {
        self.requests.len()
    }

    pub fn is_empty(&self) -> bool {
        self.buyers.is_empty() && self.requests.is_empty()
    }
}

/// Which of a ledger's ids a load found twice.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Duplicate {
    Buyer,
    Request,
}

impl Ledger {
    /// `add_buyer` for a loader that indexes every record at the end
    /// (`index_unindexed`): the buyer is not found by name until then.
    pub fn add_buyer_unindexed(
        &mut self,
        hash: u64,
        user: &[u8],
        units: i64,
        unindexed: &mut Unindexed,
    ) -> Result<Buyer, Full> {
        let buyer = self.push_buyer(user, units)?;
        unindexed.buyers.push([tag_of(hash), buyer.name]);
        Ok(buyer)
    }

    /// `add_request` for a loader that indexes every record at the end
    /// (`index_unindexed`). Returns the record's handle.
    pub fn add_request_unindexed(
        &mut self,
        hash: u64,
        id: &[u8],
        buyer: &Buyer,
        request: NewRequest,
        unindexed: &mut Unindexed,
    ) -> Result<u32, Full> {
        let handle = self.push_request(id, buyer, request)?;
        unindexed.requests.push([tag_of(hash), handle]);
        Ok(handle)
    }

    /// Indexes the records added unindexed, all at once (see
    /// `Index::insert_all_new`), unless two buyers or two requests have the
    /// same id: then the indexes are left without them and the ledger is
    /// to be dropped.
    pub fn index_unindexed(&mut self, unindexed: Unindexed) -> Result<(), Duplicate> {
        let Unindexed { buyers, requests } = unindexed;
        let arena = &self.arena;
        let same = |one: &[u32; 2], other: &[u32; 2]| {
            leading_id(arena.record(slot_handle(one)))
                == leading_id(arena.record(slot_handle(other)))
        };
        if !self.buyers.insert_all_new(buyers, same) {
            return Err(Duplicate::Buyer);
        }
        if !self.requests.insert_all_new(requests, same) {
            return Err(Duplicate::Request);
        }
        Ok(())
    }
}
