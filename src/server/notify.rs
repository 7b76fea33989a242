//! What a write tells the rest of the server besides its reply: keyspace
//! events, WATCH and client tracking, blocked readers, and the replication
//! stream where the crate's own `Context::replicate` does not reach.

use super::{Arg, Keyword, OwnedString, Strings};
use redis_module::{raw, Context, NotifyEvent};
use smallvec::SmallVec;
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

/// Replicates the running command as the client sent it.
pub fn replicate_verbatim(ctx: &Context) {
    if let Some(replicate_verbatim) = redis_api!(RedisModule_ReplicateVerbatim) {
        // SAFETY: the command's context, valid for the call.
        unsafe { replicate_verbatim(ctx.get_raw()) };
    }
}

/// One argument of a command to replicate.
#[derive(Clone, Copy)]
pub enum ReplicaArg<'a> {
    /// A string the server lent the module (one of the call's own
    /// arguments): passed as it is, no copy made.
    String(&'a Arg<'a>),
    Bytes(&'a [u8]),
    /// A keyword, as one string kept for all calls.
    Keyword(&'static Keyword),
    Number(i64),
}

/// Replicates `command` with `args`. The call's own arguments go as the
/// strings they are, so that a rewritten DEDUCT copies only its numbers
/// and keywords (a string per argument, made and freed, cost a hold a
/// third of its time).
pub fn replicate(ctx: &Context, command: &CStr, args: &[ReplicaArg]) {
    let Some(replicate) = redis_api!(RedisModule_Replicate) else {
        return;
    };
    // On the stack for the commands the module rewrites; the strings made
    // are freed when `made` goes, after the call.
    let mut made: SmallVec<[OwnedString; 4]> = SmallVec::new();
    let mut strings: SmallVec<[*mut raw::RedisModuleString; 12]> =
        SmallVec::with_capacity(args.len());
    for arg in args {
        let made_of = |bytes: &[u8]| OwnedString::new(ctx, bytes);
        let owned = match arg {
            ReplicaArg::String(arg) => {
                strings.push(arg.as_ptr());
                continue;
            }
            ReplicaArg::Bytes(bytes) => made_of(bytes),
            ReplicaArg::Keyword(keyword) => match keyword.string() {
                Some(string) => {
                    strings.push(string);
                    continue;
                }
                None => return,
            },
            ReplicaArg::Number(number) => {
                redis_api!(RedisModule_CreateStringFromLongLong).map(|create| {
                    // SAFETY: a new string the module owns, freed in `ctx`
                    // when `made` goes.
                    unsafe { OwnedString::from_raw(ctx, create(ctx.get_raw(), *number)) }
                })
            }
        };
        // The server could not make a string: nothing is replicated, as
        // when it takes no replication from modules.
        let Some(owned) = owned else {
            return;
        };
        strings.push(owned.as_arg().as_ptr());
        made.push(owned);
    }
    // SAFETY: `strings` are live for the call (the call's own arguments,
    // and those in `made`); 'v' takes an array of strings and its length.
    unsafe {
        replicate(
            ctx.get_raw(),
            command.as_ptr(),
            c"v".as_ptr(),
            strings.as_mut_ptr(),
            strings.len(),
        )
    };
}
