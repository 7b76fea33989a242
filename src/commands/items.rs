//! Commands that create and shape an item: INIT, ADD (restock), WINDOW,
//! STREAM.

use super::transfers::receive_transfer;
use super::*;
use crate::hash_slot::key_slot;
use crate::order_stream;
use crate::rewrite::{self, Rewrite};
use crate::sale_item::{
    Change, SaleItem, Stock, StreamSetting, VariantSpec, Verdict, Window, MAX_VARIANTS,
    UNLIMITED_STOCK,
};
use crate::server::{now_ms, Arg, ItemKey};
use crate::write::{
    fence_repeat, master_decided, publish, write_part, Effect, Judgement, Part, Published,
};
use redis_module::{Context, RedisError, RedisResult, RedisValue};

/// When an INIT-created item expires.
#[derive(Clone, Copy)]
enum Expiry {
    /// EX / PX: milliseconds from now.
    In(i64),
    /// EXAT / PXAT: Unix milliseconds.
    At(i64),
}

struct InitOptions<'a> {
    limit: i64,
    expiry: Option<Expiry>,
    window: Window,
    stream_setting: Option<StreamSetting>,
    replace: bool,
    /// VARIANTLIMIT name n: a variant's own per-user cap.
    variant_limits: Vec<(Vec<u8>, i64)>,
    /// The argument that names the order stream.
    stream_arg: Option<&'a Arg<'a>>,
}

impl<'a> InitOptions<'a> {
    fn parse(args: &'a [Arg<'a>]) -> Result<Self, RedisError> {
        let mut options = InitOptions {
            limit: 0,
            expiry: None,
            window: Window::default(),
            stream_setting: None,
            replace: false,
            variant_limits: Vec::new(),
            stream_arg: None,
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
            if option.is_keyword("VARIANTLIMIT") {
                let variant = args.next().ok_or(RedisError::Str(ERR_SYNTAX))?;
                let limit = integer(args.next().ok_or(RedisError::Str(ERR_SYNTAX))?)?;
                if limit < 0 {
                    return Err(RedisError::Str(ERR_BAD_LIMIT));
                }
                // A repeated option is a syntax error, as LIMIT's is: which
                // of two caps was meant is not the module's to guess.
                let named = variant.as_bytes();
                if options.variant_limits.iter().any(|(seen, _)| seen == named) {
                    return Err(RedisError::Str(ERR_SYNTAX));
                }
                options
                    .variant_limits
                    .push((variant.as_bytes().to_vec(), limit));
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
        options.stream_arg = stream;
        options.stream_setting = match (stream, maxlen) {
            (Some(stream), maxlen) => Some(parse_stream_setting(stream, maxlen)?),
            (None, Some(_)) => return Err(RedisError::Str(ERR_SYNTAX)),
            (None, None) => None,
        };
        Ok(options)
    }
}

fn parse_stream_setting(stream: &Arg, maxlen: Option<&Arg>) -> Result<StreamSetting, RedisError> {
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
    Ok(StreamSetting {
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
fn check_stream_setting(
    ctx: &Context,
    item_key: &Arg,
    stream_setting: &StreamSetting,
) -> Result<(), RedisError> {
    if master_decided(ctx) {
        // The master checked; a replica or a replay applies. That includes
        // the confirmation of a restored item's stream, which may name a
        // stream in another slot than the item's (outside a cluster).
        return Ok(());
    }
    if *stream_setting.stream == *item_key.as_bytes() {
        return Err(RedisError::Str(ERR_STREAM_SELF));
    }
    if key_slot(&stream_setting.stream) != key_slot(item_key.as_bytes()) {
        return Err(RedisError::Str(ERR_STREAM_SLOT));
    }
    order_stream::check_type(ctx, &stream_setting.stream)
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

/// The variants `SECKILL.INIT key VARIANTS count name stock ...` declares,
/// the arguments that declared them (after `VARIANTS`) and those after.
struct ParsedVariants<'a> {
    specs: Vec<VariantSpec<'a>>,
    args: &'a [Arg<'a>],
    rest: &'a [Arg<'a>],
}

fn parse_variants<'a>(args: &'a [Arg<'a>]) -> Result<ParsedVariants<'a>, RedisError> {
    let [count, rest @ ..] = args else {
        return Err(RedisError::Str(ERR_SYNTAX));
    };
    let count = usize::try_from(integer(count)?)
        .ok()
        .filter(|count| (1..=MAX_VARIANTS).contains(count))
        .ok_or(RedisError::Str(ERR_BAD_VARIANTS))?;
    let (pairs, options) = rest
        .split_at_checked(2 * count)
        .ok_or(RedisError::Str(ERR_SYNTAX))?;
    let specs = pairs
        .chunks_exact(2)
        .map(|pair| {
            Ok(VariantSpec {
                name: pair[0].as_bytes(),
                stock: parse_stock(&pair[1])?,
                limit: 0,
            })
        })
        .collect::<Result<Vec<_>, RedisError>>()?;
    Ok(ParsedVariants {
        specs,
        args: &args[..1 + 2 * count],
        rest: options,
    })
}

/// The stock INIT sells, or the variants it declares, with the
/// arguments that declared them and the options after.
type Sold<'a> = (
    Result<Stock, Vec<VariantSpec<'a>>>,
    &'a [Arg<'a>],
    &'a [Arg<'a>],
);

/// INIT's arguments after the key: its stock or variants, then options.
fn parse_init<'a>(
    stock_arg: &'a Arg<'a>,
    after_stock: &'a [Arg<'a>],
) -> Result<(Sold<'a>, InitOptions<'a>), RedisError> {
    let (sold, variant_args, options_args) = if stock_arg.is_keyword("VARIANTS") {
        let parsed = parse_variants(after_stock)?;
        (Err(parsed.specs), parsed.args, parsed.rest)
    } else {
        (Ok(parse_stock(stock_arg)?), &[][..], after_stock)
    };
    let options = InitOptions::parse(options_args)?;
    Ok(((sold, variant_args, options_args), options))
}

/// Where INIT names its order stream (`STREAM stream_key`), as INIT itself
/// reads it, for the server that asks for its keys (ACL, cluster routing):
/// a keyword search would take a variant or a VARIANTLIMIT named STREAM
/// for the option, and miss the stream. None when INIT would refuse.
pub fn init_stream_position(args: &[Arg]) -> Option<usize> {
    let [_, _, stock_arg, after_stock @ ..] = args else {
        return None;
    };
    let (_, options) = parse_init(stock_arg, after_stock).ok()?;
    let stream_arg = options.stream_arg?;
    args.iter().position(|arg| std::ptr::eq(arg, stream_arg))
}

/// SECKILL.INIT key stock [LIMIT n] [START ms] [END ms] [EX s | PX ms | EXAT s | PXAT ms] [REPLACE]
/// SECKILL.INIT key VARIANTS count name stock [name stock ...] [VARIANTLIMIT name n ...] [...]
pub fn init(ctx: &Context, args: &[Arg]) -> RedisResult {
    let [_, name, stock_arg, after_stock @ ..] = args else {
        return Err(RedisError::WrongArity);
    };
    let ((sold, variant_args, options_args), options) = parse_init(stock_arg, after_stock)?;
    let new_item = match sold {
        Ok(_) if !options.variant_limits.is_empty() => {
            return Err(RedisError::Str(ERR_SYNTAX));
        }
        Ok(stock) => SaleItem::new(stock, options.limit),
        Err(mut specs) => {
            for (variant, limit) in &options.variant_limits {
                let spec = specs
                    .iter_mut()
                    .find(|spec| spec.name == variant.as_slice())
                    .ok_or(RedisError::Str(ERR_NO_SUCH_VARIANT))?;
                spec.limit = *limit;
            }
            SaleItem::with_variants(&specs, options.limit)
                .map_err(|_| RedisError::Str(ERR_BAD_VARIANTS))?
        }
    };
    if let Some(stream_setting) = &options.stream_setting {
        check_stream_setting(ctx, name, stream_setting)?;
    }
    // Every error is ruled out before the key is opened for writing, and
    // before an item already there answers 0: as `SET ... NX EX`, a bad
    // expiry is an error whether or not the key exists.
    let expire_at = match options.expiry {
        None => None,
        Some(Expiry::At(unix_ms)) => Some(unix_ms),
        Some(Expiry::In(millis)) => Some(
            now_ms()
                .checked_add(millis)
                .ok_or(RedisError::Str(ERR_BAD_EXPIRE))?,
        ),
    };
    // Many app servers initialise the same item at once; all but the first
    // find it there, and must not disturb WATCH or client tracking.
    // The item there may be that of this call's first try, which the
    // replicas may lack: a PING fences a WAIT after the answer.
    if ItemKey::open_read(ctx, name).item()?.is_some() && !options.replace {
        fence_repeat(ctx);
        return Ok(RedisValue::Integer(0));
    }
    let mut key = ItemKey::open_write(ctx, name);
    let mut item = new_item;
    item.set_window(options.window);
    item.set_order_stream(options.stream_setting.clone());
    for variant in item.variants_mut() {
        variant.item.set_window(options.window);
        variant
            .item
            .set_order_stream(options.stream_setting.clone());
    }
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
    let mut rewrite_slot = None;
    let effect = match (options.expiry, expire_at) {
        // A relative expiry read the clock: send the deadline it reached.
        (Some(Expiry::In(_)), Some(unix_ms)) => {
            // The command as sent, with EX or PX replaced by PXAT.
            let rewrite = rewrite_slot.insert(Rewrite::of(c"SECKILL.INIT"));
            rewrite.string(name).string(stock_arg);
            for variant_arg in variant_args {
                rewrite.string(variant_arg);
            }
            // Every option but REPLACE takes a value, and VARIANTLIMIT
            // two, as parsed above.
            let mut rest = options_args.iter();
            while let Some(option) = rest.next() {
                if option.is_keyword("REPLACE") {
                    rewrite.string(option);
                    continue;
                }
                if option.is_keyword("EX") || option.is_keyword("PX") {
                    rewrite.option(&rewrite::PXAT, unix_ms);
                    rest.next();
                } else if option.is_keyword("VARIANTLIMIT") {
                    rewrite.string(option);
                    for value in rest.by_ref().take(2) {
                        rewrite.string(value);
                    }
                } else {
                    rewrite.string(option);
                    if let Some(value) = rest.next() {
                        rewrite.string(value);
                    }
                }
            }
            Effect::Rewritten(rewrite)
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

/// SECKILL.ADD key qty [VARIANT name], or SECKILL.ADD key qty ID
/// transfer_id [VARIANT name]: units received from another part.
pub fn add(ctx: &Context, args: &[Arg]) -> RedisResult {
    let mut variant = None;
    let (name, qty, transfer) = match args {
        [_, name, qty] => (name, qty, None),
        [_, name, qty, keyword, named] if keyword.is_keyword("VARIANT") => {
            variant = Some(named.as_bytes());
            (name, qty, None)
        }
        [_, name, qty, keyword, transfer_id, rest @ ..] if keyword.is_keyword("ID") => {
            // VARIANT name: the variant receiving. AT ms: the moment the
            // master judged the call at, for the stock the transfer
            // replies; only the master and the AOF send it.
            let mut decided_at = None;
            let mut into: Option<&Arg> = None;
            let mut options = rest.iter();
            while let Some(option) = options.next() {
                let value = options.next().ok_or(RedisError::Str(ERR_SYNTAX))?;
                if option.is_keyword("VARIANT") && into.is_none() {
                    into = Some(value);
                } else if option.is_keyword("AT") && decided_at.is_none() && master_decided(ctx) {
                    decided_at = Some(integer(value)?);
                } else {
                    return Err(RedisError::Str(ERR_SYNTAX));
                }
            }
            (
                name,
                qty,
                Some((id(transfer_id, ERR_BAD_TRANSFER)?, into, decided_at)),
            )
        }
        [_, _, _, ..] => return Err(RedisError::Str(ERR_SYNTAX)),
        _ => return Err(RedisError::WrongArity),
    };
    let qty = positive(qty)?;
    if let Some((transfer_id, into, decided_at)) = transfer {
        return receive_transfer(ctx, name, qty, transfer_id, into, decided_at);
    }
    write_part(
        ctx,
        name,
        Part::Variant(variant),
        |item, moment| {
            Ok(match item.judge_add(qty, moment)? {
                Verdict::Answer(remaining) => Judgement::Answer(RedisValue::Integer(remaining)),
                Verdict::Change(change) => {
                    Judgement::Decide(verbatim(change, c"seckill.add", moment))
                }
            })
        },
        |item, _, moment| RedisValue::Integer(stock_now(item, moment)),
    )
}

/// SECKILL.WINDOW key start end: moves the sale window of a live item
/// (0 leaves a side open).
pub fn window(ctx: &Context, args: &[Arg]) -> RedisResult {
    let [_, name, start, end] = args else {
        return Err(RedisError::WrongArity);
    };
    let window = Window::new(integer(start)?, integer(end)?)?;
    write_part(
        ctx,
        name,
        Part::Whole,
        |item, moment| {
            // The same window again changes nothing, perhaps a retry of a
            // call the replicas lack: a PING fences its WAIT.
            if item.window() == window {
                fence_repeat(ctx);
                return Ok(Judgement::Answer(RedisValue::Integer(1)));
            }
            Ok(Judgement::Decide(verbatim(
                Change::Window(window),
                c"seckill.window",
                moment,
            )))
        },
        |_, _, _| RedisValue::Integer(1),
    )
}

/// SECKILL.STREAM key [stream_key [MAXLEN n]]: sets the item's order
/// stream, or clears it when no stream is given.
pub fn stream(ctx: &Context, args: &[Arg]) -> RedisResult {
    let stream_setting = match args {
        [_, _] => None,
        [_, _, stream] => Some(parse_stream_setting(stream, None)?),
        [_, _, stream, keyword, maxlen] if keyword.is_keyword("MAXLEN") => {
            Some(parse_stream_setting(stream, Some(maxlen))?)
        }
        // Past the key, a malformed tail is a syntax error, as SET's is.
        [_, _, ..] => return Err(RedisError::Str(ERR_SYNTAX)),
        _ => return Err(RedisError::WrongArity),
    };
    let [_, name, ..] = args else {
        return Err(RedisError::WrongArity);
    };
    if let Some(stream_setting) = &stream_setting {
        check_stream_setting(ctx, name, stream_setting)?;
    }
    write_part(
        ctx,
        name,
        Part::Whole,
        |item, moment| {
            if item.order_stream() == stream_setting.as_ref() {
                fence_repeat(ctx);
                return Ok(Judgement::Answer(RedisValue::Integer(1)));
            }
            Ok(Judgement::Decide(verbatim(
                Change::StreamSetting(stream_setting),
                c"seckill.stream",
                moment,
            )))
        },
        |_, _, _| RedisValue::Integer(1),
    )
}
