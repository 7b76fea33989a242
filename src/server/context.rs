//! What the server tells of a context and of itself: context flags, the
//! clock, the selected database, the module's options and its timer.

use super::{Arg, OwnedString};
use redis_module::{raw, Context};
use std::os::raw::{c_int, c_void};

/// The `REDISMODULE_CTX_FLAGS_*` of a context, `None` if the server cannot
/// tell them.
///
/// # Safety
/// `ctx` must be a live context of the server (NULL is allowed).
pub(super) unsafe fn raw_flags(ctx: *mut raw::RedisModuleCtx) -> Option<u32> {
    let flags = redis_api!(RedisModule_GetContextFlags)?;
    // SAFETY: as the caller promises.
    Some(unsafe { flags(ctx) } as u32)
}

/// The `REDISMODULE_CTX_FLAGS_*` of `ctx`: the server's role (master,
/// replica), whether it loads, runs a cluster, replays its master's stream.
/// `None` if the server cannot tell them.
pub fn flags(ctx: &Context) -> Option<u32> {
    // SAFETY: the context is valid for the duration of the call.
    unsafe { raw_flags(ctx.get_raw()) }
}

/// The id of the client running `ctx`'s command; 0 for none (a timer, an
/// event). Ids are never reused while the server runs.
pub fn client_id(ctx: &Context) -> u64 {
    // SAFETY: the context is valid for the duration of the call.
    redis_api!(RedisModule_GetClientId).map_or(0, |id| unsafe { id(ctx.get_raw()) })
}

/// Every context flag this server knows, `None` if it cannot tell.
pub fn flags_all() -> Option<u32> {
    let flags_all = redis_api!(RedisModule_GetContextFlagsAll)?;
    // SAFETY: a plain query of the server's capabilities.
    Some(unsafe { flags_all() } as u32)
}

/// Every module option this server knows, `None` if it cannot tell.
pub fn module_options_all() -> Option<c_int> {
    let options_all = redis_api!(RedisModule_GetModuleOptionsAll)?;
    // SAFETY: a plain query of the server's capabilities.
    Some(unsafe { options_all() })
}

/// True if the server takes module options.
pub fn can_set_module_options() -> bool {
    redis_api!(RedisModule_SetModuleOptions).is_some()
}

/// Sets the module's options (`REDISMODULE_OPTIONS_*`), from its init.
pub fn set_module_options(ctx: &Context, options: c_int) {
    if let Some(set_options) = redis_api!(RedisModule_SetModuleOptions) {
        // SAFETY: the module's context; the server keeps the flags only.
        unsafe { set_options(ctx.get_raw(), options) };
    }
}

/// Now, on the server's clock, in Unix milliseconds.
pub fn now_ms() -> i64 {
    // SAFETY: RedisModule_Milliseconds takes no arguments.
    redis_api!(RedisModule_Milliseconds).map_or(0, |f| unsafe { f() })
}

/// True while clients are paused (`CLIENT PAUSE`, `FAILOVER`, a cluster
/// manual failover): nothing may be replicated then.
pub fn avoid_replica_traffic() -> bool {
    // SAFETY: takes no arguments.
    redis_api!(RedisModule_AvoidReplicaTraffic).is_some_and(|f| unsafe { f() } != 0)
}

/// The database the context has selected.
pub fn selected_db(ctx: &Context) -> c_int {
    // SAFETY: the context is valid for the duration of the call.
    redis_api!(RedisModule_GetSelectedDb).map_or(0, |f| unsafe { f(ctx.get_raw()) })
}

/// Selects database `db` in `ctx`; false if the server refused.
pub fn select_db(ctx: &Context, db: c_int) -> bool {
    redis_api!(RedisModule_SelectDb).is_some_and(|select_db| {
        // SAFETY: the context is valid for the call; the server checks `db`.
        unsafe { select_db(ctx.get_raw(), db) == raw::REDISMODULE_OK as c_int }
    })
}

/// Runs `visit` on the key `key` of database `db`, selected in `ctx`: for
/// contexts that outlive any one command (timers, server events), which
/// reach keys by a name they kept.
pub fn in_db(ctx: &Context, db: c_int, key: &[u8], visit: impl FnOnce(&Arg)) {
    let has_all = redis_api!(RedisModule_SelectDb).is_some()
        && redis_api!(RedisModule_CreateString).is_some()
        && redis_api!(RedisModule_FreeString).is_some();
    if !has_all {
        return;
    }
    // A timer or event context may select any database.
    select_db(ctx, db);
    if let Some(name) = OwnedString::new(ctx, key) {
        visit(name.as_arg());
    }
}

/// Calls `callback` in `delay_ms` milliseconds, once, with a context of
/// its own.
pub fn call_later(ctx: &Context, delay_ms: i64, callback: fn(&Context)) {
    if let Some(create_timer) = redis_api!(RedisModule_CreateTimer) {
        // The timer's data is the callback itself.
        let data = callback as *mut c_void;
        // SAFETY: `timer_fired` matches RedisModuleTimerProc and reads
        // `data` back as the function it is.
        unsafe { create_timer(ctx.get_raw(), delay_ms, Some(timer_fired), data) };
    }
}

extern "C" fn timer_fired(ctx: *mut raw::RedisModuleCtx, data: *mut c_void) {
    // SAFETY: `data` is the `fn(&Context)` that `call_later` passed.
    let callback = unsafe { std::mem::transmute::<*mut c_void, fn(&Context)>(data) };
    callback(&Context::new(ctx));
}

/// Runs `visit` on the name of every key of database `db`, selected in
/// `ctx`, with the context the scan gives; nothing if the database cannot
/// be selected.
pub fn scan_db(ctx: &Context, db: c_int, mut visit: impl FnMut(&Context, &Arg)) {
    if let Some(mut scan) = DbScan::new(db) {
        while scan.step(ctx, &mut visit) {}
    }
}

/// A scan of one database that may go on over many calls (timer steps):
/// each `step` visits the keys of one bucket of its table, and the server's
/// cursor returns every key that stays for the whole scan, as `SCAN` does.
pub struct DbScan {
    cursor: *mut raw::RedisModuleScanCursor,
    db: c_int,
}

impl DbScan {
    /// A scan of database `db` from its start; `None` if the server has no
    /// module scan.
    pub fn new(db: c_int) -> Option<Self> {
        let cursor_create = redis_api!(RedisModule_ScanCursorCreate)?;
        redis_api!(RedisModule_Scan)?;
        redis_api!(RedisModule_ScanCursorDestroy)?;
        redis_api!(RedisModule_SelectDb)?;
        // SAFETY: takes no arguments; `Drop` destroys the cursor.
        let cursor = unsafe { cursor_create() };
        (!cursor.is_null()).then_some(Self { cursor, db })
    }

    /// The database scanned.
    pub fn db(&self) -> c_int {
        self.db
    }

    /// Visits the next few keys with `visit`, in `ctx` with the database
    /// selected; false once the database is done (or cannot be selected).
    pub fn step(&mut self, ctx: &Context, visit: &mut dyn FnMut(&Context, &Arg)) -> bool {
        let Some(scan) = redis_api!(RedisModule_Scan) else {
            return false;
        };
        if !select_db(ctx, self.db) {
            return false;
        }
        let mut visit: &mut dyn FnMut(&Context, &Arg) = visit;
        let data: *mut &mut dyn FnMut(&Context, &Arg) = &mut visit;
        // SAFETY: the cursor is alive until `Drop`, and `visit` outlives
        // this call, which alone calls `scanned` with it.
        unsafe { scan(ctx.get_raw(), self.cursor, Some(scanned), data.cast()) != 0 }
    }
}

impl Drop for DbScan {
    fn drop(&mut self) {
        if let Some(cursor_destroy) = redis_api!(RedisModule_ScanCursorDestroy) {
            // SAFETY: the cursor `new` created, destroyed once.
            unsafe { cursor_destroy(self.cursor) };
        }
    }
}

/// # Safety
/// `data` is the visitor `scan_db` passed, and `key_name` a key name
/// alive for the call.
unsafe extern "C" fn scanned(
    ctx: *mut raw::RedisModuleCtx,
    key_name: *mut raw::RedisModuleString,
    _key: *mut raw::RedisModuleKey,
    data: *mut c_void,
) {
    // SAFETY: as the caller (the scan `scan_db` runs) promises.
    let visit = unsafe { &mut *data.cast::<&mut dyn FnMut(&Context, &Arg)>() };
    // SAFETY: the scanned key's name, alive for this callback.
    let name = unsafe { Arg::from_ptr(key_name) };
    visit(&Context::new(ctx), &name);
}
