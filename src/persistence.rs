//! The `seckill--` module data type: how Redis saves, loads, rewrites,
//! copies, measures, digests and frees a sale item. All of it goes through
//! the chunk codec in `sale_item::codec`, so RDB files, DUMP payloads and AOF
//! rewrites share one format.

use crate::sale_item::codec::{DecodeError, WholeLoad, FORMAT_VERSION};
use crate::sale_item::{SaleItem, Transfer, MAX_ID_LEN};
use redis_module::native_types::RedisType;
use redis_module::raw;
use std::ffi::CString;
use std::os::raw::{c_char, c_int, c_void};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The version Redis stores with every saved item: the format's own
/// (`codec::FORMAT_VERSION`, also in each header chunk), so that there is
/// one version to bump. A loader accepts it and every older one (items
/// saved up to format 7 carry 5 here), and refuses newer ones.
pub const ENCODING_VERSION: i32 = FORMAT_VERSION as i32;

pub static SALE_ITEM_TYPE: RedisType = RedisType::new(
    "seckill--",
    ENCODING_VERSION,
    raw::RedisModuleTypeMethods {
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
    },
);

/// # Safety
/// Redis passes a value created by this module: a `Box<SaleItem>`.
unsafe fn item<'a>(value: *const c_void) -> &'a SaleItem {
    // SAFETY: as the caller promises.
    unsafe { &*value.cast::<SaleItem>() }
}

unsafe extern "C" fn rdb_save(rdb: *mut raw::RedisModuleIO, value: *mut c_void) {
    // SAFETY: Redis saves a value of this type.
    let item = unsafe { item(value) };
    item.encode_chunks(|chunk| raw::save_slice(rdb, chunk));
}

unsafe extern "C" fn rdb_load(rdb: *mut raw::RedisModuleIO, encver: c_int) -> *mut c_void {
    match load_item(rdb, encver) {
        Ok(mut item) => {
            if !loading_a_snapshot(rdb) && !imported(rdb) {
                // A RESTORE (MIGRATE's too): the payload's bytes are the
                // client's, stream name included.
                item.distrust_outbox();
            }
            // Registered at the address it keeps as the key's value.
            let item = Box::new(item);
            if let Some(deadline) = item.next_deadline() {
                schedule_loaded(rdb, &item, deadline);
            }
            Box::into_raw(item).cast::<c_void>()
        }
        Err(DecodeError(reason)) => {
            log_io_error(rdb, reason);
            std::ptr::null_mut()
        }
    }
}

/// True while the server loads an RDB file, a full sync or the AOF, whose
/// bytes the server wrote; false for RESTORE, which runs as a command.
/// (A RESTORE replayed from the AOF runs while loading: the "restore"
/// keyspace event distrusts its stream where the module can hear it.)
fn loading_a_snapshot(rdb: *mut raw::RedisModuleIO) -> bool {
    let (Some(context_of), Some(flags_of)) = (
        redis_api!(RedisModule_GetContextFromIO),
        redis_api!(RedisModule_GetContextFlags),
    ) else {
        return false;
    };
    // SAFETY: the IO context Redis passed to `rdb_load`; the context it
    // makes is Redis's, freed with the IO.
    let flags = unsafe { flags_of(context_of(rdb)) } as u32;
    flags & (raw::REDISMODULE_CTX_FLAGS_LOADING | raw::REDISMODULE_CTX_FLAGS_ASYNC_LOADING) != 0
}

/// True for a value loaded into a slot being imported here by an atomic
/// slot migration (Valkey 9): no client can write such a key, only the
/// migration's source, which sends what it holds and vouched for.
fn imported(rdb: *mut raw::RedisModuleIO) -> bool {
    let Some(key_name) = redis_api!(RedisModule_GetKeyNameFromIO) else {
        return false;
    };
    // SAFETY: reads the IO context Redis passed to `rdb_load`.
    let name = unsafe { key_name(rdb) };
    !name.is_null()
        && crate::slot_migration::importing(redis_module::RedisString::string_as_slice(
            name.cast_mut(),
        ))
}

fn load_item(rdb: *mut raw::RedisModuleIO, encver: c_int) -> Result<SaleItem, DecodeError> {
    if encver > ENCODING_VERSION {
        return Err(DecodeError(
            "sale item saved by a newer version of the module",
        ));
    }
    let next_chunk = || raw::load_string_buffer(rdb).map_err(|_| DecodeError("short read"));
    let mut load = WholeLoad::begin(next_chunk()?.as_ref())?;
    while !load.is_complete() {
        load.add_chunk(next_chunk()?.as_ref())?;
    }
    load.finish()
}

/// Puts an item loaded with pending holds (from an RDB file, a full sync or
/// RESTORE) on the sweep's registry, under the key it is loaded into.
fn schedule_loaded(rdb: *mut raw::RedisModuleIO, item: &SaleItem, deadline: i64) {
    let (Some(key_name), Some(db_id)) = (
        redis_api!(RedisModule_GetKeyNameFromIO),
        redis_api!(RedisModule_GetDbIdFromIO),
    ) else {
        return;
    };
    // SAFETY: both read the IO context Redis passed to `rdb_load`.
    let (name, db) = unsafe { (key_name(rdb), db_id(rdb)) };
    if !name.is_null() {
        let key = redis_module::RedisString::string_as_slice(name);
        crate::hold_registry::watch(item, db, key, deadline);
    }
}

fn log_io_error(rdb: *mut raw::RedisModuleIO, reason: &str) {
    let Some(log) = redis_api!(RedisModule_LogIOError) else {
        return;
    };
    let message = CString::new(format!("seckill: cannot load sale item: {reason}"));
    if let Ok(message) = message {
        // SAFETY: a "%s" format with one NUL-terminated argument.
        unsafe { log(rdb, c"warning".as_ptr(), c"%s".as_ptr(), message.as_ptr()) };
    }
}

unsafe extern "C" fn aof_rewrite(
    aof: *mut raw::RedisModuleIO,
    key: *mut raw::RedisModuleString,
    value: *mut c_void,
) {
    let Some(emit) = redis_api!(RedisModule_EmitAOF) else {
        return;
    };
    // AOF rewrites rebuild the item with SECKILL.LOADCHUNK, one chunk per
    // command, so that no single command carries a whole large ledger.
    // SAFETY: Redis rewrites a value of this type.
    let item = unsafe { item(value) };
    item.encode_chunks(|chunk| {
        // SAFETY: "sb" takes a RedisModuleString and a buffer with its length.
        unsafe {
            emit(
                aof,
                c"SECKILL.LOADCHUNK".as_ptr(),
                c"sb".as_ptr(),
                key,
                chunk.as_ptr().cast::<c_char>(),
                chunk.len(),
            )
        };
    });
}

/// Bytes Redis allocates for every module-typed value besides the module's
/// own: the object header and the module value wrapper (16 bytes each),
/// which MEMORY USAGE counts for Redis's own types but leaves to the module
/// for a module type.
const VALUE_WRAPPER: usize = 32;

unsafe extern "C" fn mem_usage(value: *const c_void) -> usize {
    // The item's own allocation as the allocator sized it: for an item
    // with no buyers that is most of what it costs.
    let own = match redis_api!(RedisModule_MallocSize) {
        // SAFETY: the value is a block of Redis's allocator (the module's
        // global allocator).
        Some(malloc_size) => unsafe { malloc_size(value.cast_mut()) },
        None => std::mem::size_of::<SaleItem>(),
    };
    // SAFETY: Redis measures a value of this type.
    VALUE_WRAPPER + own + unsafe { item(value) }.heap_usage()
}

unsafe extern "C" fn digest(md: *mut raw::RedisModuleDigest, value: *mut c_void) {
    let (Some(add_bytes), Some(add_integer), Some(end)) = (
        redis_api!(RedisModule_DigestAddStringBuffer),
        redis_api!(RedisModule_DigestAddLongLong),
        redis_api!(RedisModule_DigestEndSequence),
    ) else {
        return;
    };
    // SAFETY: `md` is the digest Redis passed for this call.
    let add_integer = |value: i64| unsafe { add_integer(md, value) };
    // SAFETY: `md` as above; the buffer is alive for the call.
    let add_bytes =
        |bytes: &[u8]| unsafe { add_bytes(md, bytes.as_ptr().cast::<c_char>(), bytes.len()) };
    // SAFETY: `md` as above.
    let end = || unsafe { end(md) };
    // SAFETY: Redis digests a value of this type.
    let item = unsafe { item(value) };
    let stats = item.stats();
    for field in [
        stats.stock,
        i64::from(stats.unlimited),
        stats.limit,
        stats.initial,
        stats.added,
        stats.sold,
        stats.refunded,
        stats.expired,
        stats.window.start,
        stats.window.end,
    ] {
        add_integer(field);
    }
    if let Some(outbox) = item.outbox() {
        add_bytes(&outbox.stream);
        add_integer(outbox.maxlen);
        // Unchanged for a confirmed stream, so older digests still compare.
        if !outbox.confirmed {
            add_integer(0);
        }
    }
    // A split item's transfers, in transfer id order (unchanged for an
    // item that never moved stock, so older digests still compare).
    if let Some(transfers) = item.transfers().filter(|t| !t.is_empty()) {
        add_integer(item.moved_out());
        add_integer(item.moved_in());
        for (id, transfer) in transfers.iter() {
            add_bytes(id);
            match transfer {
                Transfer::Out {
                    requested,
                    taken,
                    destination,
                    open,
                } => {
                    add_integer(*requested);
                    add_integer(*taken);
                    add_integer(i64::from(*open));
                    if let Some(destination) = destination {
                        add_bytes(destination);
                    }
                }
                Transfer::In { units, reply } => {
                    add_integer(-*units);
                    add_integer(*reply);
                }
            }
        }
    }
    end();
    // Each record is one buffer and its own sequence: Redis combines
    // sequences in an order-independent way, so hash-table order does not
    // change the digest, and each call to the digest hashes (SHA1), so a
    // record costs two, as a field of a hash does.
    let mut record = Vec::with_capacity(2 * MAX_ID_LEN + 64);
    for (user, units) in item.buyers() {
        record.clear();
        put_digest_id(&mut record, user);
        record.extend_from_slice(&units.to_le_bytes());
        add_bytes(&record);
        end();
    }
    for (id, request) in item.requests() {
        record.clear();
        put_digest_id(&mut record, id);
        put_digest_id(&mut record, request.user);
        for field in [request.qty, request.reply, request.deadline] {
            record.extend_from_slice(&field.to_le_bytes());
        }
        record.push(request.state.code());
        add_bytes(&record);
        end();
    }
}

/// An id with its length first, so that two ids side by side in one digest
/// buffer cannot be split differently.
fn put_digest_id(record: &mut Vec<u8>, id: &[u8]) {
    record.push(id.len() as u8);
    record.extend_from_slice(id);
}

/// Items being rebuilt chunk by chunk (SECKILL.LOADCHUNK) whose header's
/// records have not all come yet. Almost always 0 once loading ends; when
/// not, an AOF stopped short, and its items are checked then.
static PARTLY_LOADED: AtomicUsize = AtomicUsize::new(0);

/// Counts an item that became partly loaded (a header stored, a copy).
pub fn count_partly_loaded() {
    PARTLY_LOADED.fetch_add(1, Ordering::Relaxed);
}

/// Counts an item that stopped being partly loaded (complete, or freed).
pub fn uncount_partly_loaded() {
    let _ = PARTLY_LOADED.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1));
}

pub fn partly_loaded_items() -> usize {
    PARTLY_LOADED.load(Ordering::Relaxed)
}

unsafe extern "C" fn free(value: *mut c_void) {
    // SAFETY: Redis frees a value this module made with `Box::into_raw`,
    // once.
    let item = unsafe { Box::from_raw(value.cast::<SaleItem>()) };
    if item.is_partly_loaded() {
        uncount_partly_loaded();
    }
    // The registry entry is the item's own: it goes with it, wherever the
    // item is freed (DEL, FLUSHALL, expiry, on a lazyfree thread).
    crate::hold_registry::forget(&item);
    drop(item);
}

unsafe extern "C" fn free_effort(_key: *mut raw::RedisModuleString, value: *const c_void) -> usize {
    // SAFETY: Redis asks about a value of this type.
    unsafe { item(value) }.record_count()
}

/// COPY: a new item, which joins the sweep's registry under the key and
/// database it is copied to if it has pending holds. Its order stream is
/// unconfirmed, as after a RESTORE: the copy writes events for another key
/// than the one whoever named the stream vouched for.
unsafe extern "C" fn copy2(
    ctx: *mut raw::RedisModuleKeyOptCtx,
    value: *const c_void,
) -> *mut c_void {
    // SAFETY: Redis copies a value of this type.
    let mut copied = Box::new(unsafe { item(value) }.clone());
    copied.distrust_outbox();
    if copied.is_partly_loaded() {
        count_partly_loaded();
    }
    if let (Some(deadline), Some(to_key), Some(to_db)) = (
        copied.next_deadline(),
        redis_api!(RedisModule_GetToKeyNameFromOptCtx),
        redis_api!(RedisModule_GetToDbIdFromOptCtx),
    ) {
        // SAFETY: the key-operation context Redis passed to `copy2`.
        let (name, to_db) = unsafe { (to_key(ctx), to_db(ctx)) };
        if !name.is_null() {
            let key = redis_module::RedisString::string_as_slice(name.cast_mut());
            crate::hold_registry::watch(&copied, to_db, key, deadline);
        }
    }
    Box::into_raw(copied).cast::<c_void>()
}
