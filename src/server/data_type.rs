//! The C callbacks of the `seckill--` module data type, and what they are
//! handed (the RDB or AOF stream, a digest, a copy's target) as safe types:
//! each callback turns Redis's pointers into these and calls the function
//! of `crate::persistence` that does the work.

use crate::persistence;
use crate::sale_item::SaleItem;
use redis_module::{raw, RedisBuffer, RedisString};
use std::ffi::CString;
use std::marker::PhantomData;
use std::os::raw::{c_char, c_int, c_void};

/// The type's methods, for `persistence::SALE_ITEM_TYPE`.
pub const METHODS: raw::RedisModuleTypeMethods = raw::RedisModuleTypeMethods {
    version: raw::REDISMODULE_TYPE_METHOD_VERSION as u64,
    rdb_load: Some(rdb_load),
    rdb_save: Some(rdb_save),
    aof_rewrite: Some(aof_rewrite),
    mem_usage: Some(mem_usage),
    digest: Some(digest),
    free: Some(free),
    aux_load: None,
    aux_save: None,
    aux_save_triggers: 0,
    free_effort: Some(free_effort),
    unlink: None,
    copy: None,
    defrag: None,
    mem_usage2: None,
    free_effort2: None,
    unlink2: None,
    copy2: Some(copy2),
    aux_save2: None,
};

/// The RDB stream (a file, a full sync, a DUMP payload) one callback reads
/// or writes, for that callback only.
pub struct Io<'a> {
    io: *mut raw::RedisModuleIO,
    _call: PhantomData<&'a mut raw::RedisModuleIO>,
}

impl Io<'_> {
    /// Writes one string.
    pub fn save(&mut self, bytes: &[u8]) {
        raw::save_slice(self.io, bytes);
    }

    /// Reads one string; `None` on a short read.
    pub fn load(&mut self) -> Option<RedisBuffer> {
        raw::load_string_buffer(self.io).ok()
    }

    /// The `REDISMODULE_CTX_FLAGS_*` of the context the server loads in.
    pub fn context_flags(&self) -> Option<u32> {
        let context_of = redis_api!(RedisModule_GetContextFromIO)?;
        // SAFETY: the IO context Redis passed to this callback; the context
        // it makes is Redis's, freed with the IO.
        unsafe { super::context::raw_flags(context_of(self.io)) }
    }

    /// The name of the key being loaded, if the server tells it.
    pub fn key_name(&self) -> Option<&[u8]> {
        let key_name = redis_api!(RedisModule_GetKeyNameFromIO)?;
        // SAFETY: reads the IO context Redis passed to this callback.
        let name = unsafe { key_name(self.io) };
        (!name.is_null()).then(|| RedisString::string_as_slice(name))
    }

    /// The name and database of the key being loaded, if the server tells
    /// both.
    pub fn key_and_db(&self) -> Option<(&[u8], c_int)> {
        let db_id = redis_api!(RedisModule_GetDbIdFromIO)?;
        redis_api!(RedisModule_GetKeyNameFromIO)?;
        // SAFETY: reads the IO context Redis passed to this callback.
        let db = unsafe { db_id(self.io) };
        Some((self.key_name()?, db))
    }

    /// Reports why the load failed, in the server's log.
    pub fn log_error(&self, message: &str) {
        let Some(log) = redis_api!(RedisModule_LogIOError) else {
            return;
        };
        if let Ok(message) = CString::new(message) {
            // SAFETY: a "%s" format with one NUL-terminated argument.
            unsafe {
                log(
                    self.io,
                    c"warning".as_ptr(),
                    c"%s".as_ptr(),
                    message.as_ptr(),
                )
            };
        }
    }
}

/// The AOF rewrite one callback writes a key into.
pub struct Aof<'a> {
    aof: *mut raw::RedisModuleIO,
    key: *mut raw::RedisModuleString,
    _call: PhantomData<&'a mut raw::RedisModuleIO>,
}

impl Aof<'_> {
    /// Emits `command key payload`; nothing if the server cannot.
    pub fn emit(&mut self, command: &std::ffi::CStr, payload: &[u8]) {
        if let Some(emit) = redis_api!(RedisModule_EmitAOF) {
            // SAFETY: "sb" takes a RedisModuleString and a buffer with its
            // length, both alive for the call.
            unsafe {
                emit(
                    self.aof,
                    command.as_ptr(),
                    c"sb".as_ptr(),
                    self.key,
                    payload.as_ptr().cast::<c_char>(),
                    payload.len(),
                )
            };
        }
    }
}

/// The digest (`DEBUG DIGEST`) one callback adds a value to.
pub struct Digest<'a> {
    md: *mut raw::RedisModuleDigest,
    add_bytes: unsafe extern "C" fn(*mut raw::RedisModuleDigest, *const c_char, usize),
    add_integer: unsafe extern "C" fn(*mut raw::RedisModuleDigest, i64),
    end: unsafe extern "C" fn(*mut raw::RedisModuleDigest),
    _call: PhantomData<&'a mut raw::RedisModuleDigest>,
}

impl Digest<'_> {
    pub fn add_integer(&mut self, value: i64) {
        // SAFETY: the digest Redis passed for this call.
        unsafe { (self.add_integer)(self.md, value) };
    }

    pub fn add_bytes(&mut self, bytes: &[u8]) {
        // SAFETY: the digest as above; the buffer is alive for the call.
        unsafe { (self.add_bytes)(self.md, bytes.as_ptr().cast::<c_char>(), bytes.len()) };
    }

    /// Ends a sequence: sequences combine in an order-independent way.
    pub fn end_sequence(&mut self) {
        // SAFETY: the digest as above.
        unsafe { (self.end)(self.md) };
    }
}

/// # Safety
/// Redis passes a value created by this module: a `Box<SaleItem>`, alive
/// for the callback.
unsafe fn item<'a>(value: *const c_void) -> &'a SaleItem {
    // SAFETY: as the caller promises.
    unsafe { &*value.cast::<SaleItem>() }
}

/// # Safety
/// `io` is the stream Redis passed to the callback, alive for `'a`.
unsafe fn io<'a>(io: *mut raw::RedisModuleIO) -> Io<'a> {
    Io {
        io,
        _call: PhantomData,
    }
}

unsafe extern "C" fn rdb_save(rdb: *mut raw::RedisModuleIO, value: *mut c_void) {
    // SAFETY: Redis saves a value of this type into its stream.
    let (item, mut rdb) = unsafe { (item(value), io(rdb)) };
    persistence::rdb_save(item, &mut rdb);
}

unsafe extern "C" fn rdb_load(rdb: *mut raw::RedisModuleIO, encver: c_int) -> *mut c_void {
    // SAFETY: Redis loads a value of this type from its stream.
    let mut rdb = unsafe { io(rdb) };
    persistence::rdb_load(&mut rdb, encver).map_or(std::ptr::null_mut(), |item| {
        // Redis owns it from now on, and frees it through `free`.
        Box::into_raw(item).cast::<c_void>()
    })
}

unsafe extern "C" fn aof_rewrite(
    aof: *mut raw::RedisModuleIO,
    key: *mut raw::RedisModuleString,
    value: *mut c_void,
) {
    // SAFETY: Redis rewrites a value of this type, at `key`.
    let item = unsafe { item(value) };
    let mut aof = Aof {
        aof,
        key,
        _call: PhantomData,
    };
    if redis_api!(RedisModule_EmitAOF).is_some() {
        persistence::aof_rewrite(item, &mut aof);
    }
}

unsafe extern "C" fn mem_usage(value: *const c_void) -> usize {
    // The item's own allocation as the allocator sized it.
    // SAFETY: the value is a block of Redis's allocator (the module's
    // global allocator).
    let allocated = redis_api!(RedisModule_MallocSize)
        .map(|malloc_size| unsafe { malloc_size(value.cast_mut()) });
    // SAFETY: Redis measures a value of this type.
    persistence::mem_usage(unsafe { item(value) }, allocated)
}

unsafe extern "C" fn digest(md: *mut raw::RedisModuleDigest, value: *mut c_void) {
    let (Some(add_bytes), Some(add_integer), Some(end)) = (
        redis_api!(RedisModule_DigestAddStringBuffer),
        redis_api!(RedisModule_DigestAddLongLong),
        redis_api!(RedisModule_DigestEndSequence),
    ) else {
        return;
    };
    let mut digest = Digest {
        md,
        add_bytes,
        add_integer,
        end,
        _call: PhantomData,
    };
    // SAFETY: Redis digests a value of this type.
    persistence::digest(unsafe { item(value) }, &mut digest);
}

unsafe extern "C" fn free(value: *mut c_void) {
    // SAFETY: Redis frees a value this module made with `Box::into_raw`,
    // once.
    persistence::free(unsafe { Box::from_raw(value.cast::<SaleItem>()) });
}

unsafe extern "C" fn free_effort(_key: *mut raw::RedisModuleString, value: *const c_void) -> usize {
    // SAFETY: Redis asks about a value of this type.
    persistence::free_effort(unsafe { item(value) })
}

unsafe extern "C" fn copy2(
    ctx: *mut raw::RedisModuleKeyOptCtx,
    value: *const c_void,
) -> *mut c_void {
    // The key and database the value is copied to, if the server tells.
    let target = || {
        let to_key = redis_api!(RedisModule_GetToKeyNameFromOptCtx)?;
        let to_db = redis_api!(RedisModule_GetToDbIdFromOptCtx)?;
        // SAFETY: the key-operation context Redis passed to `copy2`.
        let (name, db) = unsafe { (to_key(ctx), to_db(ctx)) };
        (!name.is_null()).then(|| (RedisString::string_as_slice(name), db))
    };
    // SAFETY: Redis copies a value of this type.
    let copied = persistence::copy(unsafe { item(value) }, target);
    // Redis owns it from now on, and frees it through `free`.
    Box::into_raw(copied).cast::<c_void>()
}
