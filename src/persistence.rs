//! The `seckill--` module data type: how Redis saves, loads, rewrites,
//! copies, measures, digests and frees a sale item. All of it goes through
//! the chunk codec in `sale_item::codec`, so RDB files, DUMP payloads and AOF
//! rewrites share one format. The type's C callbacks are shims in
//! `server::data_type` that call the functions here.

use crate::sale_item::codec::{DecodeError, WholeLoad, FORMAT_VERSION};
use crate::sale_item::{SaleItem, Transfer, MAX_ID_LEN};
use crate::server::data_type::{Aof, Digest, Io};
use redis_module::native_types::RedisType;
use redis_module::raw;
use std::os::raw::c_int;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The version Redis stores with every saved item: the format's own
/// (`codec::FORMAT_VERSION`, also in each header chunk), so that there is
/// one version to bump. A loader accepts it and every older one (items
/// saved up to format 7 carry 5 here), and refuses newer ones.
pub const ENCODING_VERSION: i32 = FORMAT_VERSION as i32;

pub static SALE_ITEM_TYPE: RedisType = RedisType::new(
    "seckill--",
    ENCODING_VERSION,
    crate::server::data_type::METHODS,
);

/// RDB save (files, full syncs, DUMP): the item's chunks, one string each.
pub fn rdb_save(item: &SaleItem, rdb: &mut Io) {
    item.encode_chunks(|chunk| rdb.save(chunk));
}

/// RDB load (files, full syncs, RESTORE): the item, or `None` after the
/// reason is logged.
pub fn rdb_load(rdb: &mut Io, encver: c_int) -> Option<Box<SaleItem>> {
    match load_item(rdb, encver) {
        Ok(mut item) => {
            if !loading_a_snapshot(rdb) && !imported(rdb) {
                // A RESTORE (MIGRATE's too): the payload's bytes are the
                // client's, stream name included.
                item.distrust_order_stream();
            }
            // Registered at the address it keeps as the key's value.
            let item = Box::new(item);
            schedule_loaded(rdb, &item);
            Some(item)
        }
        Err(DecodeError(reason)) => {
            rdb.log_error(&format!("seckill: cannot load sale item: {reason}"));
            None
        }
    }
}

/// True while the server loads an RDB file, a full sync or the AOF, whose
/// bytes the server wrote; false for RESTORE, which runs as a command.
/// (A RESTORE replayed from the AOF runs while loading: the "restore"
/// keyspace event distrusts its stream where the module can hear it.)
fn loading_a_snapshot(rdb: &Io) -> bool {
    rdb.context_flags().is_some_and(|flags| {
        flags & (raw::REDISMODULE_CTX_FLAGS_LOADING | raw::REDISMODULE_CTX_FLAGS_ASYNC_LOADING) != 0
    })
}

/// True for a value loaded into a slot being imported here by an atomic
/// slot migration (Valkey 9): no client can write such a key, only the
/// migration's source, which sends what it holds and vouched for.
fn imported(rdb: &Io) -> bool {
    rdb.key_name().is_some_and(crate::slot_migration::importing)
}

fn load_item(rdb: &mut Io, encver: c_int) -> Result<SaleItem, DecodeError> {
    if encver > ENCODING_VERSION {
        return Err(DecodeError(
            "sale item saved by a newer version of the module",
        ));
    }
    let mut next_chunk = || rdb.load().ok_or(DecodeError("short read"));
    let mut load = WholeLoad::begin(next_chunk()?.as_ref())?;
    while !load.is_complete() {
        load.add_chunk(next_chunk()?.as_ref())?;
    }
    load.finish()
}

/// Puts an item loaded with pending holds (from an RDB file, a full sync or
/// RESTORE) on the sweep's registry, under the key it is loaded into.
fn schedule_loaded(rdb: &Io, item: &SaleItem) {
    if item.earliest_deadline().is_none() {
        return;
    }
    if let Some((key, db)) = rdb.key_and_db() {
        crate::hold_registry::watch_parts(item, db, key, |deadline| deadline);
    }
}

/// AOF rewrite: the item rebuilt with SECKILL.LOADCHUNK, one chunk per
/// command, so that no single command carries a whole large ledger.
pub fn aof_rewrite(item: &SaleItem, aof: &mut Aof) {
    item.encode_chunks(|chunk| aof.emit(c"SECKILL.LOADCHUNK", chunk));
}

/// Bytes Redis allocates for every module-typed value besides the module's
/// own: the object header and the module value wrapper (16 bytes each),
/// which MEMORY USAGE counts for Redis's own types but leaves to the module
/// for a module type.
const VALUE_WRAPPER: usize = 32;

/// MEMORY USAGE: `allocated` is the item's own allocation as the allocator
/// sized it, if it tells: for an item with no buyers that is most of what
/// it costs.
pub fn mem_usage(item: &SaleItem, allocated: Option<usize>) -> usize {
    let own = allocated.unwrap_or(std::mem::size_of::<SaleItem>());
    VALUE_WRAPPER + own + item.heap_usage()
}

/// DEBUG DIGEST: the item's counters, stream and transfers, then each
/// record as a sequence of its own.
pub fn digest(item: &SaleItem, digest: &mut Digest) {
    if item.has_variants() {
        // The item's own limit, then each variant under its name, each
        // record of it named with it too: a record moved to another
        // variant changes the digest.
        digest.add_integer(item.stats().limit);
        digest.add_integer(item.variants().len() as i64);
        for variant in item.variants() {
            digest.add_bytes(&variant.name);
        }
        digest.end_sequence();
        for variant in item.variants() {
            digest_part(&variant.item, &variant.name, digest);
        }
        return;
    }
    digest_part(item, b"", digest);
}

/// The digest of one item that sells, its records prefixed with `variant`
/// (empty for an item without variants, whose digest stays as it was).
fn digest_part(item: &SaleItem, variant: &[u8], digest: &mut Digest) {
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
        digest.add_integer(field);
    }
    if let Some(stream_setting) = item.order_stream() {
        digest.add_bytes(&stream_setting.stream);
        digest.add_integer(stream_setting.maxlen);
        // Unchanged for a confirmed stream, so older digests still compare.
        if !stream_setting.confirmed {
            digest.add_integer(0);
        }
    }
    // A split item's transfers, in transfer id order (unchanged for an
    // item that never moved stock, so older digests still compare).
    if let Some(transfers) = item.transfers().filter(|t| !t.is_empty()) {
        digest.add_integer(item.moved_out());
        digest.add_integer(item.moved_in());
        for (id, transfer) in transfers.iter() {
            digest.add_bytes(id);
            match transfer {
                Transfer::Out {
                    requested,
                    taken,
                    destination,
                    open,
                } => {
                    digest.add_integer(*requested);
                    digest.add_integer(*taken);
                    digest.add_integer(i64::from(*open));
                    if let Some(destination) = destination {
                        digest.add_bytes(destination);
                    }
                }
                Transfer::In { units, reply } => {
                    digest.add_integer(-*units);
                    digest.add_integer(*reply);
                }
            }
        }
    }
    // Left out while 0, so that older digests still compare.
    if item.replicated_moment() != 0 {
        digest.add_integer(item.replicated_moment());
    }
    digest.end_sequence();
    // Each record is one buffer and its own sequence: Redis combines
    // sequences in an order-independent way, so hash-table order does not
    // change the digest, and each call to the digest hashes (SHA1), so a
    // record costs two, as a field of a hash does.
    let mut record = Vec::with_capacity(3 * MAX_ID_LEN + 64);
    let start_record = |record: &mut Vec<u8>| {
        record.clear();
        if !variant.is_empty() {
            put_digest_id(record, variant);
        }
    };
    for (user, units) in item.buyers() {
        start_record(&mut record);
        put_digest_id(&mut record, user);
        record.extend_from_slice(&units.to_le_bytes());
        digest.add_bytes(&record);
        digest.end_sequence();
    }
    for (id, request) in item.requests() {
        start_record(&mut record);
        put_digest_id(&mut record, id);
        put_digest_id(&mut record, request.user);
        for field in [request.qty, request.reply, request.deadline] {
            record.extend_from_slice(&field.to_le_bytes());
        }
        record.push(request.state.code());
        digest.add_bytes(&record);
        digest.end_sequence();
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

/// The item goes (DEL, FLUSHALL, expiry, on a lazyfree thread).
pub fn free(item: Box<SaleItem>) {
    if item.is_partly_loaded() {
        uncount_partly_loaded();
    }
    // The registry entry is the item's own: it goes with it, wherever the
    // item is freed.
    crate::hold_registry::forget(&item);
    drop(item);
}

/// How much work freeing the item is, for lazyfree's choice.
pub fn free_effort(item: &SaleItem) -> usize {
    item.record_count()
}

/// COPY: a new item, which joins the sweep's registry under the key and
/// database it is copied to (`target`, if the server tells) if it has
/// pending holds. Its order stream is unconfirmed, as after a RESTORE: the
/// copy writes events for another key than the one whoever named the
/// stream vouched for.
pub fn copy<'a>(
    item: &SaleItem,
    target: impl FnOnce() -> Option<(&'a [u8], c_int)>,
) -> Box<SaleItem> {
    let mut copied = Box::new(item.clone());
    copied.distrust_order_stream();
    if copied.is_partly_loaded() {
        count_partly_loaded();
    }
    if copied.earliest_deadline().is_some() {
        if let Some((key, to_db)) = target() {
            crate::hold_registry::watch_parts(&copied, to_db, key, |deadline| deadline);
        }
    }
    copied
}
