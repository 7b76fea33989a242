//! The item's order stream, written in the same atomic step as the sale.
//!
//! Entries are appended before the item changes, so that a stream that
//! cannot take them (wrong type, exhausted IDs, a key caught in a slot
//! migration) refuses the whole write with nothing changed. Entries are
//! replicated with the very IDs the server picked, after the item's own
//! command.

use crate::sale_item::{EventView, Outbox};
use redis_module::{raw, Context, NotifyEvent, RedisError};
use std::os::raw::c_int;

const ERR_STREAM_WRONGTYPE: &str =
    "WRONGTYPE the item's order stream key holds the wrong kind of value";
const ERR_STREAM_FULL: &str = "ERR the item's order stream has exhausted the last possible ID, \
     unable to add more items; nothing was changed";
const ERR_STREAM_CROSSSLOT: &str = "CROSSSLOT the item's order stream does not hash to the \
     item's slot (was the item renamed?): set it again with SECKILL.STREAM; nothing was changed";
const ERR_STREAM_MIGRATING: &str = "TRYAGAIN the item's order stream is missing while its slot \
     is being migrated; nothing was changed";

/// An entry appended in this step, kept to replicate it: its ID and the
/// field strings made for the append, replicated as they are.
struct Appended {
    id: raw::RedisModuleStreamID,
    fields: Vec<*mut raw::RedisModuleString>,
}

pub struct OrderStream {
    ctx: *mut raw::RedisModuleCtx,
    name: *mut raw::RedisModuleString,
    /// Open for writing once the first entry is appended: closing a key
    /// opened for writing signals WATCH, which a refused call must not do.
    key: Option<*mut raw::RedisModuleKey>,
    maxlen: i64,
    appended: Vec<Appended>,
}

/// What a key holds, as far as an order stream is concerned.
#[derive(PartialEq, Eq)]
pub enum StreamKey {
    Missing,
    Stream,
    OtherType,
}

/// Looks at `name` without opening it for writing.
///
/// # Safety
/// `name` must be a valid Redis string for the duration of the call.
pub unsafe fn inspect(ctx: &Context, name: *mut raw::RedisModuleString) -> StreamKey {
    let Some(key_type) = redis_api!(RedisModule_KeyType) else {
        return StreamKey::OtherType;
    };
    let read = raw::open_key(ctx.get_raw(), name, raw::KeyMode::READ);
    // SAFETY: `read` came from RedisModule_OpenKey (NULL is allowed).
    let found = unsafe { key_type(read) };
    raw::close_key(read);
    if found == raw::REDISMODULE_KEYTYPE_EMPTY as c_int {
        StreamKey::Missing
    } else if found == raw::REDISMODULE_KEYTYPE_STREAM as c_int {
        StreamKey::Stream
    } else {
        StreamKey::OtherType
    }
}

/// A key name as a Redis string the caller frees.
fn create_string(ctx: &Context, bytes: &[u8]) -> Option<*mut raw::RedisModuleString> {
    let create = redis_api!(RedisModule_CreateString)?;
    // SAFETY: a string made from a live buffer.
    Some(unsafe { create(ctx.get_raw(), bytes.as_ptr().cast(), bytes.len()) })
}

/// Checks that `stream` can be an order stream now: empty or a stream.
pub fn check_type(ctx: &Context, stream: &[u8]) -> Result<(), RedisError> {
    let name = create_string(ctx, stream).ok_or(RedisError::Str(ERR_STREAM_WRONGTYPE))?;
    // SAFETY: made just above, freed right after this look, not used again.
    let found = unsafe { inspect(ctx, name) };
    // SAFETY: made above by this module, not used after this.
    unsafe { free_string(ctx.get_raw(), name) };
    match found {
        StreamKey::OtherType => Err(RedisError::Str(ERR_STREAM_WRONGTYPE)),
        _ => Ok(()),
    }
}

pub const ERR_STREAM_UNCONFIRMED: &str = "NOPERM this user has no permissions to write the \
     item's order stream, which came with a RESTORE: SECKILL.STREAM by a user who may write it \
     confirms it; nothing was changed";

/// True if the client running this command could append to `stream`
/// itself (`XADD stream * ...`, judged by the server's own ACL check with
/// the command and the key in one selector): an item whose stream name came
/// with a RESTORE writes it only for such a caller, which gains nothing it
/// did not have. Clients Redis does not list (timers, scripts, other
/// modules' calls) are not known to be allowed, and are refused.
pub fn caller_may_write(ctx: &Context, stream: &[u8]) -> bool {
    let (Some(client_id), Some(user_name_of), Some(find_user), Some(check), Some(free_user)) = (
        redis_api!(RedisModule_GetClientId),
        redis_api!(RedisModule_GetClientUserNameById),
        redis_api!(RedisModule_GetModuleUserFromUserName),
        redis_api!(RedisModule_ACLCheckCommandPermissions),
        redis_api!(RedisModule_FreeModuleUser),
    ) else {
        return false;
    };
    // SAFETY: the context is valid for the duration of the command; a
    // client that is not listed gives NULL, never a dangling user.
    let user_name = unsafe { user_name_of(ctx.get_raw(), client_id(ctx.get_raw())) };
    if user_name.is_null() {
        return false;
    }
    // SAFETY: a live user name; the user is freed below.
    let user = unsafe { find_user(user_name) };
    // SAFETY: made by this module above, not used after this.
    unsafe { free_string(ctx.get_raw(), user_name) };
    if user.is_null() {
        return false;
    }
    let words: [&[u8]; 5] = [b"XADD", stream, b"*", b"f", b"v"];
    let mut argv: Vec<*mut raw::RedisModuleString> = words
        .iter()
        .filter_map(|word| create_string(ctx, word))
        .collect();
    let allowed = argv.len() == words.len() && {
        // SAFETY: a live user and `argv.len()` live strings, freed below.
        let status = unsafe { check(user, argv.as_mut_ptr(), argv.len() as c_int) };
        status == raw::REDISMODULE_OK as c_int
    };
    for string in argv {
        // SAFETY: made by this module above for the check, done with now.
        unsafe { free_string(ctx.get_raw(), string) };
    }
    // SAFETY: found above, not used after this.
    unsafe { free_user(user) };
    allowed
}

/// # Safety
/// `string` must have been created by this module in `ctx` (or with no
/// context) and must not be used after this.
unsafe fn free_string(ctx: *mut raw::RedisModuleCtx, string: *mut raw::RedisModuleString) {
    if let Some(free) = redis_api!(RedisModule_FreeString) {
        // SAFETY: as the caller promises.
        unsafe { free(ctx, string) };
    }
}

impl OrderStream {
    /// Opens `outbox.stream` for one write: refused if the key holds
    /// another type, or if it is missing while its slot is moving between
    /// cluster nodes (a stream re-created here would collide with the one
    /// being migrated).
    pub fn open(ctx: &Context, item: &[u8], outbox: &Outbox) -> Result<OrderStream, RedisError> {
        // INIT and STREAM check the slot, but an item renamed or restored
        // under another name keeps its stream's name: in a cluster, this
        // node may not own that stream's slot.
        if crate::hash_slot::key_slot(&outbox.stream) != crate::hash_slot::key_slot(item)
            && crate::cluster::in_cluster(ctx)
        {
            return Err(RedisError::Str(ERR_STREAM_CROSSSLOT));
        }
        let name = create_string(ctx, &outbox.stream).ok_or(RedisError::Str(ERR_STREAM_FULL))?;
        let stream = OrderStream {
            ctx: ctx.get_raw(),
            name,
            key: None,
            maxlen: outbox.maxlen,
            appended: Vec::new(),
        };
        // SAFETY: `name` is the stream's, alive as long as `stream`.
        match unsafe { inspect(ctx, name) } {
            StreamKey::Stream => Ok(stream),
            StreamKey::OtherType => Err(RedisError::Str(ERR_STREAM_WRONGTYPE)),
            StreamKey::Missing if crate::cluster::slot_is_moving(ctx, &outbox.stream) => {
                Err(RedisError::Str(ERR_STREAM_MIGRATING))
            }
            StreamKey::Missing => Ok(stream),
        }
    }

    /// Checks, before anything is appended, that the stream has IDs left
    /// for `entries` more: once one entry is in, taking it back would not
    /// take back the stream's last ID. IDs run out only when the last one
    /// reached the largest millisecond, which only an explicit `XADD` does.
    pub fn check_room(&self, ctx: &Context, entries: usize) -> Result<(), RedisError> {
        if entries <= 1 {
            // A single append that fails leaves the stream as it was.
            return Ok(());
        }
        // SAFETY: the stream's name lives as long as `self`.
        let stream = unsafe { crate::args::Arg::from_ptr(self.name) };
        // A missing stream has every ID left.
        let last_id = crate::call::field(
            ctx,
            "XINFO",
            &[b"STREAM", stream.as_bytes()],
            "last-generated-id",
        );
        let Some((ms, seq)) = last_id.as_deref().and_then(|id| id.split_once('-')) else {
            return Ok(());
        };
        let (Ok(ms), Ok(seq)) = (ms.parse::<u64>(), seq.parse::<u64>()) else {
            return Ok(());
        };
        if ms < u64::MAX || u64::MAX - seq >= entries as u64 {
            Ok(())
        } else {
            Err(RedisError::Str(ERR_STREAM_FULL))
        }
    }

    /// Appends `event` with an ID the server picks. On failure every entry
    /// this step appended is taken back, and the write must be refused.
    pub fn append(&mut self, item: &[u8], event: &EventView) -> Result<(), RedisError> {
        let result = self.try_append(item, event);
        if result.is_err() {
            self.roll_back();
        }
        result
    }

    fn try_append(&mut self, item: &[u8], event: &EventView) -> Result<(), RedisError> {
        let (Some(stream_add), Some(create)) = (
            redis_api!(RedisModule_StreamAdd),
            redis_api!(RedisModule_CreateString),
        ) else {
            return Err(RedisError::Str(ERR_STREAM_FULL));
        };
        let (ctx, name) = (self.ctx, self.name);
        let key = *self.key.get_or_insert_with(|| {
            raw::open_key(ctx, name, raw::KeyMode::READ | raw::KeyMode::WRITE)
        });
        let qty = event.qty.to_string();
        let at = crate::item_key::now_ms().to_string();
        let stock = event.stock.to_string();
        let fields: [&[u8]; 14] = [
            b"event",
            event.kind.as_bytes(),
            b"item",
            item,
            b"user",
            event.user,
            b"qty",
            qty.as_bytes(),
            b"request",
            event.request_id,
            b"at",
            at.as_bytes(),
            b"stock",
            stock.as_bytes(),
        ];
        // SAFETY: strings made from live buffers; kept until the entry is
        // replicated or taken back, and freed then.
        let mut strings: Vec<*mut raw::RedisModuleString> = fields
            .iter()
            .map(|field| unsafe { create(ctx, field.as_ptr().cast(), field.len()) })
            .collect();
        let mut id = raw::RedisModuleStreamID { ms: 0, seq: 0 };
        // SAFETY: the key is open for writing and empty or a stream.
        let added = unsafe {
            stream_add(
                key,
                raw::REDISMODULE_STREAM_ADD_AUTOID as c_int,
                &mut id,
                strings.as_mut_ptr(),
                (strings.len() / 2) as i64,
            )
        };
        if added != raw::REDISMODULE_OK as c_int {
            for string in strings {
                // SAFETY: made above for the refused entry, used by nothing.
                unsafe { free_string(ctx, string) };
            }
            return Err(RedisError::Str(ERR_STREAM_FULL));
        }
        self.appended.push(Appended {
            id,
            fields: strings,
        });
        Ok(())
    }

    /// Deletes what this step appended.
    fn roll_back(&mut self) {
        let (Some(key), Some(delete)) = (self.key, redis_api!(RedisModule_StreamDelete)) else {
            return;
        };
        for mut entry in std::mem::take(&mut self.appended) {
            // SAFETY: the key is an open stream holding this entry.
            unsafe { delete(key, &mut entry.id) };
            for string in entry.fields {
                // SAFETY: the entry's fields, made by this module; the
                // entry is gone.
                unsafe { free_string(self.ctx, string) };
            }
        }
    }

    /// Once the item changed: trims the stream, replicates every entry
    /// with its ID, wakes blocked readers and fires `xadd`.
    pub fn publish(mut self) {
        let Some(key) = self.key else {
            return;
        };
        if self.appended.is_empty() {
            return;
        }
        if self.maxlen > 0 {
            if let Some(trim) = redis_api!(RedisModule_StreamTrimByLength) {
                // SAFETY: the key is an open stream.
                unsafe { trim(key, 0, self.maxlen) };
            }
        }
        let Some(replicate) = redis_api!(RedisModule_Replicate) else {
            return;
        };
        for entry in std::mem::take(&mut self.appended) {
            let id = format!("{}-{}", entry.id.ms, entry.id.seq);
            // The entry's own field strings, as `v` (array and count): no
            // copy of them is made to replicate it.
            // SAFETY: live strings and buffers; the formats match the
            // arguments ('s' string, 'c' C string, 'l' long long, 'b'
            // buffer and length, 'v' array and count).
            unsafe {
                if self.maxlen > 0 {
                    replicate(
                        self.ctx,
                        c"XADD".as_ptr(),
                        c"sclbv".as_ptr(),
                        self.name,
                        c"MAXLEN".as_ptr(),
                        self.maxlen as std::os::raw::c_longlong,
                        id.as_ptr(),
                        id.len(),
                        entry.fields.as_ptr(),
                        entry.fields.len(),
                    );
                } else {
                    replicate(
                        self.ctx,
                        c"XADD".as_ptr(),
                        c"sbv".as_ptr(),
                        self.name,
                        id.as_ptr(),
                        id.len(),
                        entry.fields.as_ptr(),
                        entry.fields.len(),
                    );
                }
            }
            for string in entry.fields {
                // SAFETY: the entry's fields, made by this module, are
                // replicated and not used after this.
                unsafe { free_string(self.ctx, string) };
            }
            if let Some(notify) = redis_api!(RedisModule_NotifyKeyspaceEvent) {
                // SAFETY: a static event name and a live key name.
                unsafe {
                    notify(
                        self.ctx,
                        NotifyEvent::STREAM.bits(),
                        c"xadd".as_ptr(),
                        self.name,
                    )
                };
            }
        }
        if let Some(signal) = redis_api!(RedisModule_SignalModifiedKey) {
            // SAFETY: both pointers are valid for the call.
            unsafe { signal(self.ctx, self.name) };
        }
        if let Some(signal_ready) = redis_api!(RedisModule_SignalKeyAsReady) {
            // SAFETY: both pointers are valid for the call.
            unsafe { signal_ready(self.ctx, self.name) };
        }
    }
}

impl Drop for OrderStream {
    fn drop(&mut self) {
        // Entries appended but never published (an error in between) are
        // taken back; published ones left nothing here.
        self.roll_back();
        if let Some(key) = self.key {
            raw::close_key(key);
        }
        // SAFETY: the name was made for this stream and goes with it.
        unsafe { free_string(self.ctx, self.name) };
    }
}
