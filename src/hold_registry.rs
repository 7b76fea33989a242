//! Which items have pending holds, where they live, and when each is next
//! due: the sweep's registry.
//!
//! One entry per item, not per hold: the item's database and key, and a
//! moment at or before its earliest deadline. Entries are keyed by the
//! item's address, so they are owned by the items: an entry goes when its
//! item is freed (DEL, UNLINK, FLUSHALL, expiry, a replaced value, on
//! whatever thread frees it), and follows it when it is renamed, moved,
//! copied or swapped to another database. Nothing here touches a key.

use crate::sale_item::SaleItem;
use foldhash::fast::FixedState;
use std::collections::{BTreeSet, HashMap};
use std::os::raw::c_int;
use std::sync::{LazyLock, Mutex};

/// Where an item lives, and when it is next due.
struct Home {
    db: c_int,
    key: Box<[u8]>,
    due: i64,
}

/// Item addresses hashed with a fixed seed: the server picks them, not a
/// client, and every write of an item with lapsed holds looks its address
/// up (SipHash, the standard map's, cost such a write a tenth of its time).
type ByAddress<V> = HashMap<usize, V, FixedState>;

#[derive(Default)]
struct Registry {
    /// By item address.
    homes: ByAddress<Home>,
    /// (due, item address), earliest first.
    due: BTreeSet<(i64, usize)>,
    /// Items that were not at their key when due, by address, with the
    /// number of the search pass during which they were found missing:
    /// renamed or moved where no keyspace event told (Valkey), and looked
    /// for by a scan of the keyspace.
    lost: ByAddress<u64>,
    /// The search pass under way.
    search_pass: u64,
}

static REGISTRY: LazyLock<Mutex<Registry>> = LazyLock::new(Mutex::default);

fn registry() -> std::sync::MutexGuard<'static, Registry> {
    // A panic while holding the lock cannot leave the maps half-changed in
    // a way that matters here: carry on with what is there.
    REGISTRY
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn address(item: &SaleItem) -> usize {
    item as *const SaleItem as usize
}

/// Records that `item`, at `key` in database `db`, has a hold due at
/// `deadline`. Keeps the earlier of this and any moment known already, and
/// takes `db` and `key` as its home from now on.
pub fn watch(item: &SaleItem, db: c_int, key: &[u8], deadline: i64) {
    let id = address(item);
    let mut registry = registry();
    let registry = &mut *registry;
    // A write found it before the search did.
    if !registry.lost.is_empty() {
        registry.lost.remove(&id);
    }
    match registry.homes.get_mut(&id) {
        Some(home) => {
            if home.db != db || *home.key != *key {
                home.db = db;
                home.key = key.into();
            }
            if deadline < home.due {
                registry.due.remove(&(home.due, id));
                registry.due.insert((deadline, id));
                home.due = deadline;
            }
        }
        None => {
            let home = Home {
                db,
                key: key.into(),
                due: deadline,
            };
            registry.homes.insert(id, home);
            registry.due.insert((deadline, id));
        }
    }
}

/// Drops the entry of an item being freed. Runs on whatever thread frees
/// the value (UNLINK and FLUSHALL ASYNC free in the background).
pub fn forget(item: &SaleItem) {
    for part in item.variants() {
        forget_one(&part.item);
    }
    forget_one(item);
}

/// Registers every part of `item` with pending holds (the item itself, or
/// each of its variants), due at `due` of its earliest deadline.
pub fn watch_parts(item: &SaleItem, db: c_int, key: &[u8], due: impl Fn(i64) -> i64) {
    for part in item.parts() {
        if let Some(deadline) = part.next_deadline() {
            watch(part, db, key, due(deadline));
        }
    }
}

fn forget_one(item: &SaleItem) {
    let id = address(item);
    let mut registry = registry();
    registry.lost.remove(&id);
    if let Some(home) = registry.homes.remove(&id) {
        registry.due.remove(&(home.due, id));
        // A table sized for a past peak would hold its memory for good.
        let (len, capacity) = (registry.homes.len(), registry.homes.capacity());
        if capacity > 64 && len < capacity / 4 {
            registry.homes.shrink_to(len * 2);
        }
    }
}

/// Notes that the item registered as `id` was not at its key when due:
/// renamed or moved with no keyspace event to tell. Its free forgets it;
/// until then a search of the keyspace looks for it.
pub fn mark_lost(id: usize) {
    let mut registry = registry();
    let pass = registry.search_pass;
    registry.lost.insert(id, pass);
}

/// True if some item is looked for.
pub fn any_lost() -> bool {
    !registry().lost.is_empty()
}

/// Registers `item`, found at `key` of database `db` by the search, if it
/// is one looked for; true if it was.
pub fn found(item: &SaleItem, db: c_int, key: &[u8]) -> bool {
    let mut any = false;
    for part in item.parts() {
        if registry().lost.remove(&address(part)).is_none() {
            continue;
        }
        any = true;
        if let Some(deadline) = part.next_deadline() {
            watch(part, db, key, deadline);
        }
    }
    any
}

/// Ends a search pass over every database. An item missing since before
/// the pass began was not in the keyspace for the whole pass: it was freed
/// between being found missing and being noted (UNLINK frees in the
/// background), and is looked for no longer. One noted during the pass
/// may have moved behind the scan, and gets the next pass.
pub fn end_search_pass() {
    let mut registry = registry();
    let pass = registry.search_pass;
    registry.lost.retain(|_, noted| *noted == pass);
    registry.search_pass = pass.wrapping_add(1);
}

/// Follows SWAPDB: items of either database now live in the other.
pub fn swap_dbs(first: c_int, second: c_int) {
    for home in registry().homes.values_mut() {
        if home.db == first {
            home.db = second;
        } else if home.db == second {
            home.db = first;
        }
    }
}

/// Makes every item whose key `selects` due at `now` at the latest: for
/// items whose holds the sweep put off while another node decided them
/// (a slot being imported), once this node owns them.
pub fn make_due(now: i64, selects: impl Fn(&[u8]) -> bool) {
    let mut registry = registry();
    let registry = &mut *registry;
    for (id, home) in registry.homes.iter_mut() {
        if home.due > now && selects(&home.key) {
            registry.due.remove(&(home.due, *id));
            registry.due.insert((now, *id));
            home.due = now;
        }
    }
}

/// Takes the earliest item due at `now` off the registry: its address
/// and where it lived.
pub fn next_due(now: i64) -> Option<(usize, c_int, Box<[u8]>)> {
    let mut registry = registry();
    let &(due, id) = registry.due.first()?;
    if due > now {
        return None;
    }
    registry.due.remove(&(due, id));
    let home = registry.homes.remove(&id)?;
    Some((id, home.db, home.key))
}

/// Items with pending holds that the sweep watches. `None` if the
/// registry is busy and `wait` is false: a crash report must not wait for
/// a lock the crashing thread may hold.
pub fn items_watched(wait: bool) -> Option<usize> {
    let watched = |registry: &Registry| registry.homes.len() + registry.lost.len();
    if wait {
        return Some(watched(&registry()));
    }
    match REGISTRY.try_lock() {
        Ok(registry) => Some(watched(&registry)),
        Err(std::sync::TryLockError::Poisoned(poisoned)) => Some(watched(&poisoned.into_inner())),
        Err(std::sync::TryLockError::WouldBlock) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn is_lost(id: usize) -> bool {
        registry().lost.contains_key(&id)
    }

    #[test]
    fn an_item_never_found_is_looked_for_one_whole_pass_then_dropped() {
        // Addresses no item has: the registry never reads through them.
        let (early, late) = (usize::MAX - 1, usize::MAX - 2);
        end_search_pass();
        mark_lost(early);
        // Noted during the pass under way: kept past its end, since it may
        // have moved behind the scan.
        end_search_pass();
        assert!(is_lost(early));
        mark_lost(late);
        // A whole pass went by since `early` was noted.
        end_search_pass();
        assert!(!is_lost(early));
        assert!(is_lost(late));
        end_search_pass();
        assert!(!is_lost(late));
    }
}
