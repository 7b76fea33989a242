//! Releases lapsed holds of items nobody writes to.
//!
//! Writes release an item's lapsed holds first, and reads report them as
//! released already, so correctness never waits for this sweep. It exists
//! so that the release itself (its replication, its `seckill.expire` event,
//! and the stock a replica reports) follows a deadline within about a
//! second even on an item nobody touches.
//!
//! Items with pending holds are kept in a schedule by deadline. A module
//! timer on the master takes the due ones, a bounded number of releases per
//! tick, and comes back at once while work remains.

use crate::args::Arg;
use crate::commands::{announce_release, RELEASES_PER_STEP};
use crate::item_key::{now_ms, ItemKey, OutboxWriter};
use redis_module::{raw, Context};
use std::collections::BTreeSet;
use std::os::raw::{c_int, c_void};
use std::sync::Mutex;

/// How often the sweep looks at the schedule when it has nothing to do.
const PERIOD_MS: i64 = 100;

/// (deadline in Unix ms, database, key name). A key may appear several
/// times; a stale entry only costs a look at the key.
static SCHEDULE: Mutex<BTreeSet<(i64, c_int, Vec<u8>)>> = Mutex::new(BTreeSet::new());

/// Puts the item at `key`, in the context's selected database, on the
/// schedule for `deadline`.
pub fn schedule(ctx: &Context, key: &[u8], deadline: i64) {
    // SAFETY: the context is valid for the duration of the call.
    let db = redis_api!(RedisModule_GetSelectedDb).map_or(0, |f| unsafe { f(ctx.get_raw()) });
    schedule_in(db, key, deadline);
}

/// Puts the item at `key` in database `db` on the schedule for `deadline`.
pub fn schedule_in(db: c_int, key: &[u8], deadline: i64) {
    if let Ok(mut schedule) = SCHEDULE.lock() {
        schedule.insert((deadline, db, key.to_vec()));
    }
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
    arm(ctx, if more { 1 } else { PERIOD_MS });
}

/// A replica waits for its master's releases; a loading server has none to
/// make yet.
fn decides_releases(ctx: &Context) -> bool {
    let waits = raw::REDISMODULE_CTX_FLAGS_SLAVE | raw::REDISMODULE_CTX_FLAGS_LOADING;
    // SAFETY: the context is valid for the duration of the call.
    redis_api!(RedisModule_GetContextFlags)
        .is_some_and(|flags| unsafe { flags(ctx.get_raw()) } as u32 & waits == 0)
}

fn next_due(now: i64) -> Option<(c_int, Vec<u8>)> {
    let mut schedule = SCHEDULE.lock().ok()?;
    let first = schedule.first()?;
    if first.0 > now {
        return None;
    }
    schedule.pop_first().map(|(_, db, key)| (db, key))
}

/// Releases due holds up to the step's budget; true if some may remain.
fn sweep(ctx: &Context) -> bool {
    if !decides_releases(ctx) {
        return false;
    }
    let (Some(select_db), Some(create_string), Some(free_string)) = (
        redis_api!(RedisModule_SelectDb),
        redis_api!(RedisModule_CreateString),
        redis_api!(RedisModule_FreeString),
    ) else {
        return false;
    };
    let now = now_ms();
    let mut budget = RELEASES_PER_STEP;
    while budget > 0 {
        let Some((db, key)) = next_due(now) else {
            return false;
        };
        // SAFETY: the timer context may select any database; the string is
        // created from a live buffer and freed below.
        let name = unsafe {
            select_db(ctx.get_raw(), db);
            create_string(ctx.get_raw(), key.as_ptr().cast(), key.len())
        };
        let name = Arg::from_ptr(name);
        {
            let mut item_key = ItemKey::open_read(ctx, &name);
            if let Ok(Some(item)) = item_key.item_mut() {
                // A stream key of another type loses the events, not the
                // releases: the holds must lapse either way.
                let mut outbox = item
                    .outbox()
                    .and_then(|outbox| OutboxWriter::open(ctx, outbox).ok());
                let released = item.release_due(now, budget);
                budget -= released.len();
                announce_release(ctx, &name, &released, item.remaining(), outbox.as_mut());
                if let Some(deadline) = item.next_deadline() {
                    schedule(ctx, &key, deadline);
                }
            }
        }
        // SAFETY: created above, not used after this.
        unsafe { free_string(ctx.get_raw(), name.as_ptr()) };
    }
    true
}
