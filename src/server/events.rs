//! The server's events the module follows, and the C callbacks that hand
//! them to the safe functions that act on them (`sweeper`, `commands`,
//! `server_events`, `slot_migration`).

use super::Arg;
use crate::slot_migration::{JobName, SlotRanges};
use redis_module::{raw, Context};
use std::ffi::CStr;
use std::os::raw::{c_char, c_int, c_void};

/// True if the server can tell the module of keyspace events.
pub fn can_follow_keyspace_events() -> bool {
    redis_api!(RedisModule_SubscribeToKeyspaceEvents).is_some()
}

/// Follows the generic keyspace events (`rename_to`, `move_to`,
/// `restore`, ...) with `sweeper::on_keyspace_event`; false if refused.
pub fn follow_keyspace_events(ctx: &Context) -> bool {
    redis_api!(RedisModule_SubscribeToKeyspaceEvents).is_some_and(|subscribe| {
        // SAFETY: a callback with the RedisModuleNotificationFunc signature.
        let status = unsafe {
            subscribe(
                ctx.get_raw(),
                raw::REDISMODULE_NOTIFY_GENERIC as c_int,
                Some(keyspace_event),
            )
        };
        status == raw::REDISMODULE_OK as c_int
    })
}

/// Follows SWAPDB, loading and CONFIG SET.
pub fn follow_server_events(ctx: &Context) {
    let Some(subscribe) = redis_api!(RedisModule_SubscribeToServerEvent) else {
        return;
    };
    let event = |id| raw::RedisModuleEvent { id, dataver: 1 };
    // SAFETY: callbacks with the RedisModuleEventCallback signature.
    unsafe {
        subscribe(
            ctx.get_raw(),
            event(raw::REDISMODULE_EVENT_SWAPDB),
            Some(swap_db),
        );
        subscribe(
            ctx.get_raw(),
            event(raw::REDISMODULE_EVENT_LOADING),
            Some(loading),
        );
        subscribe(
            ctx.get_raw(),
            event(raw::REDISMODULE_EVENT_CONFIG),
            Some(config),
        );
    }
}

/// Follows Valkey 9's atomic slot migration event with
/// `slot_migration::on_event`; false if the server refused.
pub fn follow_slot_migrations(ctx: &Context) -> bool {
    let Some(subscribe) = redis_api!(RedisModule_SubscribeToServerEvent) else {
        return false;
    };
    let event = raw::RedisModuleEvent {
        id: EVENT_ATOMIC_SLOT_MIGRATION,
        dataver: 1,
    };
    // SAFETY: a callback with the RedisModuleEventCallback signature.
    unsafe { subscribe(ctx.get_raw(), event, Some(slot_migration)) == raw::REDISMODULE_OK as c_int }
}

extern "C" fn keyspace_event(
    ctx: *mut raw::RedisModuleCtx,
    _kind: c_int,
    event: *const c_char,
    key: *mut raw::RedisModuleString,
) -> c_int {
    // SAFETY: Redis passes a NUL-terminated event name.
    let event = unsafe { CStr::from_ptr(event) }.to_bytes();
    // SAFETY: Redis's key name, alive for the duration of the event.
    let key = unsafe { Arg::from_ptr(key) };
    crate::sweeper::on_keyspace_event(&Context::new(ctx), event, &key);
    raw::REDISMODULE_OK as c_int
}

extern "C" fn swap_db(
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
    crate::sweeper::on_swap_db(info.dbnum_first, info.dbnum_second);
}

extern "C" fn loading(
    ctx: *mut raw::RedisModuleCtx,
    _event: raw::RedisModuleEvent,
    subevent: u64,
    _data: *mut c_void,
) {
    crate::commands::on_loading_event(&Context::new(ctx), subevent);
}

extern "C" fn config(
    ctx: *mut raw::RedisModuleCtx,
    _event: raw::RedisModuleEvent,
    subevent: u64,
    data: *mut c_void,
) {
    if subevent != raw::REDISMODULE_SUBEVENT_CONFIG_CHANGE || data.is_null() {
        return;
    }
    // SAFETY: Redis passes a RedisModuleConfigChange for this event, with
    // `num_changes` NUL-terminated names that live for the callback.
    let change = unsafe { &*data.cast::<raw::RedisModuleConfigChange>() };
    let names: Vec<&[u8]> = (0..change.num_changes as usize)
        .map(|index| {
            // SAFETY: `index` is below `num_changes` (see above).
            unsafe { CStr::from_ptr(*change.config_names.add(index)) }.to_bytes()
        })
        .collect();
    crate::server_events::on_config_change(&Context::new(ctx), &names);
}

/// `VALKEYMODULE_EVENT_ATOMIC_SLOT_MIGRATION`.
const EVENT_ATOMIC_SLOT_MIGRATION: u64 = 19;

/// `ValkeyModuleSlotRange`: both ends included.
#[repr(C)]
struct SlotRange {
    start_slot: c_int,
    end_slot: c_int,
}

/// `ValkeyModuleAtomicSlotMigrationInfoV1`, the event's data.
#[repr(C)]
struct MigrationInfoV1 {
    version: u64,
    job_name: [c_char; 41],
    slot_ranges: *const SlotRange,
    num_slot_ranges: u32,
}

/// The job name and slot ranges (both ends included) the event names.
///
/// # Safety
/// `data` is the server's `ValkeyModuleAtomicSlotMigrationInfoV1`.
unsafe fn read_migration_info(data: *const c_void) -> Option<(JobName, SlotRanges)> {
    if data.is_null() {
        return None;
    }
    // SAFETY: as the caller promises, and checked non-null above.
    let info = unsafe { &*data.cast::<MigrationInfoV1>() };
    if info.version < 1 {
        return None;
    }
    let mut job: JobName = [0; 40];
    for (byte, c) in job.iter_mut().zip(info.job_name.iter()) {
        *byte = *c as u8;
    }
    let ranges = if info.slot_ranges.is_null() {
        Vec::new()
    } else {
        // SAFETY: the server's array of `num_slot_ranges` ranges.
        unsafe { std::slice::from_raw_parts(info.slot_ranges, info.num_slot_ranges as usize) }
            .iter()
            .filter_map(|range| {
                let start = u16::try_from(range.start_slot).ok()?;
                let end = u16::try_from(range.end_slot).ok()?;
                Some((start, end))
            })
            .collect()
    };
    Some((job, ranges))
}

extern "C" fn slot_migration(
    ctx: *mut raw::RedisModuleCtx,
    _event: raw::RedisModuleEvent,
    subevent: u64,
    data: *mut c_void,
) {
    // SAFETY: the server passes its migration info with this event.
    let Some((job, ranges)) = (unsafe { read_migration_info(data) }) else {
        return;
    };
    crate::slot_migration::on_event(&Context::new(ctx), subevent, job, ranges);
}
