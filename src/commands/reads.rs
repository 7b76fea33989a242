//! Read-only commands: GET, BOUGHT, HOLDS, INFO, SCAN, STATUS.

use super::*;
use crate::sale_item::{SaleItem, ScanRecord};
use crate::server::{now_ms, reply, Arg, ItemKey};
use redis_module::{Context, RedisError, RedisResult, RedisValue};

/// SECKILL.HOLDS key [user]: pending holds, earliest deadline first, each
/// as [request_id, user, qty, deadline].
pub fn holds(ctx: &Context, args: &[Arg]) -> RedisResult {
    let (name, user) = match args {
        [_, name] => (name, None),
        [_, name, user] => (name, Some(id(user, ERR_BAD_USER)?)),
        _ => return Err(RedisError::WrongArity),
    };
    let key = ItemKey::open_read(ctx, name);
    let Some(item) = key.item()? else {
        return Ok(RedisValue::Null);
    };
    let now = now_ms();
    let mut pending: Vec<_> = item
        .parts()
        .flat_map(|part| {
            part.pending_holds(now, user)
                .map(move |(request_id, request)| (request_id, request, part.variant_label()))
        })
        .collect();
    // Ties between equal deadlines go by request id, not by where each
    // record happens to sit in memory, so a replica lists them alike.
    pending.sort_by(|(a_id, a, _), (b_id, b, _)| (a.deadline, a_id).cmp(&(b.deadline, b_id)));
    let holds = pending
        .into_iter()
        .map(|(request_id, request, variant)| {
            let mut hold = vec![
                RedisValue::StringBuffer(request_id.to_vec()),
                RedisValue::StringBuffer(request.user.to_vec()),
                RedisValue::Integer(request.qty),
                RedisValue::Integer(request.deadline),
            ];
            // The variant, on an item that has them.
            if let Some(variant) = variant {
                hold.push(RedisValue::StringBuffer(variant.to_vec()));
            }
            RedisValue::Array(hold)
        })
        .collect();
    Ok(RedisValue::Array(holds))
}

/// Most records one SCAN call reads, whatever its COUNT: a call that read
/// a whole item of millions would stop the server.
pub const SCAN_MOST: usize = 10_000;

/// SECKILL.SCAN key cursor [COUNT count] [VARIANT name]: up to `count`
/// records (10 by default, at most `SCAN_MOST`) from `cursor` on, as
/// [next-cursor, [record ...]]; the cursor 0 starts a scan, and a reply of
/// 0 ends it. A buyer is ["buyer", user, units]; a request id
/// ["request", id, user, qty, status, deadline]. An item with variants is
/// scanned a variant at a time.
pub fn scan(ctx: &Context, args: &[Arg]) -> RedisResult {
    let [_, name, cursor, options @ ..] = args else {
        return Err(RedisError::WrongArity);
    };
    let (mut count, mut variant) = (None, None);
    let mut options = options.iter();
    while let Some(option) = options.next() {
        let value = options.next().ok_or(RedisError::Str(ERR_SYNTAX))?;
        if option.is_keyword("COUNT") && count.is_none() {
            count = Some(value);
        } else if option.is_keyword("VARIANT") && variant.is_none() {
            variant = Some(value.as_bytes());
        } else {
            return Err(RedisError::Str(ERR_SYNTAX));
        }
    }
    let cursor = std::str::from_utf8(cursor.as_bytes())
        .ok()
        .and_then(|text| text.parse::<u64>().ok())
        .ok_or(RedisError::Str(ERR_INVALID_CURSOR))?;
    let count = match count {
        None => 10,
        Some(count) => match integer(count)? {
            count if count < 1 => return Err(RedisError::Str(ERR_SYNTAX)),
            count => usize::try_from(count).unwrap_or(usize::MAX).min(SCAN_MOST),
        },
    };
    let key = ItemKey::open_read(ctx, name);
    let Some(item) = key.item()? else {
        // As HSCAN answers for a missing key: a scan that is over.
        return Ok(RedisValue::Array(vec![
            RedisValue::BulkString("0".to_owned()),
            RedisValue::Array(Vec::new()),
        ]));
    };
    let item = read_part(item, variant, false)?;
    let (records, next) = item
        .scan(cursor, count, now_ms())
        .map_err(|_| RedisError::Str(ERR_INVALID_CURSOR))?;
    // Written piece by piece: a page of 1,000 records is 6,000 values,
    // and a `RedisValue` per value, built then copied, doubled the call.
    reply::array(ctx, 2);
    reply::bytes(ctx, next.to_string().as_bytes());
    reply::array(ctx, records.len());
    for record in records {
        match record {
            ScanRecord::Buyer { user, units } => {
                reply::array(ctx, 3);
                reply::simple(ctx, c"buyer");
                reply::bytes(ctx, user);
                reply::integer(ctx, units);
            }
            ScanRecord::Request {
                id,
                user,
                qty,
                status,
                deadline,
            } => {
                reply::array(ctx, 6);
                reply::simple(ctx, c"request");
                reply::bytes(ctx, id);
                reply::bytes(ctx, user);
                reply::integer(ctx, qty);
                reply::simple(ctx, status.c_name());
                reply::integer(ctx, deadline);
            }
        }
    }
    Ok(RedisValue::NoReply)
}

/// SECKILL.STATUS key request_id: where one purchase stands, as a map
/// (a flat field/value array under RESP2) of `status`, `user`, `qty` and
/// `deadline`; `status` `unknown`, with a nil user, for a request id the
/// item never saw. Nil if no such item.
pub fn status(ctx: &Context, args: &[Arg]) -> RedisResult {
    let [_, name, request_id] = args else {
        return Err(RedisError::WrongArity);
    };
    let request_id = id(request_id, ERR_BAD_REQUEST)?;
    let key = ItemKey::open_read(ctx, name);
    let Some(item) = key.item()? else {
        return Ok(RedisValue::Null);
    };
    let variant = item.variant_of_request(request_id);
    let part = variant
        .and_then(|index| item.variant(index))
        .unwrap_or(item);
    let report = part.request_report(request_id, now_ms());
    // The variant, on an item that has them.
    reply::map(ctx, if item.has_variants() { 5 } else { 4 });
    reply::bytes(ctx, b"status");
    reply::simple(
        ctx,
        report.map_or(c"unknown", |report| report.status.c_name()),
    );
    reply::bytes(ctx, b"user");
    match report {
        Some(report) => reply::bytes(ctx, report.user),
        None => reply::null(ctx),
    }
    reply::bytes(ctx, b"qty");
    reply::integer(ctx, report.map_or(0, |report| report.qty));
    reply::bytes(ctx, b"deadline");
    reply::integer(ctx, report.map_or(0, |report| report.deadline));
    if item.has_variants() {
        reply::bytes(ctx, b"variant");
        match part.variant_label() {
            Some(label) => reply::bytes(ctx, label),
            None => reply::null(ctx),
        }
    }
    Ok(RedisValue::NoReply)
}

/// The `VARIANT name` a read may end with.
fn variant_option<'a>(rest: &'a [Arg<'a>]) -> Result<Option<&'a [u8]>, RedisError> {
    match rest {
        [] => Ok(None),
        [keyword, name] if keyword.is_keyword("VARIANT") => Ok(Some(name.as_bytes())),
        _ => Err(RedisError::Str(ERR_SYNTAX)),
    }
}

/// What a read with `variant` reads of `item`: the variant named, or the
/// item (the sum of its variants, where `whole` allows it).
fn read_part<'i>(
    item: &'i SaleItem,
    variant: Option<&[u8]>,
    whole: bool,
) -> Result<&'i SaleItem, RedisError> {
    match variant {
        None if whole || !item.has_variants() => Ok(item),
        None => Err(RedisError::Str(ERR_VARIANT_NEEDED)),
        Some(_) => {
            let index = variant_place(item, variant)?;
            item.variant(index)
                .ok_or(RedisError::Str(ERR_NO_SUCH_VARIANT))
        }
    }
}

/// SECKILL.GET key [VARIANT name]: the stock; of an item with variants,
/// theirs added up, or the one named.
pub fn get(ctx: &Context, args: &[Arg]) -> RedisResult {
    let [_, name, rest @ ..] = args else {
        return Err(RedisError::WrongArity);
    };
    let variant = variant_option(rest)?;
    let key = ItemKey::open_read(ctx, name);
    let item = match key.item()? {
        Some(item) => Some(read_part(item, variant, true)?),
        None => None,
    };
    Ok(match item {
        Some(item) if item.has_variants() => {
            RedisValue::Integer(item.total_stats_at(now_ms()).stock)
        }
        Some(item) => RedisValue::Integer(stock_now(item)),
        None => RedisValue::Null,
    })
}

/// The stock of `item` (one without variants) now, lapsed holds given
/// back: what `GET` replies.
fn stock_now(item: &SaleItem) -> i64 {
    if item.next_deadline().is_some() {
        item.remaining_at(now_ms())
    } else {
        item.remaining()
    }
}

/// SECKILL.VARIANTS key: each variant's name and stock, in the order INIT
/// named them, as `HGETALL` replies a hash (a map under RESP3); empty for
/// an item without variants, nil without an item. What a rebalancer or a
/// storefront needs to learn a drop's sizes from the drop itself.
pub fn variants(ctx: &Context, args: &[Arg]) -> RedisResult {
    let [_, name] = args else {
        return Err(RedisError::WrongArity);
    };
    let key = ItemKey::open_read(ctx, name);
    let Some(item) = key.item()? else {
        return Ok(RedisValue::Null);
    };
    let variants = item.variants();
    reply::map(ctx, variants.len());
    for variant in variants {
        reply::bytes(ctx, &variant.name);
        reply::integer(ctx, stock_now(&variant.item));
    }
    Ok(RedisValue::NoReply)
}

/// SECKILL.BOUGHT key user [VARIANT name]: the units `user` holds; of an
/// item with variants, across them, or of the one named.
pub fn bought(ctx: &Context, args: &[Arg]) -> RedisResult {
    let [_, name, user, rest @ ..] = args else {
        return Err(RedisError::WrongArity);
    };
    let user = id(user, ERR_BAD_USER)?;
    let variant = variant_option(rest)?;
    let key = ItemKey::open_read(ctx, name);
    let item = match key.item()? {
        Some(item) => Some(read_part(item, variant, true)?),
        None => None,
    };
    Ok(match item {
        Some(item) if item.has_variants() => {
            RedisValue::Integer(item.total_bought_at(user, now_ms()))
        }
        Some(item) if item.next_deadline().is_some() => {
            RedisValue::Integer(item.bought_at(user, now_ms()))
        }
        Some(item) => RedisValue::Integer(item.bought(user)),
        None => RedisValue::Null,
    })
}

/// The value of one field of `SECKILL.INFO`.
enum Field<'a> {
    Integer(i64),
    /// Null when absent.
    Bytes(Option<&'a [u8]>),
}

/// SECKILL.INFO key [VARIANT name]: the item's counters; of an item with
/// variants, theirs added up (its own `limit`), or the named one's.
pub fn info(ctx: &Context, args: &[Arg]) -> RedisResult {
    let [_, name, rest @ ..] = args else {
        return Err(RedisError::WrongArity);
    };
    let variant = variant_option(rest)?;
    let key = ItemKey::open_read(ctx, name);
    let Some(item) = key.item()? else {
        return Ok(RedisValue::Null);
    };
    let item = read_part(item, variant, true)?;
    let stats = if item.has_variants() {
        item.total_stats_at(now_ms())
    } else {
        stats_now(item)
    };
    let count = |n: usize| Field::Integer(i64::try_from(n).unwrap_or(i64::MAX));
    let stream = item.order_stream();
    // Fields added later come after the older ones, so that clients
    // reading by position still find those where they were.
    let fields = [
        ("stock", Field::Integer(stats.stock)),
        ("unlimited", Field::Integer(i64::from(stats.unlimited))),
        ("limit", Field::Integer(stats.limit)),
        ("initial", Field::Integer(stats.initial)),
        ("added", Field::Integer(stats.added)),
        ("sold", Field::Integer(stats.sold)),
        ("refunded", Field::Integer(stats.refunded)),
        ("held", Field::Integer(stats.held)),
        ("holds", count(stats.holds)),
        ("expired", Field::Integer(stats.expired)),
        ("buyers", count(stats.buyers)),
        ("requests", count(stats.requests)),
        ("start", Field::Integer(stats.window.start)),
        ("end", Field::Integer(stats.window.end)),
        (
            "stream",
            Field::Bytes(stream.map(|setting| &setting.stream[..])),
        ),
        (
            "stream_maxlen",
            Field::Integer(stream.map_or(0, |setting| setting.maxlen)),
        ),
        ("moved_out", Field::Integer(stats.moved_out)),
        ("moved_in", Field::Integer(stats.moved_in)),
        (
            "stream_confirmed",
            Field::Integer(i64::from(stream.is_some_and(|setting| setting.confirmed))),
        ),
        ("variants", count(item.variants().len())),
    ];
    // Replied by hand to keep the field order: a map under RESP3, a flat
    // field/value array under RESP2.
    reply::map(ctx, fields.len());
    for (field, value) in fields {
        reply::bytes(ctx, field.as_bytes());
        match value {
            Field::Integer(value) => reply::integer(ctx, value),
            Field::Bytes(Some(bytes)) => reply::bytes(ctx, bytes),
            Field::Bytes(None) => reply::null(ctx),
        }
    }
    Ok(RedisValue::NoReply)
}
