//! Releases lapsed holds of items nobody writes to.
//!
//! Reads report lapsed holds as released and writes judge them so, so
//! correctness never waits for this sweep. It exists so that the release
//! itself (its replication, its `seckill.expire` event, its `expire` order
//! event) follows a deadline within a tick even on an item nobody touches.
//!
//! The registry knows, for each item with pending holds, where it lives
//! (database and key) and a moment at or before its earliest deadline: one
//! entry per item, not per hold. It is keyed by the item's address, so it
//! is owned by the items: an item's entry goes when the item is freed
//! (DEL, UNLINK, FLUSHALL, expiry, a replaced value), and follows it when
//! it is renamed, moved or swapped to another database. A copy registers
//! itself. Each timer step stops after a fixed time, whatever it found.

use crate::args::Arg;
use crate::sale_item::SaleItem;
use redis_module::{raw, Context};
use std::collections::{BTreeSet, HashMap};
use std::ffi::CStr;
use std::os::raw::{c_char, c_int, c_void};
use std::sync::{LazyLock, Mutex};
use std::time::{Duration, Instant};

/// How often the sweep looks at the registry when it has nothing to do.
const PERIOD_MS: i64 = 100;
/// How long one timer step may work before it lets clients in again.
const STEP_BUDGET: Duration = Duration::from_micros(1_000);
/// Holds one pipeline call releases, between two looks at the clock: each
/// costs a few microseconds (its order event, its replication), so the
/// step overruns its budget by little.
const RELEASES_PER_CALL: usize = 32;
/// When the order stream refuses a release, how long until it is retried.
const RETRY_MS: i64 = 1_000;

/// Where an item lives, and when it is next due.
struct Home {
    db: c_int,
    key: Box<[u8]>,
    due: i64,
}

#[derive(Default)]
struct Registry {
    /// By item address.
    homes: HashMap<usize, Home>,
    /// (due, item address), earliest first.
    due: BTreeSet<(i64, usize)>,
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

/// The database the context has selected.
pub fn selected_db(ctx: &Context) -> c_int {
    // SAFETY: the context is valid for the duration of the call.
    redis_api!(RedisModule_GetSelectedDb).map_or(0, |f| unsafe { f(ctx.get_raw()) })
}

/// Records that `item`, at `key` in database `db`, has a hold due at
/// `deadline`. Keeps the earlier of this and any moment known already, and
/// takes `db` and `key` as its home from now on.
pub fn watch(item: &SaleItem, db: c_int, key: &[u8], deadline: i64) {
    let id = address(item);
    let mut registry = registry();
    let registry = &mut *registry;
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
    let id = address(item);
    let mut registry = registry();
    if let Some(home) = registry.homes.remove(&id) {
        registry.due.remove(&(home.due, id));
        // A table sized for a past peak would hold its memory for good.
        let (len, capacity) = (registry.homes.len(), registry.homes.capacity());
        if capacity > 64 && len < capacity / 4 {
            registry.homes.shrink_to(len * 2);
        }
    }
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

/// Takes the earliest item due at `now` off the registry.
fn next_due(now: i64) -> Option<(usize, c_int, Box<[u8]>)> {
    let mut registry = registry();
    let &(due, id) = registry.due.first()?;
    if due > now {
        return None;
    }
    registry.due.remove(&(due, id));
    let home = registry.homes.remove(&id)?;
    Some((id, home.db, home.key))
}

/// Keys that a keyspace event said now hold a moved or new value, as
/// (database, key): looked at by the next timer step, outside the command
/// that moved them.
static MOVED: Mutex<Vec<(c_int, Vec<u8>)>> = Mutex::new(Vec::new());

/// Keyspace events that move an item to another name or database: its
/// registry entry follows at the next timer step. The callback only notes
/// the key: opening keys inside another command's notification is what
/// Redis warns modules against. (A copy registers itself, in `copy2`.)
pub extern "C" fn on_keyspace_event(
    ctx: *mut raw::RedisModuleCtx,
    _kind: c_int,
    event: *const c_char,
    key: *mut raw::RedisModuleString,
) -> c_int {
    // SAFETY: Redis passes a NUL-terminated event name.
    let event = unsafe { CStr::from_ptr(event) }.to_bytes();
    if matches!(event, b"rename_to" | b"move_to") {
        let context = Context::new(ctx);
        let name = Arg::from_ptr(key);
        let db = selected_db(&context);
        MOVED
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .push((db, name.as_bytes().to_vec()));
    }
    raw::REDISMODULE_OK as c_int
}

/// Registers the items the keyspace events since the last step moved.
fn follow_moved_items(ctx: &Context) {
    let moved = std::mem::take(
        &mut *MOVED
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()),
    );
    for (db, key) in moved {
        crate::item_key::in_db(ctx, db, &key, |name| {
            let item_key = crate::item_key::ItemKey::open_read(ctx, name);
            if let Ok(Some(item)) = item_key.item() {
                if let Some(deadline) = item.next_deadline() {
                    watch(item, db, name.as_bytes(), deadline);
                }
            }
        });
    }
}

/// SWAPDB, as a server event.
pub extern "C" fn on_swap_db(
    _ctx: *mut raw::RedisModuleCtx,
    _event: raw::RedisModuleEvent,
    _subevent: u64,
    data: *mut c_void,
) {
    if data.is_null() {
        return;
    }
    // SAFETY: Redis passes a RedisModuleSwapDbInfo with a SWAPDB event.
    let info = unsafe { &*data.cast::<raw::RedisModuleSwapDbInfo>() };
    swap_dbs(info.dbnum_first, info.dbnum_second);
}

/// Starts the sweep; called once when the module loads.
pub fn start(ctx: &Context) {
    arm(ctx.get_raw(), PERIOD_MS);
}

fn arm(ctx: *mut raw::RedisModuleCtx, delay_ms: i64) {
    if let Some(create_timer) = redis_api!(RedisModule_CreateTimer) {
        // SAFETY: `tick` matches RedisModuleTimerProc and takes no data.
        unsafe { create_timer(ctx, delay_ms, Some(tick), std::ptr::null_mut()) };
    }
}

extern "C" fn tick(ctx: *mut raw::RedisModuleCtx, _data: *mut c_void) {
    let context = Context::new(ctx);
    let more = sweep(&context);
    arm(ctx, if more { 0 } else { PERIOD_MS });
}

/// A replica waits for its master's releases; a loading server has none to
/// make yet; and while clients are paused (`CLIENT PAUSE`, `FAILOVER`, a
/// cluster manual failover) nothing may be replicated, so releases wait, as
/// Redis's own key expiry does.
fn decides_releases(ctx: &Context) -> bool {
    let waits = raw::REDISMODULE_CTX_FLAGS_SLAVE | raw::REDISMODULE_CTX_FLAGS_LOADING;
    // SAFETY: the context is valid for the duration of the call.
    let decides = redis_api!(RedisModule_GetContextFlags)
        .is_some_and(|flags| unsafe { flags(ctx.get_raw()) } as u32 & waits == 0);
    // SAFETY: takes no arguments.
    let paused = redis_api!(RedisModule_AvoidReplicaTraffic).is_some_and(|f| unsafe { f() } != 0);
    decides && !paused
}

/// Releases due holds until the step's time is up; true if some may remain.
fn sweep(ctx: &Context) -> bool {
    // Replicas follow moved items too, to sweep them once promoted.
    follow_moved_items(ctx);
    if !decides_releases(ctx) {
        return false;
    }
    let started = Instant::now();
    let now = crate::item_key::now_ms();
    while started.elapsed() < STEP_BUDGET {
        let Some((id, db, key)) = next_due(now) else {
            return false;
        };
        crate::item_key::in_db(ctx, db, &key, |name| {
            sweep_item(ctx, name, id, now, started)
        });
    }
    true
}

/// Releases the due holds of the item at `name`, if it is still the item
/// registered as `id`, and puts it back on the registry for what remains.
fn sweep_item(ctx: &Context, name: &Arg, id: usize, now: i64, started: Instant) {
    loop {
        let outcome = crate::write::sweep_step(ctx, name, id, now, RELEASES_PER_CALL);
        match outcome {
            crate::write::Swept::Gone => return,
            crate::write::Swept::Refused => {
                rewatch(ctx, name, now.saturating_add(RETRY_MS));
                return;
            }
            crate::write::Swept::Released { more_due: false } => {
                rewatch(ctx, name, i64::MAX);
                return;
            }
            crate::write::Swept::Released { more_due: true } => {
                if started.elapsed() >= STEP_BUDGET {
                    rewatch(ctx, name, now);
                    return;
                }
            }
        }
    }
}

/// Registers the item at `name` again, due at its next deadline or at
/// `retry`, whichever comes first.
fn rewatch(ctx: &Context, name: &Arg, retry: i64) {
    let item_key = crate::item_key::ItemKey::open_read(ctx, name);
    if let Ok(Some(item)) = item_key.item() {
        if let Some(deadline) = item.next_deadline() {
            watch(item, selected_db(ctx), name.as_bytes(), deadline.min(retry));
        }
    }
}
