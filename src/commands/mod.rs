//! The SECKILL.* commands: parse and validate arguments, then hand the
//! write to `write`, which judges, applies, replicates and notifies in one
//! place; reads reply from the item directly. Sale rules live in
//! `sale_item`; this layer only translates between them and the wire.

mod import;
mod items;
mod load_chunk;
mod orders;
mod reads;
mod sales;
mod transfers;

use crate::errors::*;
pub use import::import;
pub use items::{add, init, init_stream_position, stream, window};
pub use load_chunk::{load_chunk, on_loading_event};
pub use orders::{mconfirm, mdeduct, mrefund, MAX_ORDER_LINES};
pub use reads::{bought, get, holds, info, scan, status, variants};
pub use sales::{confirm, deduct, refund, release};
pub use transfers::{settle, take, transfers};

use crate::sale_item::{Change, Moment, SaleItem, MAX_ID_LEN};
use crate::server::{now_ms, Arg};
use crate::write::{master_decided, Decision, Effect};
use redis_module::{Context, RedisError};
use std::ffi::CStr;
use std::sync::atomic::{AtomicI64, Ordering};

// Replies of DEDUCT, ADD and REFUND that are not a stock figure. The
// numbers follow the Lua scripts these commands replace (see README).
pub const NOT_ENOUGH_STOCK: i64 = -1;
pub const LIMIT_EXCEEDED: i64 = -2;
// -3, no such item, is `write::NO_SUCH_ITEM`: every write answers it alike.
pub const CANCELLED: i64 = -4;
pub const SALE_NOT_STARTED: i64 = -5;
pub const SALE_ENDED: i64 = -6;
// What CONFIRM and REFUND reply with DETAIL where they would otherwise
// answer `-4` or `0` for three different things: new codes, so that the
// old ones keep their meaning for callers that do not ask.
pub const REQUEST_REFUNDED: i64 = -7;
pub const REQUEST_LAPSED: i64 = -8;
pub const UNKNOWN_REQUEST: i64 = -9;

fn integer(arg: &Arg) -> Result<i64, RedisError> {
    arg.integer().ok_or(RedisError::Str(ERR_NOT_INTEGER))
}

fn positive(arg: &Arg) -> Result<i64, RedisError> {
    match integer(arg)? {
        value if value > 0 => Ok(value),
        _ => Err(RedisError::Str(ERR_NOT_POSITIVE)),
    }
}

fn id<'a>(arg: &'a Arg, error: &'static str) -> Result<&'a [u8], RedisError> {
    let bytes = arg.as_bytes();
    if bytes.is_empty() || bytes.len() > MAX_ID_LEN {
        return Err(RedisError::Str(error));
    }
    Ok(bytes)
}

/// The longest user id or request id a client may bring into an item
/// (`seckill.max-id-length`, at most `MAX_ID_LEN`).
pub static MAX_ID_LENGTH: AtomicI64 = AtomicI64::new(MAX_ID_LEN as i64);

/// Holds the ids a client's DEDUCT brings into `item` (any of its
/// variants) to `seckill.max-id-length`. Not those from the master or the AOF: the
/// master accepted them under its own setting, and a replica refusing them
/// would diverge. Ids already in the item pass whatever the setting, so
/// that a retry of a purchase made before the setting was lowered is still
/// answered as the first call was.
fn check_configured_id_length(
    ctx: &Context,
    item: &SaleItem,
    user: &[u8],
    request_id: Option<&[u8]>,
) -> Result<(), RedisError> {
    let limit = usize::try_from(MAX_ID_LENGTH.load(Ordering::Relaxed)).unwrap_or(MAX_ID_LEN);
    let too_long = |id: &[u8]| id.len() > limit;
    let user_new = too_long(user) && !item.parts().any(|part| part.knows_buyer(user));
    let request_new = request_id
        .is_some_and(|id| too_long(id) && !item.parts().any(|part| part.request(id).is_some()));
    let kind = if user_new {
        "user id"
    } else if request_new {
        "request id"
    } else {
        return Ok(());
    };
    if master_decided(ctx) {
        return Ok(());
    }
    Err(id_too_long(kind, limit))
}

/// The moment this server judges a write at, when some of the item's holds
/// have lapsed by then: what a reply that counts them depends on, and so
/// what the write must carry to replicas and the AOF (`AT`).
fn judged_with_lapses(item: &SaleItem, moment: Moment) -> Option<i64> {
    moment.now().filter(|now| {
        item.next_deadline()
            .is_some_and(|deadline| deadline <= *now)
    })
}

/// The stock reads report: lapsed holds count as given back.
fn stock_now(item: &SaleItem, moment: Moment) -> i64 {
    match (moment.now(), item.next_deadline()) {
        (Some(now), Some(_)) => item.remaining_at(now),
        _ => item.remaining(),
    }
}

/// A change to make, replicated as the client sent it.
fn verbatim<'a>(change: Change<'a>, event: &'static CStr, moment: Moment) -> Decision<'a> {
    Decision {
        change,
        effect: Effect::Verbatim,
        event: Some(event),
        moment,
    }
}

/// An item's counters as reads report them: as if every lapsed hold were
/// released already, without writing anything.
fn stats_now(item: &SaleItem) -> crate::sale_item::ItemStats {
    match item.next_deadline() {
        Some(_) => item.stats_at(now_ms()),
        None => item.stats(),
    }
}

/// The place of the variant `name` names in `item`, or why none: an item
/// with variants needs one named, and one without has none.
fn variant_place(item: &SaleItem, name: Option<&[u8]>) -> Result<usize, RedisError> {
    // A purchase of a size: found at once, without the general dispatch.
    if let Some(index) = name.and_then(|name| item.variant_index(name)) {
        return Ok(index);
    }
    crate::write::part_index(item, crate::write::Part::Variant(name))?
        .ok_or(RedisError::Str(ERR_VARIANT_NEEDED))
}
