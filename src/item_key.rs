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

impl ItemKey {
    /// Deletes the key (opened with `open_write`).
    pub fn delete(&mut self) -> bool {
        redis_api!(RedisModule_DeleteKey).is_some_and(|f| {
            // SAFETY: the key is open for writing.
            unsafe { f(self.key) == raw::REDISMODULE_OK as i32 }
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
/// the master on a replica, commands replayed from the AOF at startup, and
/// on Valkey 9 what a slot migration's source streams to this node (its
/// snapshot and its writes since, decided by the node that owns the slot).
pub fn master_decided(ctx: &Context) -> bool {
    let decided = crate::slot_migration::decided_flags();
    crate::server::context::flags(ctx).is_some_and(|flags| flags & decided != 0)
}

/// Now, on the server's clock, in Unix milliseconds.
pub fn now_ms() -> i64 {
    // SAFETY: RedisModule_Milliseconds takes no arguments.
    redis_api!(RedisModule_Milliseconds).map_or(0, |f| unsafe { f() })
}

/// Runs `visit` on the key `key` of database `db`, selected in `ctx`: for
/// contexts that outlive any one command (timers, server events), which
/// reach keys by a name they kept.
pub fn in_db(ctx: &Context, db: std::os::raw::c_int, key: &[u8], visit: impl FnOnce(&Arg)) {
    let (Some(select_db), Some(create_string), Some(free_string)) = (
        redis_api!(RedisModule_SelectDb),
        redis_api!(RedisModule_CreateString),
        redis_api!(RedisModule_FreeString),
    ) else {
        return;
    };
    // SAFETY: a timer or event context may select any database; the
    // string is made from a live buffer and freed below.
    let name = unsafe {
        select_db(ctx.get_raw(), db);
        create_string(ctx.get_raw(), key.as_ptr().cast(), key.len())
    };
    // SAFETY: made just above; freed below, after its last use.
    let name = unsafe { Arg::from_ptr(name) };
    visit(&name);
    // SAFETY: created above, not used after this.
    unsafe { free_string(ctx.get_raw(), name.as_ptr()) };
}

/// The database the context has selected.
pub fn selected_db(ctx: &Context) -> std::os::raw::c_int {
    // SAFETY: the context is valid for the duration of the call.
    redis_api!(RedisModule_GetSelectedDb).map_or(0, |f| unsafe { f(ctx.get_raw()) })
}
