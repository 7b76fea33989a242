//! A cursor over an item's ledger, as `HSCAN` has over a hash: each call
//! reads a bounded number of records, and a full scan returns every record
//! that existed when it started.
//!
//! The arena only grows, and a record never moves once written, so a
//! position in it stays where it was while the item changes: a walk in
//! arena order from the position the previous call stopped at sees every
//! record once, and records written meanwhile at the end. The cursor is
//! that position with a fingerprint of the record there, so that a cursor
//! that does not point at a record of this item (one made up, or kept
//! across a restart, after which the records of a loaded item sit
//! elsewhere) is refused rather than read from the middle of a record.
//! The fingerprint is public knowledge, so a client could compute one for
//! a position inside an id it chose; the position must therefore also be
//! where the item's index finds the record named there.

use super::arena::{leading_id, ArenaWalk, RecordKind, REQUEST_MARK};
use super::{Ledger, Lookup};

/// Where a scan goes on: 0 starts one, and a reply of 0 ends it.
pub type Cursor = u64;

/// A cursor that points at no record of the item.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BadCursor;

/// A record a scan found, by its arena handle.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Scanned {
    Buyer(u32),
    Request(u32),
}

/// A fixed hash (FNV-1a) of the id at the start of a record and its kind,
/// in 31 bits with the low bit set: never 0, so no cursor but the first
/// is 0. Fixed, not seeded: a scan may go on at another connection.
fn fingerprint(record: &[u8]) -> u64 {
    let mut hash: u32 = 0x811c_9dc5;
    for byte in record.first().into_iter().chain(leading_id(record)) {
        hash = (hash ^ u32::from(*byte)).wrapping_mul(0x0100_0193);
    }
    u64::from(hash >> 1 | 1)
}

impl Ledger {
    /// Up to `count` records from `cursor` on, in the order written, and
    /// the cursor of the next call (0: none is left).
    pub fn scan(&self, cursor: Cursor, count: usize) -> Result<(Vec<Scanned>, Cursor), BadCursor> {
        let (number, position) = if cursor == 0 {
            (0, 0)
        } else {
            let handle = cursor as u32;
            let (number, position) = (handle as usize >> 16, handle as usize & 0xffff);
            let record = self
                .arena
                .chunks
                .get(number)
                .and_then(|chunk| chunk.get(position..))
                .filter(|record| !record.is_empty())
                .ok_or(BadCursor)?;
            if cursor >> 32 != fingerprint(record) || !self.indexes_record_at(handle, record) {
                return Err(BadCursor);
            }
            (number, position)
        };
        let mut walk = ArenaWalk {
            chunks: &self.arena.chunks,
            number,
            position,
        };
        let found: Vec<Scanned> = walk
            .by_ref()
            .take(count)
            .map(|(handle, kind)| match kind {
                RecordKind::Buyer => Scanned::Buyer(handle),
                RecordKind::Request => Scanned::Request(handle),
            })
            .collect();
        let next = match walk.next() {
            Some((handle, _)) => fingerprint(self.arena.record(handle)) << 32 | u64::from(handle),
            None => 0,
        };
        Ok((found, next))
    }

    /// Whether `record`, read at `handle`, is a record of this ledger and
    /// not bytes inside one: its id, looked up in the index of its kind,
    /// leads back to `handle`. (Records never leave the index.)
    fn indexes_record_at(&self, handle: u32, record: &[u8]) -> bool {
        let id = leading_id(record);
        // Ids are 1 to 128 bytes: empty means the record runs past its chunk.
        if id.is_empty() {
            return false;
        }
        if record.first().is_some_and(|byte| byte & REQUEST_MARK != 0) {
            matches!(self.find_request(id), Lookup::Found(found) if found == handle)
        } else {
            matches!(self.find_buyer(id), Lookup::Found(buyer) if buyer.handle() == handle)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sale_item::ledger::arena::length_byte;
    use crate::sale_item::ledger::{NewRequest, RequestState};
    use std::collections::BTreeSet;

    fn ledger_of(buyers: usize) -> Ledger {
        let mut ledger = Ledger::default();
        for n in 0..buyers {
            let user = format!("user:{n}");
            let hash = ledger.hash_id(user.as_bytes());
            let buyer = ledger.add_buyer(hash, user.as_bytes(), 1).unwrap();
            let id = format!("order:{n}");
            let hash = ledger.hash_id(id.as_bytes());
            let request = NewRequest {
                qty: 1,
                reply: 0,
                state: RequestState::Purchased,
                deadline: 0,
            };
            ledger
                .add_request(hash, id.as_bytes(), &buyer, request)
                .unwrap();
        }
        ledger
    }

    fn scan_all(ledger: &Ledger, count: usize) -> Vec<Scanned> {
        let (mut all, mut cursor) = (Vec::new(), 0);
        loop {
            let (found, next) = ledger.scan(cursor, count).unwrap();
            assert!(found.len() <= count);
            all.extend(found);
            if next == 0 {
                return all;
            }
            cursor = next;
        }
    }

    #[test]
    fn a_full_scan_sees_every_record_once() {
        let ledger = ledger_of(5_000);
        for count in [1, 7, 1_000, 20_000] {
            let all = scan_all(&ledger, count);
            assert_eq!(all.len(), 10_000);
            assert_eq!(all.iter().collect::<BTreeSet<_>>().len(), 10_000);
        }
        assert_eq!(Ledger::default().scan(0, 10), Ok((Vec::new(), 0)));
    }

    #[test]
    fn records_written_during_a_scan_come_after_those_before_it() {
        let mut ledger = ledger_of(300);
        let (first, cursor) = ledger.scan(0, 100).unwrap();
        for n in 300..400 {
            let user = format!("user:{n}");
            let hash = ledger.hash_id(user.as_bytes());
            ledger.add_buyer(hash, user.as_bytes(), 1).unwrap();
        }
        let mut seen = first;
        let mut cursor = cursor;
        while cursor != 0 {
            let (found, next) = ledger.scan(cursor, 100).unwrap();
            seen.extend(found);
            cursor = next;
        }
        assert_eq!(seen.len(), 700);
    }

    #[test]
    fn a_cursor_that_points_at_no_record_is_refused() {
        let ledger = ledger_of(100);
        let (_, cursor) = ledger.scan(0, 3).unwrap();
        assert!(ledger.scan(cursor, 3).is_ok());
        // Into the middle of the record, past the end, or with another
        // record's fingerprint.
        assert_eq!(ledger.scan(cursor + 1, 3), Err(BadCursor));
        assert_eq!(ledger.scan(u64::from(u32::MAX), 3), Err(BadCursor));
        assert_eq!(ledger.scan(cursor ^ (2 << 32), 3), Err(BadCursor));
        assert_eq!(Ledger::default().scan(cursor, 3), Err(BadCursor));
    }

    /// A client names a buyer so that bytes inside the name read as a
    /// record of its own, and computes the public fingerprint of that
    /// position: the cursor is still refused.
    #[test]
    fn a_cursor_forged_inside_an_id_is_refused() {
        let mut ledger = ledger_of(3);
        for (inner, request) in [(b"evil".as_slice(), false), (b"evil", true)] {
            let mut name = b"Z".to_vec();
            name.push(length_byte(inner, request));
            name.extend_from_slice(inner);
            name.extend_from_slice(&1_000i64.to_le_bytes());
            let hash = ledger.hash_id(&name);
            let buyer = ledger.add_buyer(hash, &name, 1).unwrap();
            // Past the record's length byte and the name's first byte.
            let inside = buyer.handle() + 2;
            let record = ledger.arena.record(inside);
            let forged = fingerprint(record) << 32 | u64::from(inside);
            assert_eq!(ledger.scan(forged, 1), Err(BadCursor));
            let genuine =
                fingerprint(ledger.arena.record(buyer.handle())) << 32 | u64::from(buyer.handle());
            assert!(ledger.scan(genuine, 1).is_ok());
        }
    }
}
