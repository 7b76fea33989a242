//! Rebuilding items from the AOF: SECKILL.LOADCHUNK, and at the end of
//! loading, what to do with items whose chunks stopped short.

use super::*;
use crate::hold_registry;
use crate::persistence;
use crate::sale_item::codec::{is_header, is_variants_header, DecodeError, VariantsHeader};
use crate::sale_item::SaleItem;
use crate::server::context::{in_db, scan_db};
use crate::server::{selected_db, Arg, ItemKey};
use crate::write::{master_decided, publish, Effect, Published};
use redis_module::{raw, Context, RedisError, RedisResult, RedisValue};
use std::os::raw::c_int;

/// SECKILL.LOADCHUNK key payload: rebuilds an item from the chunks an AOF
/// rewrite emits. A header chunk replaces the item; record chunks extend it,
/// and once the header's records are all in the whole item is checked.
/// Only the AOF (while loading) and the master may send it: from a client
/// it would let anyone write any bookkeeping into a live item.
pub fn load_chunk(ctx: &Context, args: &[Arg]) -> RedisResult {
    let [_, name, payload] = args else {
        return Err(RedisError::WrongArity);
    };
    if !master_decided(ctx) {
        return Err(RedisError::Str(ERR_LOADCHUNK_CLIENT));
    }
    let payload = payload.as_bytes();
    let bad_chunk = |DecodeError(reason)| bad_chunk(reason);
    let variant_begins = is_header(payload) && {
        let key = ItemKey::open_read(ctx, name);
        matches!(key.item(), Ok(Some(item)) if item.awaits_variant())
    };
    if is_variants_header(payload) || (is_header(payload) && !variant_begins) {
        let item = if is_variants_header(payload) {
            SaleItem::begin_variants_load(VariantsHeader::decode(payload).map_err(bad_chunk)?)
        } else {
            let (mut item, expected) = SaleItem::decode_header(payload).map_err(bad_chunk)?;
            item.begin_chunked_load(expected).map_err(bad_chunk)?;
            item
        };
        let partly_loaded_item = item.is_partly_loaded();
        let mut key = ItemKey::open_write(ctx, name);
        key.item()?;
        if !key.store(item) {
            return Err(RedisError::Str(ERR_STORE));
        }
        if partly_loaded_item {
            persistence::count_partly_loaded();
        }
    } else {
        let mut key = ItemKey::open_read(ctx, name);
        let item = key
            .item_mut()?
            .ok_or(RedisError::Str(ERR_NO_ITEM_TO_LOAD))?;
        if !item.is_partly_loaded() {
            // A stray chunk for an item loaded in full: refused, and the
            // item, checked already, stays.
            return Err(bad_chunk(DecodeError("no records are due for this item")));
        }
        let loaded = item.load_next_chunk(payload);
        if !item.is_partly_loaded() {
            persistence::uncount_partly_loaded();
        }
        if let Err(error) = loaded {
            // Records that disagree with their item: the item cannot be
            // trusted, and saved it would make the next load fail.
            drop(key);
            discard_item(ctx, name, error.0);
            return Err(bad_chunk(error));
        }
        hold_registry::watch_parts(item, selected_db(ctx), name.as_bytes(), |deadline| deadline);
    }
    let published = Published {
        confirmed: None,
        released: &[],
        effect: Effect::Verbatim,
        event: Some(c"seckill.load"),
    };
    publish(ctx, name, &published);
    Ok(RedisValue::SimpleStringStatic("OK"))
}

/// Deletes the item at `name`, rebuilt from chunks that do not add up.
fn discard_item(ctx: &Context, name: &Arg, reason: &str) {
    let mut key = ItemKey::open_write(ctx, name);
    key.delete();
    let key_name = String::from_utf8_lossy(name.as_bytes());
    ctx.log_warning(&format!(
        "seckill: dropped the sale item at '{key_name}' rebuilt from SECKILL.LOADCHUNK: {reason}"
    ));
}

/// When loading ends with items whose chunks stopped short (an AOF cut
/// off): each keeps the records that came if they agree with its counters,
/// and is dropped otherwise. They are found by scanning every database, as
/// they may have been renamed, moved, copied or swapped since their header.
pub fn on_loading_event(ctx: &Context, subevent: u64) {
    let ended = subevent == raw::REDISMODULE_SUBEVENT_LOADING_ENDED
        || subevent == raw::REDISMODULE_SUBEVENT_LOADING_FAILED;
    // Only loads in which no client runs but the AOF's: during a replica's
    // load the server may keep serving clients (`repl-diskless-load
    // swapdb`), whose calls are their own.
    crate::write::loading_changed(
        subevent == raw::REDISMODULE_SUBEVENT_LOADING_RDB_START
            || subevent == raw::REDISMODULE_SUBEVENT_LOADING_AOF_START,
    );
    if !ended || persistence::partly_loaded_items() == 0 {
        return;
    }
    let databases = crate::call::database_count(ctx);
    for db in 0..databases {
        for key in partly_loaded_keys(ctx, db) {
            in_db(ctx, db, &key, |name| {
                let mut item_key = ItemKey::open_read(ctx, name);
                let outcome = match item_key.item_mut() {
                    Ok(Some(item)) if item.is_partly_loaded() => {
                        persistence::uncount_partly_loaded();
                        item.end_partial_load()
                    }
                    _ => Ok(()),
                };
                drop(item_key);
                if let Err(DecodeError(reason)) = outcome {
                    discard_item(ctx, name, reason);
                }
            });
        }
    }
}

/// The keys of database `db` holding partly loaded items.
fn partly_loaded_keys(ctx: &Context, db: c_int) -> Vec<Vec<u8>> {
    let mut found: Vec<Vec<u8>> = Vec::new();
    scan_db(ctx, db, |context, name| {
        let key = ItemKey::open_quietly(context, name);
        if let Ok(Some(item)) = key.item() {
            if item.is_partly_loaded() {
                found.push(name.as_bytes().to_vec());
            }
        }
    });
    found
}
