//! Releases lapsed holds of items nobody writes to.
//!
//! Reads report lapsed holds as released and writes judge them so, so
//! correctness never waits for this sweep. It exists so that the release
//! itself (its replication, its `seckill.expire` event, its `expire` order
//! event) follows a deadline within a tick even on an item nobody touches.
//!
//! It takes the items due from `hold_registry`, and keeps that registry
//! following items that keyspace events move. Where no event tells of a
//! move (Valkey, see `server_events`), an item due but not at its key is
//! looked for by a scan of the keyspace, a bucket at a time. Each timer
//! step stops after a fixed time, whatever it found.

use crate::hold_registry::{any_lost, end_search_pass, found, mark_lost, next_due, swap_dbs};
use crate::server::context::{self, call_later, in_db, DbScan};
use crate::server::{now_ms, selected_db, Arg, ItemKey};
use crate::stats;
use redis_module::{raw, Context};
use std::cell::RefCell;
use std::os::raw::c_int;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How often the sweep looks at the registry when it has nothing to do
/// (`seckill.sweep-interval-ms`).
pub static INTERVAL_MS: AtomicI64 = AtomicI64::new(DEFAULT_INTERVAL_MS);
pub const DEFAULT_INTERVAL_MS: i64 = 100;
/// How long one timer step may work before it lets clients in again
/// (`seckill.sweep-step-budget-us`).
pub static STEP_BUDGET_US: AtomicI64 = AtomicI64::new(DEFAULT_STEP_BUDGET_US);
pub const DEFAULT_STEP_BUDGET_US: i64 = 1_000;

fn interval_ms() -> i64 {
    INTERVAL_MS.load(Ordering::Relaxed)
}

fn step_budget() -> Duration {
    Duration::from_micros(STEP_BUDGET_US.load(Ordering::Relaxed).max(1) as u64)
}
/// Holds one pipeline call releases, between two looks at the clock: each
/// costs a few microseconds (its order event, its replication), so the
/// step overruns its budget by little.
const RELEASES_PER_CALL: usize = 32;
/// When the order stream refuses a release, how long until it is retried.
const RETRY_MS: i64 = 1_000;

/// Keys that a keyspace event said now hold a moved or new value, as
/// (database, key): looked at by the next timer step, outside the command
/// that moved them.
static MOVED: Mutex<Vec<(c_int, Vec<u8>)>> = Mutex::new(Vec::new());

fn moved() -> std::sync::MutexGuard<'static, Vec<(c_int, Vec<u8>)>> {
    MOVED
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Keyspace events that move an item to another name or database: its
/// registry entry follows at the next timer step. The callback only notes
/// the key: writing keys inside another command's notification is what
/// Redis warns modules against. (A copy registers itself, in `copy2`.)
/// RESTORE's event is the exception: its item must be marked before any
/// later command can use it, and marking it writes nothing to the server.
pub fn on_keyspace_event(ctx: &Context, event: &[u8], name: &Arg) {
    if event == b"restore" {
        // The item just restored names an order stream nobody vouched for.
        // `rdb_load` marks it so already, except when the AOF replays a
        // RESTORE, which it cannot tell from loading a snapshot.
        let mut item_key = ItemKey::open_read(ctx, name);
        if let Ok(Some(item)) = item_key.item_mut() {
            item.distrust_order_stream();
        }
    }
    if matches!(event, b"rename_to" | b"move_to") {
        let db = selected_db(ctx);
        moved().push((db, name.as_bytes().to_vec()));
    }
}

/// Registers the items the keyspace events since the last step moved.
fn follow_moved_items(ctx: &Context) {
    let moved = std::mem::take(&mut *moved());
    for (db, key) in moved {
        in_db(ctx, db, &key, |name| {
            let item_key = ItemKey::open_read(ctx, name);
            if let Ok(Some(item)) = item_key.item() {
                crate::hold_registry::watch_parts(item, db, name.as_bytes(), |deadline| deadline);
            }
        });
    }
}

/// SWAPDB, as a server event.
pub fn on_swap_db(first: c_int, second: c_int) {
    swap_dbs(first, second);
    // Keys noted by an event earlier in the same command batch live in
    // the other database now, too.
    for (db, _) in moved().iter_mut() {
        if *db == first {
            *db = second;
        } else if *db == second {
            *db = first;
        }
    }
}

/// Starts the sweep; called once when the module loads.
pub fn start(ctx: &Context) {
    call_later(ctx, interval_ms(), tick);
}

fn tick(ctx: &Context) {
    let more = crate::order_stream::in_one_step(|| sweep(ctx));
    call_later(ctx, if more { 0 } else { interval_ms() }, tick);
}

/// A replica waits for its master's releases; a loading server has none to
/// make yet; and while clients are paused (`CLIENT PAUSE`, `FAILOVER`, a
/// cluster manual failover) nothing may be replicated, so releases wait, as
/// Redis's own key expiry does.
fn decides_releases(ctx: &Context) -> bool {
    let waits = raw::REDISMODULE_CTX_FLAGS_SLAVE | raw::REDISMODULE_CTX_FLAGS_LOADING;
    let decides = context::flags(ctx).is_some_and(|flags| flags & waits == 0);
    let paused = context::avoid_replica_traffic();
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
    let budget = step_budget();
    let now = now_ms();
    crate::slot_migration::forget_left(now);
    let mut swept = false;
    let mut more = true;
    while started.elapsed() < budget {
        let Some((id, db, key)) = next_due(now) else {
            more = false;
            break;
        };
        swept = true;
        in_db(ctx, db, &key, |name| {
            if crate::slot_migration::owned_here(name.as_bytes(), now) {
                sweep_item(ctx, name, id, now, started, budget)
            } else {
                // A slot being imported: its source releases these holds
                // and streams the releases here. Looked at again later, and
                // at once when the import completes.
                retry_later(ctx, name, now.saturating_add(RETRY_MS));
            }
        });
    }
    search_lost_items(ctx, started, budget);
    if swept {
        stats::SWEEP_RUNS.bump();
        let took = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
        stats::SWEEP_LONGEST_STEP_US.raise_to(took);
    }
    more
}

/// Releases the due holds of the item at `name`, if it is still the item
/// registered as `id`, and puts it back on the registry for what remains.
fn sweep_item(ctx: &Context, name: &Arg, id: usize, now: i64, started: Instant, budget: Duration) {
    loop {
        let outcome = crate::write::sweep_step(ctx, name, id, now, RELEASES_PER_CALL);
        match outcome {
            crate::write::Swept::Gone => {
                mark_lost(id);
                return;
            }
            crate::write::Swept::Refused => {
                // Not at its deadline, which is past: that would make it
                // due again at once, and the step would spin on it.
                retry_later(ctx, name, now.saturating_add(RETRY_MS));
                return;
            }
            crate::write::Swept::Released { more_due: false } => {
                rewatch(ctx, name, i64::MAX);
                return;
            }
            crate::write::Swept::Released { more_due: true } => {
                if started.elapsed() >= budget {
                    rewatch(ctx, name, now);
                    return;
                }
            }
        }
    }
}

thread_local! {
    /// The search for lost items: the database being scanned, and where.
    /// Timers run on the main thread alone.
    static SEARCH: RefCell<Option<DbScan>> = const { RefCell::new(None) };
}

/// Scans the keyspace for items the registry lost, until the step's time
/// is up, and registers each where it is found. The scan pauses while
/// nothing is lost and goes on where it was.
fn search_lost_items(ctx: &Context, started: Instant, budget: Duration) {
    SEARCH.with_borrow_mut(|search| {
        while any_lost() && started.elapsed() < budget {
            if search.is_none() {
                *search = DbScan::new(0);
            }
            let Some(scan) = search.as_mut() else {
                return;
            };
            let db = scan.db();
            let more = scan.step(ctx, &mut |context, name| {
                let key = ItemKey::open_quietly(context, name);
                if let Ok(Some(item)) = key.item() {
                    found(item, db, name.as_bytes());
                }
            });
            if !more {
                let next = db + 1;
                if next >= crate::call::database_count(ctx) {
                    end_search_pass();
                    *search = None;
                } else {
                    *search = DbScan::new(next);
                }
            }
        }
    });
}

/// Registers the item at `name` again, due at `at`, if it still has holds.
fn retry_later(ctx: &Context, name: &Arg, at: i64) {
    let item_key = ItemKey::open_read(ctx, name);
    if let Ok(Some(item)) = item_key.item() {
        crate::hold_registry::watch_parts(item, selected_db(ctx), name.as_bytes(), |_| at);
    }
}

/// Registers the item at `name` again, due at its next deadline or at
/// `retry`, whichever comes first.
fn rewatch(ctx: &Context, name: &Arg, retry: i64) {
    let item_key = ItemKey::open_read(ctx, name);
    if let Ok(Some(item)) = item_key.item() {
        crate::hold_registry::watch_parts(item, selected_db(ctx), name.as_bytes(), |deadline| {
            deadline.min(retry)
        });
    }
}
