//! Keys opened through Redis's low-level key API: the sale item at a key,
//! and an item's order stream. Each is closed when it goes, and cannot
//! outlive the context it was opened in (`'ctx`).
//!
//! Commands that may or may not write (DEDUCT, ADD, REFUND) open the item's
//! key for reading and change the item in place, then call
//! [`super::signal_modified`] only when something changed. Opening for
//! writing would tell WATCH and client tracking that the key changed even
//! when a sold-out DEDUCT left it alone.

use super::{Arg, Strings};
use crate::persistence::SALE_ITEM_TYPE;
use crate::sale_item::SaleItem;
use redis_module::{raw, Context};
use std::marker::PhantomData;
use std::os::raw::{c_int, c_void};

/// The key holds a value of another type.
#[derive(Debug)]
pub struct WrongType;

/// A key open in a context, closed on drop.
struct OpenKey<'ctx> {
    key: *mut raw::RedisModuleKey,
    _ctx: PhantomData<&'ctx Context>,
}

impl<'ctx> OpenKey<'ctx> {
    fn open(ctx: &'ctx Context, name: &Arg, mode: raw::KeyMode) -> OpenKey<'ctx> {
        OpenKey {
            key: raw::open_key(ctx.get_raw(), name.as_ptr(), mode),
            _ctx: PhantomData,
        }
    }

    /// Opens for reading without it counting as an access: no LRU or LFU
    /// update, and where the server has the flags (7.2 and later), no
    /// keyspace hit or miss and no lazy expiry. For the module's own walks
    /// of the keyspace, which no client asked for.
    fn open_quietly(ctx: &'ctx Context, name: &Arg) -> OpenKey<'ctx> {
        let wanted = raw::REDISMODULE_READ
            | raw::REDISMODULE_OPEN_KEY_NOTOUCH
            | raw::REDISMODULE_OPEN_KEY_NOSTATS
            | raw::REDISMODULE_OPEN_KEY_NOEXPIRE;
        let known = redis_api!(RedisModule_GetOpenKeyModesAll).map_or(
            (raw::REDISMODULE_READ | raw::REDISMODULE_OPEN_KEY_NOTOUCH) as c_int,
            // SAFETY: a plain query of the server's capabilities.
            |modes_all| unsafe { modes_all() },
        );
        let key = redis_api!(RedisModule_OpenKey).map_or(std::ptr::null_mut(), |open_key| {
            // SAFETY: the context and the name are live for the call; the
            // key is closed on drop.
            unsafe { open_key(ctx.get_raw(), name.as_ptr(), wanted as c_int & known) }
        });
        OpenKey {
            key,
            _ctx: PhantomData,
        }
    }

    fn key_type(&self) -> c_int {
        redis_api!(RedisModule_KeyType).map_or(raw::REDISMODULE_KEYTYPE_EMPTY as c_int, |f| {
            // SAFETY: `key` came from RedisModule_OpenKey (NULL is allowed).
            unsafe { f(self.key) }
        })
    }
}

impl Drop for OpenKey<'_> {
    fn drop(&mut self) {
        raw::close_key(self.key);
    }
}

pub struct ItemKey<'ctx> {
    key: OpenKey<'ctx>,
}

impl<'ctx> ItemKey<'ctx> {
    /// Opens for reading: the key is never created and never signalled.
    pub fn open_read(ctx: &'ctx Context, name: &Arg) -> Self {
        ItemKey {
            key: OpenKey::open(ctx, name, raw::KeyMode::READ),
        }
    }

    /// Opens for reading, as a walk of the keyspace does: the key does not
    /// count as accessed (see `OpenKey::open_quietly`).
    pub fn open_quietly(ctx: &'ctx Context, name: &Arg) -> Self {
        ItemKey {
            key: OpenKey::open_quietly(ctx, name),
        }
    }

    /// Opens for writing, which lets [`ItemKey::store`] create the key.
    pub fn open_write(ctx: &'ctx Context, name: &Arg) -> Self {
        ItemKey {
            key: OpenKey::open(ctx, name, raw::KeyMode::READ | raw::KeyMode::WRITE),
        }
    }

    #[inline]
    fn value(&self) -> Result<Option<*mut SaleItem>, WrongType> {
        let (Some(get_type), Some(get_value)) = (
            redis_api!(RedisModule_ModuleTypeGetType),
            redis_api!(RedisModule_ModuleTypeGetValue),
        ) else {
            return Err(WrongType);
        };
        // SAFETY: the key came from RedisModule_OpenKey; an empty key or
        // one of another type has no module type (NULL). Asked first: an
        // item, the case of every sale, then needs no other call.
        let is_item = unsafe { get_type(self.key.key) } == *SALE_ITEM_TYPE.raw_type.borrow();
        if !is_item || self.key.key.is_null() {
            return match self.key.key_type() {
                key_type if key_type == raw::REDISMODULE_KEYTYPE_EMPTY as i32 => Ok(None),
                _ => Err(WrongType),
            };
        }
        // SAFETY: the key holds our type, whose values are `Box<SaleItem>`s.
        let value = unsafe { get_value(self.key.key) }.cast::<SaleItem>();
        Ok((!value.is_null()).then_some(value))
    }

    #[inline]
    pub fn item(&self) -> Result<Option<&SaleItem>, WrongType> {
        // SAFETY: Redis owns the value until the key is closed, and the
        // borrow ends with `self`.
        Ok(self.value()?.map(|item| unsafe { &*item }))
    }

    /// The item for changing in place. A key opened with `open_read` must be
    /// followed by [`super::signal_modified`] if the item did change.
    #[inline]
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
        if self.key.key.is_null() {
            return false; // opened for reading, and missing
        }
        let value = Box::into_raw(Box::new(item));
        // SAFETY: Redis takes ownership of `value` on success and frees it
        // through the type's `free` callback.
        let status = unsafe {
            set_value(
                self.key.key,
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
        let key = self.key.key;
        // A missing key opened for reading is NULL: not passed on.
        !key.is_null()
            && redis_api!(RedisModule_SetAbsExpire).is_some_and(|f| {
                // SAFETY: the key is open (Redis refuses one not open for
                // writing, or empty).
                unsafe { f(key, unix_ms) == raw::REDISMODULE_OK as i32 }
            })
    }

    /// Deletes the key (opened with `open_write`).
    pub fn delete(&mut self) -> bool {
        let key = self.key.key;
        // A missing key opened for reading is NULL: not passed on.
        !key.is_null()
            && redis_api!(RedisModule_DeleteKey).is_some_and(|f| {
                // SAFETY: the key is open (Redis refuses one not open for
                // writing).
                unsafe { f(key) == raw::REDISMODULE_OK as i32 }
            })
    }
}

/// What a key holds, as far as an order stream is concerned.
#[derive(PartialEq, Eq)]
pub enum StreamKind {
    Missing,
    Stream,
    OtherType,
}

/// Looks at `name` without opening it for writing.
pub fn stream_kind(ctx: &Context, name: &Arg) -> StreamKind {
    if redis_api!(RedisModule_KeyType).is_none() {
        return StreamKind::OtherType;
    }
    let found = OpenKey::open(ctx, name, raw::KeyMode::READ).key_type();
    if found == raw::REDISMODULE_KEYTYPE_EMPTY as c_int {
        StreamKind::Missing
    } else if found == raw::REDISMODULE_KEYTYPE_STREAM as c_int {
        StreamKind::Stream
    } else {
        StreamKind::OtherType
    }
}

/// True if the server can append to streams ([`StreamKey::add`]).
pub fn can_add_to_streams() -> bool {
    redis_api!(RedisModule_StreamAdd).is_some() && redis_api!(RedisModule_CreateString).is_some()
}

/// An entry's ID, as the server picked it.
#[derive(Clone, Copy)]
pub struct StreamId {
    pub ms: u64,
    pub seq: u64,
}

/// An order stream's key, open for writing: closing it signals WATCH, so
/// it is opened only once an entry is appended.
pub struct StreamKey<'ctx> {
    key: OpenKey<'ctx>,
}

impl<'ctx> StreamKey<'ctx> {
    pub fn open_write(ctx: &'ctx Context, name: &Arg) -> StreamKey<'ctx> {
        StreamKey {
            key: OpenKey::open(ctx, name, raw::KeyMode::READ | raw::KeyMode::WRITE),
        }
    }

    /// Appends an entry of `fields` (name, value, name, value, ...) with an
    /// ID the server picks; `None` if the stream refused it.
    pub fn add(&mut self, fields: &mut Strings) -> Option<StreamId> {
        let stream_add = redis_api!(RedisModule_StreamAdd)?;
        let mut id = raw::RedisModuleStreamID { ms: 0, seq: 0 };
        // SAFETY: the key is open for writing (Redis refuses one that is
        // not empty or a stream), and `fields` holds `len()` live strings.
        let added = unsafe {
            stream_add(
                self.key.key,
                raw::REDISMODULE_STREAM_ADD_AUTOID as c_int,
                &mut id,
                fields.as_mut_ptr(),
                (fields.len() / 2) as i64,
            )
        };
        (added == raw::REDISMODULE_OK as c_int).then_some(StreamId {
            ms: id.ms,
            seq: id.seq,
        })
    }

    /// Deletes the entry `id`.
    pub fn delete(&mut self, id: StreamId) {
        if let Some(delete) = redis_api!(RedisModule_StreamDelete) {
            let mut id = raw::RedisModuleStreamID {
                ms: id.ms,
                seq: id.seq,
            };
            // SAFETY: the key is open (Redis refuses one that is not a
            // stream open for writing).
            unsafe { delete(self.key.key, &mut id) };
        }
    }

    /// Deletes the whole key: a stream this step created and emptied again.
    pub fn delete_key(&mut self) {
        if let Some(delete) = redis_api!(RedisModule_DeleteKey) {
            // SAFETY: the key is open for writing.
            unsafe { delete(self.key.key) };
        }
    }

    /// Trims the stream to about `maxlen` entries.
    pub fn trim(&mut self, maxlen: i64) {
        if let Some(trim) = redis_api!(RedisModule_StreamTrimByLength) {
            // SAFETY: the key is open (Redis refuses one that is not a
            // stream open for writing).
            unsafe { trim(self.key.key, 0, maxlen) };
        }
    }
}
