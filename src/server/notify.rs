//! What a write tells the rest of the server besides its reply: keyspace
//! events, WATCH and client tracking, blocked readers, and the replication
//! stream where the crate's own `Context::replicate` does not reach.

use super::{Arg, Strings};
use redis_module::{Context, NotifyEvent};
use std::ffi::CStr;
use std::os::raw::c_longlong;

/// Fires the keyspace event `event` of class `class` on `key`. (The
/// crate's wrapper builds a CString per call; events are static here.)
pub fn notify_keyspace_event(ctx: &Context, class: NotifyEvent, event: &CStr, key: &Arg) {
    if let Some(notify) = redis_api!(RedisModule_NotifyKeyspaceEvent) {
        // SAFETY: `event` is NUL-terminated and `key` lives for the call.
        unsafe { notify(ctx.get_raw(), class.bits(), event.as_ptr(), key.as_ptr()) };
    }
}

/// Tells WATCH and client tracking that the key `name` changed.
pub fn signal_modified(ctx: &Context, name: &Arg) {
    if let Some(signal) = redis_api!(RedisModule_SignalModifiedKey) {
        // SAFETY: both pointers are valid for the call.
        unsafe { signal(ctx.get_raw(), name.as_ptr()) };
    }
}

/// Wakes the clients blocked on the key `name` (XREAD BLOCK ...).
pub fn signal_key_as_ready(ctx: &Context, name: &Arg) {
    if let Some(signal_ready) = redis_api!(RedisModule_SignalKeyAsReady) {
        // SAFETY: both pointers are valid for the call.
        unsafe { signal_ready(ctx.get_raw(), name.as_ptr()) };
    }
}

/// True if the server takes replication from the module.
pub fn can_replicate() -> bool {
    redis_api!(RedisModule_Replicate).is_some()
}

/// Replicates `XADD stream [MAXLEN maxlen] id fields...`, the entry's own
/// field strings passed as they are: no copy of them is made.
pub fn replicate_xadd(
    ctx: &Context,
    stream: &Arg,
    maxlen: Option<i64>,
    id: &str,
    fields: &Strings,
) {
    let Some(replicate) = redis_api!(RedisModule_Replicate) else {
        return;
    };
    // SAFETY: live strings and buffers; the formats match the arguments
    // ('s' string, 'c' C string, 'l' long long, 'b' buffer and length,
    // 'v' array and count).
    unsafe {
        match maxlen {
            Some(maxlen) => replicate(
                ctx.get_raw(),
                c"XADD".as_ptr(),
                c"sclbv".as_ptr(),
                stream.as_ptr(),
                c"MAXLEN".as_ptr(),
                maxlen as c_longlong,
                id.as_ptr(),
                id.len(),
                fields.as_ptr(),
                fields.len(),
            ),
            None => replicate(
                ctx.get_raw(),
                c"XADD".as_ptr(),
                c"sbv".as_ptr(),
                stream.as_ptr(),
                id.as_ptr(),
                id.len(),
                fields.as_ptr(),
                fields.len(),
            ),
        }
    };
}
