//! The SECKILL.* commands: parse and validate arguments, then hand the
//! write to `write`, which judges, applies, replicates and notifies in one
//! place; reads reply from the item directly. Sale rules live in
//! `sale_item`; this layer only translates between them and the wire.

use crate::args::Arg;
use crate::hash_slot::key_slot;
use crate::hold_registry;
use crate::item_key::{master_decided, now_ms, selected_db, ItemKey, WrongType};
use crate::order_stream;
use crate::persistence;
use crate::sale_item::codec::{is_header, DecodeError};
use crate::sale_item::{
    Change, Confirmation, Deduction, ItemError, LapseMoment, Moment, Order, Outbox, SaleItem,
    Stock, Take, Verdict, Window, MAX_DESTINATION_LEN, MAX_ID_LEN, UNLIMITED_STOCK,
};
use crate::stats;
use crate::write::{fence_repeat, publish, write_item, Decision, Effect, Judging, Published};
use redis_module::{raw, Context, RedisError, RedisResult, RedisValue};
use std::ffi::CStr;
use std::os::raw::{c_char, c_int, c_long};
use std::sync::atomic::{AtomicI64, Ordering};

// Replies of DEDUCT, ADD and REFUND that are not a stock figure. The
// numbers follow the Lua scripts these commands replace (see README).
pub const NOT_ENOUGH_STOCK: i64 = -1;
pub const LIMIT_EXCEEDED: i64 = -2;
// -3, no such item, is `write::NO_SUCH_ITEM`: every write answers it alike.
pub const REQUEST_REFUNDED: i64 = -4;
pub const SALE_NOT_STARTED: i64 = -5;
pub const SALE_ENDED: i64 = -6;

// Error replies. Redis sends them verbatim, so each starts with its code;
// where Redis itself has wording for the same fault, it is reused.
const ERR_NOT_INTEGER: &str = "ERR value is not an integer or out of range";
const ERR_NOT_POSITIVE: &str = "ERR value is out of range, must be positive";
const ERR_BAD_STOCK: &str =
    "ERR stock must be a non-negative integer below 9223372036854775807, or UNLIMITED";
const ERR_BAD_LIMIT: &str = "ERR LIMIT must be a non-negative integer";
const ERR_SYNTAX: &str = "ERR syntax error";
const ERR_OVERFLOW: &str = "ERR increment or decrement would overflow";
const ERR_BAD_EXPIRE: &str = "ERR invalid expire time in 'seckill.init' command";
const ERR_BAD_USER: &str = "ERR user id must be 1 to 128 bytes";
const ERR_BAD_REQUEST: &str = "ERR request id must be 1 to 128 bytes";
const ERR_BAD_ID: &str = "ERR user ids and request ids must be 1 to 128 bytes";
const ERR_FULL: &str = "ERR sale item is full: it cannot record more purchases";
const ERR_REQUEST_MISMATCH: &str =
    "ERR request id was already used by another user or for another quantity";
const ERR_TRANSFER_MISMATCH: &str =
    "ERR transfer id was already used for another quantity or the other direction";
const ERR_UNLIMITED_TRANSFER: &str = "ERR an unlimited item moves no units";
const ERR_TOO_MANY_TRANSFERS: &str =
    "ERR sale item is full: it cannot record more transfers (10000 at most)";
const ERR_BAD_TRANSFER: &str = "ERR transfer id must be 1 to 128 bytes";
const ERR_BAD_DESTINATION: &str = "ERR destination must be 1 to 255 bytes";
const ERR_WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";
const ERR_NO_ITEM_TO_LOAD: &str = "ERR no sale item to load this chunk into";
const ERR_STORE: &str = "ERR could not store the sale item";
const ERR_HOLD_WITHOUT_ID: &str = "ERR HOLD requires ID";
const ERR_STREAM_SLOT: &str = "ERR the order stream must hash to the item's slot: \
     give both keys the same hash tag, e.g. {sku:1} and {sku:1}:orders";
const ERR_STREAM_SELF: &str = "ERR the order stream cannot be the item's own key";
const ERR_BAD_MAXLEN: &str = "ERR MAXLEN must be a non-negative integer";
const ERR_BAD_HOLD: &str = "ERR invalid hold time in 'seckill.deduct' command";
const ERR_LOADCHUNK_CLIENT: &str =
    "ERR SECKILL.LOADCHUNK is only accepted while loading the AOF or from the master";
const ERR_BAD_WINDOW: &str =
    "ERR START and END must be non-negative Unix times in milliseconds, END after START";

impl From<WrongType> for RedisError {
    fn from(_: WrongType) -> Self {
        RedisError::Str(ERR_WRONGTYPE)
    }
}

impl From<ItemError> for RedisError {
    fn from(error: ItemError) -> Self {
        RedisError::Str(match error {
            ItemError::Overflow => ERR_OVERFLOW,
            ItemError::RequestMismatch => ERR_REQUEST_MISMATCH,
            ItemError::NonPositiveQuantity => ERR_NOT_POSITIVE,
            ItemError::BadId => ERR_BAD_ID,
            ItemError::TransferMismatch => ERR_TRANSFER_MISMATCH,
            ItemError::UnlimitedTransfer => ERR_UNLIMITED_TRANSFER,
            ItemError::TooManyTransfers => ERR_TOO_MANY_TRANSFERS,
            ItemError::Full => ERR_FULL,
            ItemError::BadWindow => ERR_BAD_WINDOW,
            ItemError::HoldWithoutId => ERR_HOLD_WITHOUT_ID,
        })
    }
}

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

/// Holds the ids a client's DEDUCT brings into `item` to
/// `seckill.max-id-length`. Not those from the master or the AOF: the
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
    let user_new = too_long(user) && !item.knows_buyer(user);
    let request_new = request_id.is_some_and(|id| too_long(id) && item.request(id).is_none());
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
    Err(RedisError::String(format!(
        "ERR {kind} must be 1 to {limit} bytes"
    )))
}

/// The moment a write judges lapses at, where this server decides.
fn lapses(judging: Judging) -> LapseMoment {
    judging.now
}

/// The moment this server judges a write at, when some of the item's holds
/// have lapsed by then: what a reply that counts them depends on, and so
/// what the write must carry to replicas and the AOF (`AT`).
fn judged_with_lapses(item: &SaleItem, judging: Judging) -> Option<i64> {
    judging.now.filter(|now| {
        item.next_deadline()
            .is_some_and(|deadline| deadline <= *now)
    })
}

/// The stock reads report: lapsed holds count as given back.
fn stock_now(item: &SaleItem, judging: Judging) -> i64 {
    match (judging.now, item.next_deadline()) {
        (Some(now), Some(_)) => item.remaining_at(now),
        _ => item.remaining(),
    }
}

/// A change to make, replicated as the client sent it.
fn verbatim<'a>(change: Change<'a>, event: &'static CStr, judging: Judging) -> Decision<'a> {
    Decision {
        change,
        effect: Effect::Verbatim,
        event: Some(event),
        at: lapses(judging),
    }
}

/// When an INIT-created item expires.
#[derive(Clone, Copy)]
enum Expiry {
    /// EX / PX: milliseconds from now.
    In(i64),
    /// EXAT / PXAT: Unix milliseconds.
    At(i64),
}

struct InitOptions {
    limit: i64,
    expiry: Option<Expiry>,
    window: Window,
    outbox: Option<Outbox>,
    replace: bool,
}

impl InitOptions {
    fn parse(args: &[Arg]) -> Result<Self, RedisError> {
        let mut options = InitOptions {
            limit: 0,
            expiry: None,
            window: Window::default(),
            outbox: None,
            replace: false,
        };
        let mut limit_seen = false;
        let (mut start, mut end) = (None, None);
        let (mut stream, mut maxlen) = (None, None);
        let mut args = args.iter();
        while let Some(option) = args.next() {
            if option.is_keyword("REPLACE") && !options.replace {
                options.replace = true;
                continue;
            }
            let bound = if option.is_keyword("START") && start.is_none() {
                Some(&mut start)
            } else if option.is_keyword("END") && end.is_none() {
                Some(&mut end)
            } else {
                None
            };
            if let Some(bound) = bound {
                *bound = Some(integer(args.next().ok_or(RedisError::Str(ERR_SYNTAX))?)?);
                continue;
            }
            if option.is_keyword("STREAM") && stream.is_none() {
                stream = Some(args.next().ok_or(RedisError::Str(ERR_SYNTAX))?);
                continue;
            }
            if option.is_keyword("MAXLEN") && maxlen.is_none() {
                maxlen = Some(args.next().ok_or(RedisError::Str(ERR_SYNTAX))?);
                continue;
            }
            let scale = if option.is_keyword("LIMIT") && !limit_seen {
                let limit = integer(args.next().ok_or(RedisError::Str(ERR_SYNTAX))?)?;
                if limit < 0 {
                    return Err(RedisError::Str(ERR_BAD_LIMIT));
                }
                options.limit = limit;
                limit_seen = true;
                continue;
            } else if options.expiry.is_some() {
                return Err(RedisError::Str(ERR_SYNTAX));
            } else if option.is_keyword("EX") || option.is_keyword("EXAT") {
                1000
            } else if option.is_keyword("PX") || option.is_keyword("PXAT") {
                1
            } else {
                return Err(RedisError::Str(ERR_SYNTAX));
            };
            let value = integer(args.next().ok_or(RedisError::Str(ERR_SYNTAX))?)?;
            let millis = value
                .checked_mul(scale)
                .filter(|millis| *millis > 0)
                .ok_or(RedisError::Str(ERR_BAD_EXPIRE))?;
            let absolute = option.as_bytes().len() == 4;
            options.expiry = Some(if absolute {
                Expiry::At(millis)
            } else {
                Expiry::In(millis)
            });
        }
        options.window = Window::new(start.unwrap_or(0), end.unwrap_or(0))?;
        options.outbox = match (stream, maxlen) {
            (Some(stream), maxlen) => Some(parse_outbox(stream, maxlen)?),
            (None, Some(_)) => return Err(RedisError::Str(ERR_SYNTAX)),
            (None, None) => None,
        };
        Ok(options)
    }
}

fn parse_outbox(stream: &Arg, maxlen: Option<&Arg>) -> Result<Outbox, RedisError> {
    let maxlen = match maxlen {
        Some(maxlen) => match integer(maxlen)? {
            maxlen if maxlen >= 0 => maxlen,
            _ => return Err(RedisError::Str(ERR_BAD_MAXLEN)),
        },
        None => 0,
    };
    if stream.as_bytes().is_empty() {
        return Err(RedisError::Str(ERR_SYNTAX));
    }
    Ok(Outbox {
        stream: stream.as_bytes().into(),
        maxlen,
        // Both commands that name a stream declare it as a key: the
        // server checked that the caller may write it.
        confirmed: true,
    })
}

/// Refuses an order stream the item cannot write in one step on any node,
/// and one of another type. Whether the caller may write it the server
/// checked already: both commands that name a stream declare it as a key.
fn check_outbox(ctx: &Context, item_key: &Arg, outbox: &Outbox) -> Result<(), RedisError> {
    if master_decided(ctx) {
        // The master checked; a replica or a replay applies. That includes
        // the confirmation of a restored item's stream, which may name a
        // stream in another slot than the item's (outside a cluster).
        return Ok(());
    }
    if *outbox.stream == *item_key.as_bytes() {
        return Err(RedisError::Str(ERR_STREAM_SELF));
    }
    if key_slot(&outbox.stream) != key_slot(item_key.as_bytes()) {
        return Err(RedisError::Str(ERR_STREAM_SLOT));
    }
    order_stream::check_type(ctx, &outbox.stream)
}

fn parse_stock(arg: &Arg) -> Result<Stock, RedisError> {
    if arg.is_keyword("UNLIMITED") {
        return Ok(Stock::Unlimited);
    }
    match integer(arg)? {
        // The largest integer is how an unlimited item reports its stock.
        units if (0..UNLIMITED_STOCK).contains(&units) => Ok(Stock::Limited(units)),
        _ => Err(RedisError::Str(ERR_BAD_STOCK)),
    }
}

/// SECKILL.INIT key stock [LIMIT n] [START ms] [END ms] [EX s | PX ms | EXAT s | PXAT ms] [REPLACE]
pub fn init(ctx: &Context, args: &[Arg]) -> RedisResult {
    let [_, name, stock_arg, options_args @ ..] = args else {
        return Err(RedisError::WrongArity);
    };
    let stock = parse_stock(stock_arg)?;
    let options = InitOptions::parse(options_args)?;
    if let Some(outbox) = &options.outbox {
        check_outbox(ctx, name, outbox)?;
    }
    // Many app servers initialise the same item at once; all but the first
    // find it there, and must not disturb WATCH or client tracking.
    if ItemKey::open_read(ctx, name).item()?.is_some() && !options.replace {
        return Ok(RedisValue::Integer(0));
    }
    // Every error is ruled out before the key is opened for writing.
    let expire_at = match options.expiry {
        None => None,
        Some(Expiry::At(unix_ms)) => Some(unix_ms),
        Some(Expiry::In(millis)) => Some(
            now_ms()
                .checked_add(millis)
                .ok_or(RedisError::Str(ERR_BAD_EXPIRE))?,
        ),
    };
    let mut key = ItemKey::open_write(ctx, name);
    let mut item = SaleItem::new(stock, options.limit);
    item.set_window(options.window);
    item.set_outbox(options.outbox.clone());
    if !key.store(item) {
        return Err(RedisError::Str(ERR_STORE));
    }
    if let Some(unix_ms) = expire_at {
        // Only fails on a key not open for writing or empty, which this one
        // is not; the item is stored either way, so the reply stays `1`.
        if !key.expire_at(unix_ms) {
            ctx.log_warning("seckill: could not set the expiry of a new item");
        }
    }
    let effect = match (options.expiry, expire_at) {
        // A relative expiry read the clock: send the deadline it reached.
        (Some(Expiry::In(_)), Some(unix_ms)) => {
            // The command as sent, with EX or PX replaced by PXAT.
            let unix_ms = unix_ms.to_string();
            let mut effect: Vec<&[u8]> = vec![name.as_bytes(), stock_arg.as_bytes()];
            // Every option but REPLACE takes a value, as parsed above.
            let mut rest = options_args.iter();
            while let Some(option) = rest.next() {
                if option.is_keyword("REPLACE") {
                    effect.push(option.as_bytes());
                    continue;
                }
                let value = rest.next().map_or(&[][..], Arg::as_bytes);
                if option.is_keyword("EX") || option.is_keyword("PX") {
                    effect.extend_from_slice(&[b"PXAT".as_slice(), unix_ms.as_bytes()]);
                } else {
                    effect.extend_from_slice(&[option.as_bytes(), value]);
                }
            }
            Effect::Rewritten(
                "SECKILL.INIT",
                effect.into_iter().map(<[u8]>::to_vec).collect(),
            )
        }
        _ => Effect::Verbatim,
    };
    let published = Published {
        confirmed: None,
        released: &[],
        effect,
        event: Some(c"seckill.init"),
    };
    publish(ctx, name, &published);
    Ok(RedisValue::Integer(1))
}

/// SECKILL.ADD key qty
pub fn add(ctx: &Context, args: &[Arg]) -> RedisResult {
    let (name, qty, transfer) = match args {
        [_, name, qty] => (name, qty, None),
        [_, name, qty, keyword, transfer_id, rest @ ..] if keyword.is_keyword("ID") => {
            // AT ms: the moment the master judged lapses at, for the stock
            // the transfer replies. Only the master and the AOF send it.
            let judged_at = match rest {
                [] => None,
                [at, ms] if at.is_keyword("AT") && master_decided(ctx) => Some(integer(ms)?),
                _ => return Err(RedisError::Str(ERR_SYNTAX)),
            };
            (
                name,
                qty,
                Some((id(transfer_id, ERR_BAD_TRANSFER)?, judged_at)),
            )
        }
        [_, _, _, ..] => return Err(RedisError::Str(ERR_SYNTAX)),
        _ => return Err(RedisError::WrongArity),
    };
    let qty = positive(qty)?;
    if let Some((transfer_id, judged_at)) = transfer {
        return receive_transfer(ctx, name, qty, transfer_id, judged_at);
    }
    write_item(
        ctx,
        name,
        |item, judging| {
            Ok(match item.judge_add(qty, lapses(judging))? {
                Verdict::Answer(remaining) => Err(RedisValue::Integer(remaining)),
                Verdict::Change(change) => Ok(verbatim(change, c"seckill.add", judging)),
            })
        },
        |item, _, judging| RedisValue::Integer(stock_now(item, judging)),
    )
}

/// SECKILL.ADD key qty ID transfer_id: units moved here from another part
/// of a split item, added once per transfer id. Replies the stock after
/// the first call, to that call and to every replay.
fn receive_transfer(
    ctx: &Context,
    name: &Arg,
    qty: i64,
    transfer_id: &[u8],
    judged_at: Option<i64>,
) -> RedisResult {
    write_item(
        ctx,
        name,
        |item, judging| {
            let at = judging.now.or(judged_at);
            let change = match item.judge_transfer_in(transfer_id, qty, at)? {
                Verdict::Answer(reply) => return Ok(Err(RedisValue::Integer(reply))),
                Verdict::Change(change) => change,
            };
            // The stock recorded as the reply counts lapsed holds as given
            // back: a replica must judge them at the master's moment.
            let Some(now) = judged_with_lapses(item, judging) else {
                return Ok(Ok(verbatim(change, c"seckill.add", judging)));
            };
            let effect = vec![
                name.as_bytes().to_vec(),
                qty.to_string().into_bytes(),
                b"ID".to_vec(),
                transfer_id.to_vec(),
                b"AT".to_vec(),
                now.to_string().into_bytes(),
            ];
            Ok(Ok(Decision {
                change,
                effect: Effect::Rewritten("SECKILL.ADD", effect),
                event: Some(c"seckill.add"),
                at: lapses(judging),
            }))
        },
        |_, reply, _| RedisValue::Integer(reply),
    )
}

/// SECKILL.TAKE key qty ID transfer_id [TO destination]: takes up to `qty`
/// units of the stock in hand out of this part, once per transfer id, and
/// keeps the transfer open until SETTLE. Replies the units taken.
pub fn take(ctx: &Context, args: &[Arg]) -> RedisResult {
    let [_, name, qty_arg, keyword, transfer_id, options @ ..] = args else {
        return Err(RedisError::WrongArity);
    };
    if !keyword.is_keyword("ID") {
        return Err(RedisError::Str(ERR_SYNTAX));
    }
    let requested = positive(qty_arg)?;
    let transfer_id = id(transfer_id, ERR_BAD_TRANSFER)?;
    let mut destination = None;
    // TAKEN k: the units the master took, so that a replica and an AOF
    // replay record exactly them whatever their stock says. Only the
    // master and the AOF send it.
    let mut decided = None;
    let mut options = options.iter();
    while let Some(option) = options.next() {
        let value = options.next().ok_or(RedisError::Str(ERR_SYNTAX))?;
        if option.is_keyword("TO") && destination.is_none() {
            let bytes = value.as_bytes();
            if bytes.is_empty() || bytes.len() > MAX_DESTINATION_LEN {
                return Err(RedisError::Str(ERR_BAD_DESTINATION));
            }
            destination = Some(bytes);
        } else if option.is_keyword("TAKEN") && decided.is_none() && master_decided(ctx) {
            decided = Some(integer(value)?);
        } else {
            return Err(RedisError::Str(ERR_SYNTAX));
        }
    }
    let take = Take {
        transfer_id,
        requested,
        destination,
        decided,
    };
    write_item(
        ctx,
        name,
        |item, judging| {
            let change = match item.judge_take(take)? {
                Verdict::Answer(taken) => return Ok(Err(RedisValue::Integer(taken))),
                Verdict::Change(change) => change,
            };
            let Change::Take { taken, .. } = change else {
                return Ok(Err(RedisValue::Integer(0)));
            };
            let mut effect: Vec<Vec<u8>> = vec![
                name.as_bytes().to_vec(),
                qty_arg.as_bytes().to_vec(),
                b"ID".to_vec(),
                transfer_id.to_vec(),
            ];
            if let Some(destination) = destination {
                effect.push(b"TO".to_vec());
                effect.push(destination.to_vec());
            }
            effect.push(b"TAKEN".to_vec());
            effect.push(taken.to_string().into_bytes());
            Ok(Ok(Decision {
                change,
                effect: Effect::Rewritten("SECKILL.TAKE", effect),
                event: Some(c"seckill.take"),
                at: lapses(judging),
            }))
        },
        |_, taken, _| RedisValue::Integer(taken),
    )
}

/// SECKILL.SETTLE key transfer_id: closes a transfer given out once its
/// units arrived. Replies 1 closed now, 0 closed before, -4 no such
/// transfer given out here.
pub fn settle(ctx: &Context, args: &[Arg]) -> RedisResult {
    let [_, name, transfer_id] = args else {
        return Err(RedisError::WrongArity);
    };
    let transfer_id = id(transfer_id, ERR_BAD_TRANSFER)?;
    write_item(
        ctx,
        name,
        |item, judging| {
            Ok(match item.judge_settle(transfer_id) {
                Verdict::Answer(reply) => Err(RedisValue::Integer(reply)),
                Verdict::Change(change) => Ok(verbatim(change, c"seckill.settle", judging)),
            })
        },
        |_, _, _| RedisValue::Integer(1),
    )
}

/// SECKILL.TRANSFERS key: the transfers this part gave out and that are
/// not settled, by transfer id, each `[transfer_id, units, destination]`
/// (nil destination if none was given); nil if there is no item.
pub fn transfers(ctx: &Context, args: &[Arg]) -> RedisResult {
    let [_, name] = args else {
        return Err(RedisError::WrongArity);
    };
    let key = ItemKey::open_read(ctx, name);
    let Some(item) = key.item()? else {
        return Ok(RedisValue::Null);
    };
    let open = item
        .open_transfers()
        .map(|(transfer_id, units, destination)| {
            RedisValue::Array(vec![
                RedisValue::StringBuffer(transfer_id.to_vec()),
                RedisValue::Integer(units),
                destination.map_or(RedisValue::Null, |d| RedisValue::StringBuffer(d.to_vec())),
            ])
        })
        .collect();
    Ok(RedisValue::Array(open))
}

/// How long a hold lasts, as DEDUCT was given it.
#[derive(Clone, Copy)]
enum Hold {
    /// HOLD seconds, from the server's clock.
    For(i64),
    /// HOLDUNTIL unix-ms, as replicated.
    Until(i64),
}

struct DeductOptions<'a> {
    request_id: Option<&'a [u8]>,
    hold: Option<Hold>,
    /// AT unix-ms: the moment the master judged lapsed holds at. Only its
    /// master or the AOF sends it, so that a replica records the reply the
    /// master gave.
    judged_at: Option<i64>,
}

impl<'a> DeductOptions<'a> {
    fn parse(args: &'a [Arg], from_master: impl Fn() -> bool) -> Result<Self, RedisError> {
        let mut options = DeductOptions {
            request_id: None,
            hold: None,
            judged_at: None,
        };
        let mut args = args.iter();
        while let Some(option) = args.next() {
            let value = args.next().ok_or(RedisError::Str(ERR_SYNTAX))?;
            if option.is_keyword("ID") && options.request_id.is_none() {
                options.request_id = Some(id(value, ERR_BAD_REQUEST)?);
            } else if option.is_keyword("HOLD") && options.hold.is_none() {
                let millis = integer(value)?
                    .checked_mul(1000)
                    .filter(|millis| *millis > 0)
                    .ok_or(RedisError::Str(ERR_BAD_HOLD))?;
                options.hold = Some(Hold::For(millis));
            } else if option.is_keyword("HOLDUNTIL") && options.hold.is_none() {
                let unix_ms = integer(value)?;
                if unix_ms <= 0 {
                    return Err(RedisError::Str(ERR_BAD_HOLD));
                }
                options.hold = Some(Hold::Until(unix_ms));
            } else if option.is_keyword("AT") && options.judged_at.is_none() && from_master() {
                options.judged_at = Some(integer(value)?);
            } else {
                return Err(RedisError::Str(ERR_SYNTAX));
            }
        }
        if options.hold.is_some() && options.request_id.is_none() {
            return Err(RedisError::Str(ERR_HOLD_WITHOUT_ID));
        }
        Ok(options)
    }
}

/// SECKILL.DEDUCT key user qty [ID request_id] [HOLD seconds | HOLDUNTIL unix-ms]
pub fn deduct(ctx: &Context, args: &[Arg]) -> RedisResult {
    let [_, name, user, qty_arg, options @ ..] = args else {
        return Err(RedisError::WrongArity);
    };
    let user = id(user, ERR_BAD_USER)?;
    let qty = positive(qty_arg)?;
    let options = DeductOptions::parse(options, || master_decided(ctx))?;
    let judge = |item: &SaleItem, judging: Judging| {
        check_configured_id_length(ctx, item, user, options.request_id)?;
        // The window is judged only where this server decides: a replica or
        // an AOF replay applies what its master already accepted.
        let moment = match judging.now {
            Some(now) if !item.window().is_always_open() => Moment::At(now),
            _ => Moment::Decided,
        };
        let hold_until = match options.hold {
            None => None,
            Some(Hold::Until(unix_ms)) => Some(unix_ms),
            Some(Hold::For(millis)) => Some(
                judging
                    .now
                    .unwrap_or_else(now_ms)
                    .checked_add(millis)
                    .ok_or(RedisError::Str(ERR_BAD_HOLD))?,
            ),
        };
        let order = Order {
            user,
            qty,
            request_id: options.request_id,
            hold_until,
        };
        let at = judging.now.or(options.judged_at);
        let change = match item.judge_deduct(order, moment, at)? {
            Verdict::Answer(deduction) => {
                if matches!(deduction, Deduction::Replayed { .. } | Deduction::Refunded) {
                    fence_repeat(ctx);
                }
                return Ok(Err(RedisValue::Integer(deduction_reply(deduction))));
            }
            Verdict::Change(change) => change,
        };
        // The reply a replica records must be the master's: send the
        // deadline a relative hold reached, and the moment lapses were
        // judged at when some were lapsing.
        let lapsing = judged_with_lapses(item, judging);
        let rewrite_hold = matches!(options.hold, Some(Hold::For(_)));
        let effect = match (options.request_id, hold_until) {
            (Some(request_id), _) if rewrite_hold || lapsing.is_some() => {
                let mut effect: Vec<Vec<u8>> = vec![
                    name.as_bytes().to_vec(),
                    user.to_vec(),
                    qty_arg.as_bytes().to_vec(),
                    b"ID".to_vec(),
                    request_id.to_vec(),
                ];
                if let Some(unix_ms) = hold_until {
                    effect.push(b"HOLDUNTIL".to_vec());
                    effect.push(unix_ms.to_string().into_bytes());
                }
                if let Some(now) = lapsing {
                    effect.push(b"AT".to_vec());
                    effect.push(now.to_string().into_bytes());
                }
                Effect::Rewritten("SECKILL.DEDUCT", effect)
            }
            _ => Effect::Verbatim,
        };
        Ok(Ok(Decision {
            change,
            effect,
            event: Some(c"seckill.deduct"),
            at,
        }))
    };
    let reply = write_item(ctx, name, judge, |_, remaining, _| {
        RedisValue::Integer(remaining)
    });
    if let Ok(RedisValue::Integer(code)) = reply {
        stats::count_deduct_reply(code);
    }
    reply
}

/// DEDUCT's reply when it sells nothing.
fn deduction_reply(deduction: Deduction) -> i64 {
    match deduction {
        Deduction::Bought { remaining } | Deduction::Replayed { remaining } => remaining,
        Deduction::SoldOut => NOT_ENOUGH_STOCK,
        Deduction::LimitExceeded => LIMIT_EXCEEDED,
        Deduction::Refunded => REQUEST_REFUNDED,
        Deduction::NotStarted => SALE_NOT_STARTED,
        Deduction::Ended => SALE_ENDED,
    }
}

/// SECKILL.CONFIRM key request_id
pub fn confirm(ctx: &Context, args: &[Arg]) -> RedisResult {
    let [_, name, request_id] = args else {
        return Err(RedisError::WrongArity);
    };
    let request_id = id(request_id, ERR_BAD_REQUEST)?;
    write_item(
        ctx,
        name,
        |item, judging| {
            Ok(match item.judge_confirm(request_id, lapses(judging)) {
                Verdict::Answer(confirmation) => {
                    fence_repeat(ctx);
                    Err(RedisValue::Integer(match confirmation {
                        Confirmation::Confirmed => 1,
                        Confirmation::AlreadyConfirmed => 0,
                        Confirmation::Invalid => REQUEST_REFUNDED,
                    }))
                }
                Verdict::Change(change) => Ok(verbatim(change, c"seckill.confirm", judging)),
            })
        },
        |_, _, _| RedisValue::Integer(1),
    )
}

/// SECKILL.RELEASE key request_id [request_id ...]: lets the named holds
/// lapse now. The master replicates its releases by clock this way.
pub fn release(ctx: &Context, args: &[Arg]) -> RedisResult {
    let [_, name, request_ids @ ..] = args else {
        return Err(RedisError::WrongArity);
    };
    if request_ids.is_empty() {
        return Err(RedisError::WrongArity);
    }
    let request_ids = request_ids
        .iter()
        .map(|request_id| id(request_id, ERR_BAD_REQUEST))
        .collect::<Result<Vec<_>, _>>()?;
    write_item(
        ctx,
        name,
        |item, judging| {
            Ok(match item.judge_release(&request_ids, lapses(judging)) {
                Verdict::Answer(released) => Err(RedisValue::Integer(released)),
                Verdict::Change(change) => Ok(verbatim(change, c"seckill.expire", judging)),
            })
        },
        |_, released, _| RedisValue::Integer(released),
    )
}

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
    let mut pending: Vec<_> = item
        .pending_holds(now_ms())
        .filter(|(_, request)| user.is_none_or(|user| request.user == user))
        .collect();
    // Ties between equal deadlines go by request id, not by where each
    // record happens to sit in memory, so a replica lists them alike.
    pending.sort_by(|(a_id, a), (b_id, b)| (a.deadline, a_id).cmp(&(b.deadline, b_id)));
    let holds = pending
        .into_iter()
        .map(|(request_id, request)| {
            RedisValue::Array(vec![
                RedisValue::StringBuffer(request_id.to_vec()),
                RedisValue::StringBuffer(request.user.to_vec()),
                RedisValue::Integer(request.qty),
                RedisValue::Integer(request.deadline),
            ])
        })
        .collect();
    Ok(RedisValue::Array(holds))
}

/// An item's counters as reads report them: as if every lapsed hold were
/// released already, without writing anything.
fn stats_now(item: &SaleItem) -> crate::sale_item::ItemStats {
    match item.next_deadline() {
        Some(_) => item.stats_at(now_ms()),
        None => item.stats(),
    }
}

/// SECKILL.GET key
pub fn get(ctx: &Context, args: &[Arg]) -> RedisResult {
    let [_, name] = args else {
        return Err(RedisError::WrongArity);
    };
    let key = ItemKey::open_read(ctx, name);
    Ok(match key.item()? {
        Some(item) if item.next_deadline().is_some() => {
            RedisValue::Integer(item.remaining_at(now_ms()))
        }
        Some(item) => RedisValue::Integer(item.remaining()),
        None => RedisValue::Null,
    })
}

/// SECKILL.BOUGHT key user
pub fn bought(ctx: &Context, args: &[Arg]) -> RedisResult {
    let [_, name, user] = args else {
        return Err(RedisError::WrongArity);
    };
    let user = id(user, ERR_BAD_USER)?;
    let key = ItemKey::open_read(ctx, name);
    Ok(match key.item()? {
        Some(item) if item.next_deadline().is_some() => {
            RedisValue::Integer(item.bought_at(user, now_ms()))
        }
        Some(item) => RedisValue::Integer(item.bought(user)),
        None => RedisValue::Null,
    })
}

/// SECKILL.REFUND key request_id
pub fn refund(ctx: &Context, args: &[Arg]) -> RedisResult {
    let [_, name, request_id] = args else {
        return Err(RedisError::WrongArity);
    };
    let request_id = id(request_id, ERR_BAD_REQUEST)?;
    write_item(
        ctx,
        name,
        |item, judging| {
            Ok(match item.judge_refund(request_id, lapses(judging))? {
                Verdict::Answer(units) => {
                    fence_repeat(ctx);
                    Err(RedisValue::Integer(units))
                }
                Verdict::Change(change) => Ok(verbatim(change, c"seckill.refund", judging)),
            })
        },
        |_, units, _| RedisValue::Integer(units),
    )
}

/// SECKILL.WINDOW key start end: moves the sale window of a live item
/// (0 leaves a side open).
pub fn window(ctx: &Context, args: &[Arg]) -> RedisResult {
    let [_, name, start, end] = args else {
        return Err(RedisError::WrongArity);
    };
    let window = Window::new(integer(start)?, integer(end)?)?;
    write_item(
        ctx,
        name,
        |item, judging| {
            // The same window again changes nothing: nothing to replicate.
            if item.window() == window {
                return Ok(Err(RedisValue::Integer(1)));
            }
            Ok(Ok(verbatim(
                Change::Window(window),
                c"seckill.window",
                judging,
            )))
        },
        |_, _, _| RedisValue::Integer(1),
    )
}

/// SECKILL.STREAM key [stream_key [MAXLEN n]]: sets the item's order
/// stream, or clears it when no stream is given.
pub fn stream(ctx: &Context, args: &[Arg]) -> RedisResult {
    let outbox = match args {
        [_, _] => None,
        [_, _, stream] => Some(parse_outbox(stream, None)?),
        [_, _, stream, keyword, maxlen] if keyword.is_keyword("MAXLEN") => {
            Some(parse_outbox(stream, Some(maxlen))?)
        }
        [_, _, _, _, _] => return Err(RedisError::Str(ERR_SYNTAX)),
        _ => return Err(RedisError::WrongArity),
    };
    let [_, name, ..] = args else {
        return Err(RedisError::WrongArity);
    };
    if let Some(outbox) = &outbox {
        check_outbox(ctx, name, outbox)?;
    }
    write_item(
        ctx,
        name,
        |item, judging| {
            if item.outbox() == outbox.as_ref() {
                return Ok(Err(RedisValue::Integer(1)));
            }
            Ok(Ok(verbatim(
                Change::Outbox(outbox),
                c"seckill.stream",
                judging,
            )))
        },
        |_, _, _| RedisValue::Integer(1),
    )
}

/// SECKILL.INFO key
pub fn info(ctx: &Context, args: &[Arg]) -> RedisResult {
    let [_, name] = args else {
        return Err(RedisError::WrongArity);
    };
    let key = ItemKey::open_read(ctx, name);
    let Some(item) = key.item()? else {
        return Ok(RedisValue::Null);
    };
    let stats = stats_now(item);
    let fields: [(&str, i64); 14] = [
        ("stock", stats.stock),
        ("unlimited", i64::from(stats.unlimited)),
        ("limit", stats.limit),
        ("initial", stats.initial),
        ("added", stats.added),
        ("sold", stats.sold),
        ("refunded", stats.refunded),
        ("held", stats.held),
        ("holds", i64::try_from(stats.holds).unwrap_or(i64::MAX)),
        ("expired", stats.expired),
        ("buyers", i64::try_from(stats.buyers).unwrap_or(i64::MAX)),
        (
            "requests",
            i64::try_from(stats.requests).unwrap_or(i64::MAX),
        ),
        ("start", stats.window.start),
        ("end", stats.window.end),
    ];
    // Replied by hand to keep the field order: a map under RESP3, a flat
    // field/value array under RESP2.
    raw::reply_with_map(ctx.get_raw(), fields.len() as c_long + 5);
    for (field, value) in fields {
        reply_with_bytes(ctx, field.as_bytes());
        raw::reply_with_long_long(ctx.get_raw(), value);
    }
    reply_with_bytes(ctx, b"stream");
    match item.outbox() {
        Some(outbox) => reply_with_bytes(ctx, &outbox.stream),
        None => {
            raw::reply_with_null(ctx.get_raw());
        }
    }
    reply_with_bytes(ctx, b"stream_maxlen");
    raw::reply_with_long_long(ctx.get_raw(), item.outbox().map_or(0, |o| o.maxlen));
    // After the older fields, so that clients reading by position still
    // find those where they were.
    let stream_confirmed = item.outbox().is_some_and(|outbox| outbox.confirmed);
    for (field, value) in [
        ("moved_out", stats.moved_out),
        ("moved_in", stats.moved_in),
        ("stream_confirmed", i64::from(stream_confirmed)),
    ] {
        reply_with_bytes(ctx, field.as_bytes());
        raw::reply_with_long_long(ctx.get_raw(), value);
    }
    Ok(RedisValue::NoReply)
}

fn reply_with_bytes(ctx: &Context, bytes: &[u8]) {
    raw::reply_with_string_buffer(ctx.get_raw(), bytes.as_ptr().cast::<c_char>(), bytes.len());
}

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
    let bad_chunk =
        |DecodeError(reason)| RedisError::String(format!("ERR invalid sale item chunk: {reason}"));
    if is_header(payload) {
        let (mut item, expected) = SaleItem::decode_header(payload).map_err(bad_chunk)?;
        item.begin_chunked_load(expected).map_err(bad_chunk)?;
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
        if let Some(deadline) = item.next_deadline() {
            hold_registry::watch(item, selected_db(ctx), name.as_bytes(), deadline);
        }
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
pub extern "C" fn on_loading_event(
    ctx: *mut raw::RedisModuleCtx,
    _event: raw::RedisModuleEvent,
    subevent: u64,
    _data: *mut std::os::raw::c_void,
) {
    let ended = subevent == raw::REDISMODULE_SUBEVENT_LOADING_ENDED
        || subevent == raw::REDISMODULE_SUBEVENT_LOADING_FAILED;
    if !ended || persistence::partly_loaded_items() == 0 {
        return;
    }
    let context = Context::new(ctx);
    let databases = crate::call::field(&context, "CONFIG", &[b"GET", b"databases"], "databases")
        .and_then(|count| count.parse::<c_int>().ok())
        .unwrap_or(16);
    for db in 0..databases {
        for key in partly_loaded_keys(&context, db) {
            crate::item_key::in_db(&context, db, &key, |name| {
                let mut item_key = ItemKey::open_read(&context, name);
                let outcome = match item_key.item_mut() {
                    Ok(Some(item)) if item.is_partly_loaded() => {
                        persistence::uncount_partly_loaded();
                        item.end_partial_load()
                    }
                    _ => Ok(()),
                };
                drop(item_key);
                if let Err(DecodeError(reason)) = outcome {
                    discard_item(&context, name, reason);
                }
            });
        }
    }
}

/// The keys of database `db` holding partly loaded items.
fn partly_loaded_keys(ctx: &Context, db: c_int) -> Vec<Vec<u8>> {
    let (Some(select_db), Some(cursor_create), Some(scan), Some(cursor_destroy)) = (
        redis_api!(RedisModule_SelectDb),
        redis_api!(RedisModule_ScanCursorCreate),
        redis_api!(RedisModule_Scan),
        redis_api!(RedisModule_ScanCursorDestroy),
    ) else {
        return Vec::new();
    };
    unsafe extern "C" fn collect(
        ctx: *mut raw::RedisModuleCtx,
        key_name: *mut raw::RedisModuleString,
        _key: *mut raw::RedisModuleKey,
        found: *mut std::os::raw::c_void,
    ) {
        // SAFETY: `found` is the Vec passed to RedisModule_Scan below.
        let found = unsafe { &mut *found.cast::<Vec<Vec<u8>>>() };
        let context = Context::new(ctx);
        let name = Arg::from_ptr(key_name);
        let key = ItemKey::open_read(&context, &name);
        if let Ok(Some(item)) = key.item() {
            if item.is_partly_loaded() {
                found.push(name.as_bytes().to_vec());
            }
        }
    }
    let mut found: Vec<Vec<u8>> = Vec::new();
    // SAFETY: the event context may select any database; the cursor is
    // destroyed below and `found` outlives the scan.
    unsafe {
        if select_db(ctx.get_raw(), db) != raw::REDISMODULE_OK as c_int {
            return found;
        }
        let cursor = cursor_create();
        while scan(
            ctx.get_raw(),
            cursor,
            Some(collect),
            (&mut found as *mut Vec<Vec<u8>>).cast(),
        ) != 0
        {}
        cursor_destroy(cursor);
    }
    found
}
