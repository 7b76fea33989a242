//! The sale item stored at a key, reached through Redis's low-level key API.
//!
//! Commands that may or may not write (DEDUCT, ADD, REFUND) open the key for
//! reading and change the item in place, then call [`signal_modified`] only
//! when something changed. Opening for writing would tell WATCH and client
//! tracking that the key changed even when a sold-out DEDUCT left it alone.

use crate::args::Arg;
use crate::persistence::SALE_ITEM_TYPE;
use crate::sale_item::SaleItem;
use redis_module::{raw, Context};
use std::os::raw::c_void;

/// The key holds a value of another type.
#[derive(Debug)]
pub struct WrongType;

pub struct ItemKey {
    key: *mut raw::RedisModuleKey,
}

impl ItemKey {
    /// Opens for reading: the key is never created and never signalled.
    pub fn open_read(ctx: &Context, name: &Arg) -> Self {
        ItemKey {
            key: raw::open_key(ctx.get_raw(), name.as_ptr(), raw::KeyMode::READ),
        }
    }

    /// Opens for writing, which lets [`ItemKey::store`] create the key.
    pub fn open_write(ctx: &Context, name: &Arg) -> Self {
        ItemKey {
            key: raw::open_key(
                ctx.get_raw(),
                name.as_ptr(),
                raw::KeyMode::READ | raw::KeyMode::WRITE,
            ),
        }
    }

    fn value(&self) -> Result<Option<*mut SaleItem>, WrongType> {
        let key_type =
            redis_api!(RedisModule_KeyType).map_or(raw::REDISMODULE_KEYTYPE_EMPTY as i32, |f| {
                // SAFETY: `key` came from RedisModule_OpenKey (NULL is allowed).
                unsafe { f(self.key) }
            });
        if key_type == raw::REDISMODULE_KEYTYPE_EMPTY as i32 {
            return Ok(None);
        }
        let (Some(get_type), Some(get_value)) = (
            redis_api!(RedisModule_ModuleTypeGetType),
            redis_api!(RedisModule_ModuleTypeGetValue),
        ) else {
            return Err(WrongType);
        };
        // SAFETY: the key is open and not empty.
        let is_item = key_type == raw::REDISMODULE_KEYTYPE_MODULE as i32
            && unsafe { get_type(self.key) } == *SALE_ITEM_TYPE.raw_type.borrow();
        if !is_item {
            return Err(WrongType);
        }
        // SAFETY: the key holds our type, whose values are `Box<SaleItem>`s.
        let value = unsafe { get_value(self.key) }.cast::<SaleItem>();
        Ok((!value.is_null()).then_some(value))
    }

    pub fn item(&self) -> Result<Option<&SaleItem>, WrongType> {
        // SAFETY: Redis owns the value until the key is closed, and the
        // borrow ends with `self`.
        Ok(self.value()?.map(|item| unsafe { &*item }))
    }

    /// The item for changing in place. A key opened with `open_read` must be
    /// followed by [`signal_modified`] if the item did change.
    pub fn item_mut(&mut self) -> Result<Option<&mut SaleItem>, WrongType> {
        // SAFETY: as in `item`; commands run on the main thread only, so
        // nothing else reaches the value while we hold it.
        Ok(self.value()?.map(|item| unsafe { &mut *item }))
    }

    /// Stores `item` at the key (opened with `open_write`), replacing any
    /// item there and, as SET does, clearing its time to live.
    pub fn store(&mut self, item: SaleItem) -> bool {
        let Some(set_value) = redis_api!(RedisModule_ModuleTypeSetValue) else {
            return false;
        };
        let value = Box::into_raw(Box::new(item));
        // SAFETY: Redis takes ownership of `value` on success and frees it
        // through the type's `free` callback.
        let status = unsafe {
            set_value(
                self.key,
                *SALE_ITEM_TYPE.raw_type.borrow(),
                value.cast::<c_void>(),
            )
        };
        if status == raw::REDISMODULE_OK as i32 {
            true
        } else {
            // SAFETY: Redis refused the value, so it is still ours.
            drop(unsafe { Box::from_raw(value) });
            false
        }
    }

    /// Sets the key to expire at `unix_ms`, an absolute time, so that a
    /// replica or an AOF replay reaches the same deadline.
    pub fn expire_at(&mut self, unix_ms: i64) -> bool {
        redis_api!(RedisModule_SetAbsExpire).is_some_and(|f| {
            // SAFETY: the key is open for writing and holds a value.
            unsafe { f(self.key, unix_ms) == raw::REDISMODULE_OK as i32 }
        })
    }
}

impl Drop for ItemKey {
    fn drop(&mut self) {
        raw::close_key(self.key);
    }
}

/// Tells WATCH and client tracking that the item at `name` changed.
pub fn signal_modified(ctx: &Context, name: &Arg) {
    if let Some(signal) = redis_api!(RedisModule_SignalModifiedKey) {
        // SAFETY: both pointers are valid for the duration of the command.
        unsafe { signal(ctx.get_raw(), name.as_ptr()) };
    }
}

/// True while this server applies decisions its master made: commands from
/// the master on a replica, and commands replayed from the AOF at startup.
pub fn master_decided(ctx: &Context) -> bool {
    let decided = raw::REDISMODULE_CTX_FLAGS_REPLICATED | raw::REDISMODULE_CTX_FLAGS_LOADING;
    // SAFETY: the context is valid for the duration of the command.
    redis_api!(RedisModule_GetContextFlags)
        .is_some_and(|flags| unsafe { flags(ctx.get_raw()) } as u32 & decided != 0)
}

/// Now, on the server's clock, in Unix milliseconds.
pub fn now_ms() -> i64 {
    // SAFETY: RedisModule_Milliseconds takes no arguments.
    redis_api!(RedisModule_Milliseconds).map_or(0, |f| unsafe { f() })
}

/// The item's order stream for one command (or one sweep step), so that
/// its events go in the same atomic step as the sale. The key is checked
/// with a read before the sale, and opened for writing only when an event
/// is appended: closing a key opened for writing signals WATCH and client
/// tracking, which a rejected call must not do.
pub struct OutboxWriter {
    ctx: *mut raw::RedisModuleCtx,
    name: *mut raw::RedisModuleString,
    /// Open for writing once the first event is appended.
    key: Option<*mut raw::RedisModuleKey>,
    maxlen: i64,
}

/// One event of the order stream.
pub struct OrderEvent<'a> {
    pub kind: &'a str,
    pub user: &'a [u8],
    pub qty: i64,
    pub request_id: &'a [u8],
    /// The item's remaining stock after the event.
    pub stock: i64,
}

impl OutboxWriter {
    /// Opens `outbox.stream`; `WrongType` if it holds something else than
    /// a stream. Checked before the sale changes anything.
    pub fn open(
        ctx: &Context,
        outbox: &crate::sale_item::Outbox,
    ) -> Result<OutboxWriter, WrongType> {
        let (Some(create_string), Some(key_type)) = (
            redis_api!(RedisModule_CreateString),
            redis_api!(RedisModule_KeyType),
        ) else {
            return Err(WrongType);
        };
        // SAFETY: a string made from a live buffer, freed on drop.
        let name = unsafe {
            create_string(
                ctx.get_raw(),
                outbox.stream.as_ptr().cast(),
                outbox.stream.len(),
            )
        };
        let writer = OutboxWriter {
            ctx: ctx.get_raw(),
            name,
            key: None,
            maxlen: outbox.maxlen,
        };
        let read = raw::open_key(ctx.get_raw(), name, raw::KeyMode::READ);
        // SAFETY: `read` came from RedisModule_OpenKey (NULL is allowed).
        let found = unsafe { key_type(read) };
        raw::close_key(read);
        if found == raw::REDISMODULE_KEYTYPE_EMPTY as i32
            || found == raw::REDISMODULE_KEYTYPE_STREAM as i32
        {
            Ok(writer)
        } else {
            Err(WrongType)
        }
    }

    /// Appends `event` with an ID the server picks, trims the stream, wakes
    /// blocked readers, and replicates the entry with that very ID.
    pub fn append(&mut self, ctx: &Context, item: &[u8], event: &OrderEvent) {
        let (Some(stream_add), Some(create_string), Some(free_string)) = (
            redis_api!(RedisModule_StreamAdd),
            redis_api!(RedisModule_CreateString),
            redis_api!(RedisModule_FreeString),
        ) else {
            return;
        };
        let key = *self.key.get_or_insert_with(|| {
            raw::open_key(
                self.ctx,
                self.name,
                raw::KeyMode::READ | raw::KeyMode::WRITE,
            )
        });
        let qty = event.qty.to_string();
        let at = now_ms().to_string();
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
        // SAFETY: strings made from live buffers and freed below; the key is
        // open for writing and empty or a stream.
        let mut strings: Vec<*mut raw::RedisModuleString> = fields
            .iter()
            .map(|field| unsafe { create_string(self.ctx, field.as_ptr().cast(), field.len()) })
            .collect();
        let mut id = raw::RedisModuleStreamID { ms: 0, seq: 0 };
        let added = unsafe {
            stream_add(
                key,
                raw::REDISMODULE_STREAM_ADD_AUTOID as i32,
                &mut id,
                strings.as_mut_ptr(),
                (fields.len() / 2) as i64,
            )
        };
        for string in strings {
            // SAFETY: created above, not used after this.
            unsafe { free_string(self.ctx, string) };
        }
        if added != raw::REDISMODULE_OK as i32 {
            ctx.log_warning("seckill: could not append to the order stream");
            return;
        }
        if self.maxlen > 0 {
            if let Some(trim) = redis_api!(RedisModule_StreamTrimByLength) {
                // SAFETY: the key is an open stream.
                unsafe { trim(key, 0, self.maxlen) };
            }
        }
        let stream = crate::args::Arg::from_ptr(self.name);
        let id = format!("{}-{}", id.ms, id.seq);
        let maxlen = self.maxlen.to_string();
        let mut effect: Vec<&[u8]> = vec![stream.as_bytes()];
        if self.maxlen > 0 {
            effect.extend_from_slice(&[b"MAXLEN".as_slice(), maxlen.as_bytes()]);
        }
        effect.push(id.as_bytes());
        effect.extend_from_slice(&fields);
        ctx.replicate("XADD", effect.as_slice());
        if let Some(signal_ready) = redis_api!(RedisModule_SignalKeyAsReady) {
            // SAFETY: both pointers are valid for the call.
            unsafe { signal_ready(self.ctx, self.name) };
        }
        if let Some(notify) = redis_api!(RedisModule_NotifyKeyspaceEvent) {
            // SAFETY: a static event name and a live key name.
            unsafe {
                notify(
                    self.ctx,
                    redis_module::NotifyEvent::STREAM.bits(),
                    c"xadd".as_ptr(),
                    self.name,
                )
            };
        }
    }
}

impl Drop for OutboxWriter {
    fn drop(&mut self) {
        if let Some(key) = self.key {
            raw::close_key(key);
        }
        if let Some(free_string) = redis_api!(RedisModule_FreeString) {
            // SAFETY: created in `open`, not used after this.
            unsafe { free_string(self.ctx, self.name) };
        }
    }
}
