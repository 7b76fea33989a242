//! Orders of several items in one step: MDEDUCT takes every line or none,
//! MCONFIRM confirms a whole order or nothing, MREFUND gives back every
//! line it can. An order's lines share its user, request id and deadline,
//! and each line is recorded on its item as a DEDUCT would record it: every
//! single-item command (STATUS, REFUND of one line, the sweep's lapsing)
//! works on it. Replicas and the AOF receive an order as one MDEDUCT, and
//! a whole-order confirmation or refund as one CONFIRM or REFUND per
//! changed line in one MULTI/EXEC. In a cluster the items share a slot
//! (one hash tag), as the keys of any one command must.

use super::sales::{deduction_reply, detail_flag, why_not};
use super::*;
use crate::rewrite::{self, Rewrite};
use crate::sale_item::{Confirmation, Deduction, Order, Quota, Verdict};
use crate::server::notify::{replicate, replicate_verbatim};
use crate::server::reply;
use crate::stats;
use crate::write::{
    fence_repeat, items_judge, write_items, Judgements, Part, PerLine, Seen, NO_SUCH_ITEM,
};
use redis_module::{RedisResult, RedisValue};
use std::cell::Cell;

/// Lines (items) one order names at most: a cart, not a catalogue. Each
/// line opens its key in the call.
pub const MAX_ORDER_LINES: usize = 64;

/// What one line of an order came to, once judged.
#[derive(Clone, Copy)]
enum Line {
    /// To be changed as decided.
    Taken,
    /// The request id is on this item already: its recorded reply (a
    /// replay), or a code saying why it stands as it does.
    Known(i64),
    /// Refused, with the line's code; nothing is taken.
    Refused(i64),
}

impl Line {
    /// The line in a reply that changed nothing: its code, or nil for a
    /// line that would have been taken.
    fn answered(&self) -> RedisValue {
        match self {
            Line::Taken => RedisValue::Null,
            Line::Known(code) | Line::Refused(code) => RedisValue::Integer(*code),
        }
    }
}

/// Splits `count args...` into the `count * step` arguments of the lines
/// and the rest; `error` if the count is not 1 to `MAX_ORDER_LINES`.
fn counted<'a, 'b>(
    count: &Arg,
    args: &'b [Arg<'a>],
    step: usize,
    error: &'static str,
) -> Result<(&'b [Arg<'a>], &'b [Arg<'a>]), RedisError> {
    let count = count
        .integer()
        .and_then(|count| usize::try_from(count).ok())
        .filter(|count| (1..=MAX_ORDER_LINES).contains(count))
        .ok_or(RedisError::Str(error))?;
    if args.len() < count * step {
        return Err(RedisError::Str(ERR_SYNTAX));
    }
    Ok(args.split_at(count * step))
}

/// Refuses an order naming one key twice: its lines would be two orders
/// of one item under one request id.
fn distinct(names: &[&Arg]) -> Result<(), RedisError> {
    for (place, name) in names.iter().enumerate() {
        if names[..place]
            .iter()
            .any(|earlier| earlier.as_bytes() == name.as_bytes())
        {
            return Err(RedisError::Str(ERR_ORDER_REPEATED_KEY));
        }
    }
    Ok(())
}

/// The moment this server judges an order at: its clock where it decides.
/// Every line is replicated with what it was judged at, so only a repeat
/// sent as it came (see `fence_repeat`) is judged untimed, where it
/// changes nothing.
fn order_moment(ctx: &Context) -> (i64, Moment) {
    let now = now_ms();
    if master_decided(ctx) {
        (now, Moment::Untimed)
    } else {
        (now, Moment::Now(now))
    }
}

fn integers(figures: impl Iterator<Item = i64>) -> RedisValue {
    RedisValue::Array(figures.map(RedisValue::Integer).collect())
}

/// SECKILL.MDEDUCT numlines key qty [key qty ...] user request_id
/// [HOLD seconds | HOLDUNTIL unix-ms] [VARIANT line name ...] [WITHDEADLINE]
pub fn mdeduct(ctx: &Context, args: &[Arg]) -> RedisResult {
    let [_, count, rest @ ..] = args else {
        return Err(RedisError::WrongArity);
    };
    let (lines, rest) = counted(count, rest, 2, ERR_ORDER_LINES)?;
    let [user_arg, request_arg, options @ ..] = rest else {
        return Err(RedisError::Str(ERR_SYNTAX));
    };
    let names: PerLine<&Arg> = lines.iter().step_by(2).collect();
    let quantities = lines
        .iter()
        .skip(1)
        .step_by(2)
        .map(positive)
        .collect::<Result<PerLine<i64>, _>>()?;
    let user = id(user_arg, ERR_BAD_USER)?;
    let request_id = id(request_arg, ERR_BAD_REQUEST)?;
    let (now, mut moment) = order_moment(ctx);
    let mut hold_until = None;
    let mut relative_hold = false;
    let mut with_deadline = false;
    // The variant each line buys, for lines of items with variants.
    let mut variants: PerLine<Option<&Arg>> = smallvec::smallvec![None; names.len()];
    let mut options = options.iter();
    while let Some(option) = options.next() {
        if option.is_keyword("WITHDEADLINE") && !with_deadline {
            with_deadline = true;
            continue;
        }
        let value = options.next().ok_or(RedisError::Str(ERR_SYNTAX))?;
        let bad_hold = || RedisError::Str(ERR_BAD_ORDER_HOLD);
        if option.is_keyword("VARIANT") {
            let variant = options.next().ok_or(RedisError::Str(ERR_SYNTAX))?;
            let line = integer(value)
                .ok()
                .and_then(|line| usize::try_from(line).ok())
                .and_then(|line| line.checked_sub(1))
                .and_then(|place| variants.get_mut(place))
                .filter(|line| line.is_none())
                .ok_or(RedisError::Str(ERR_ORDER_VARIANT_LINE))?;
            *line = Some(variant);
        } else if option.is_keyword("HOLD") && hold_until.is_none() {
            relative_hold = true;
            hold_until = Some(
                integer(value)?
                    .checked_mul(1000)
                    .filter(|millis| *millis > 0)
                    .and_then(|millis| now.checked_add(millis))
                    .ok_or_else(bad_hold)?,
            );
        } else if option.is_keyword("HOLDUNTIL") && hold_until.is_none() {
            hold_until = Some(
                Some(integer(value)?)
                    .filter(|at| *at > 0)
                    .ok_or_else(bad_hold)?,
            );
        } else if option.is_keyword("AT") && moment == Moment::Untimed && master_decided(ctx) {
            // The moment its master judged the order at, sent with it.
            moment = Moment::Decided(integer(value)?);
        } else {
            return Err(RedisError::Str(ERR_SYNTAX));
        }
    }
    distinct(&names)?;
    let parts: PerLine<Part> = variants
        .iter()
        .map(|variant| Part::Variant(variant.map(Arg::as_bytes)))
        .collect();
    // The deadline of the order's hold, made or replayed, for WITHDEADLINE.
    let deadline = Cell::new(None);
    // True when replicas and the AOF judge the order as sent alike (see
    // below); else it goes with its deadline and moment made absolute.
    let as_sent = Cell::new(true);
    let judge = items_judge(|items, decisions| {
        // A replica judges what its master sends without a clock: the
        // order goes as it came when no relative deadline was read here
        // and no item has a hold lapsing at this moment (which the reply
        // depends on: in any variant, for a limit across them). Else it
        // goes with HOLDUNTIL and AT, as DEDUCT does.
        let sent_at = match moment.now() {
            Some(now) => {
                let lapsing = items.iter().flatten().any(|seen| {
                    seen.whole
                        .earliest_deadline()
                        .is_some_and(|deadline| deadline <= now)
                });
                (relative_hold || lapsing).then_some(now)
            }
            None => moment.lapses_at(),
        };
        as_sent.set(sent_at.is_none() || moment.now().is_none());
        // The ids are hashed once for every line, and each line's index
        // slots start loading before the first line is judged: an order's
        // lookups on its items then wait for memory together, not in turn.
        let hashed = Quota::hashing(user, Some(request_id));
        for seen in items.iter().flatten() {
            seen.part.prefetch_purchase(&hashed);
        }
        let mut judged = PerLine::with_capacity(items.len());
        for (seen, qty) in items.iter().zip(&quantities) {
            let Some(seen) = seen else {
                judged.push(Line::Refused(NO_SUCH_ITEM));
                decisions.push(None);
                continue;
            };
            let item = seen.part;
            check_configured_id_length(ctx, seen.whole, user, Some(request_id))?;
            // A variant's buyer is judged against the item's limit across
            // its variants too, as DEDUCT ... VARIANT is.
            let quota = match seen.variant {
                Some(index) => {
                    seen.whole
                        .quota_from(index, user, Some(request_id), moment, hashed)?
                }
                None => hashed,
            };
            let order = Order {
                user,
                qty: *qty,
                request_id: Some(request_id),
                hold_until,
            };
            let line = match item.judge_deduct_within(order, moment, quota)? {
                Verdict::Change(mut change) => {
                    if let (Change::Deduct(purchase), Some(at)) = (&mut change, sent_at) {
                        purchase.replicated_moment = Some(at);
                    }
                    judged.push(Line::Taken);
                    decisions.push(Some(Decision {
                        change,
                        // Replicated once for the whole order, below.
                        effect: Effect::Nothing,
                        event: Some(c"seckill.deduct"),
                        moment,
                    }));
                    continue;
                }
                Verdict::Answer(Deduction::Replayed { remaining }) => {
                    if deadline.get().is_none() {
                        deadline.set(item.pending_deadline(request_id, moment));
                    }
                    Line::Known(remaining)
                }
                Verdict::Answer(Deduction::Cancelled) => Line::Known(CANCELLED),
                Verdict::Answer(refusal) => Line::Refused(deduction_reply(refusal)),
            };
            decisions.push(None);
            judged.push(line);
        }
        let known = judged.iter().any(|line| matches!(line, Line::Known(_)));
        let new = judged.iter().any(|line| match line {
            Line::Taken => true,
            Line::Refused(code) => *code != NO_SUCH_ITEM,
            Line::Known(_) => false,
        });
        if known && new {
            // Some items know the request id and others do not: it named
            // another order before. Answering the known lines would tell
            // a retry it got what it did not ask for.
            return Err(RedisError::Str(ERR_ORDER_MISMATCH));
        }
        if judged.iter().all(|line| matches!(line, Line::Taken)) {
            deadline.set(hold_until);
            return Ok(Judgements::Decide);
        }
        if known {
            fence_repeat(ctx);
        }
        for line in &judged {
            if let Line::Refused(code) | Line::Known(code @ CANCELLED) = line {
                stats::count_deduct_reply(*code);
            }
        }
        Ok(Judgements::Answer(RedisValue::Array(
            judged.iter().map(Line::answered).collect(),
        )))
    });
    let reply = match write_items(ctx, &names, &parts, judge)? {
        Ok(figures) => {
            // Every line applied and published: the order goes to replicas
            // and the AOF as one command, after the releases of lapsed
            // holds its lines settled on the way.
            if as_sent.get() {
                replicate_verbatim(ctx);
            } else {
                let mut rewrite = Rewrite::of(c"SECKILL.MDEDUCT");
                rewrite.string(count);
                for arg in lines {
                    rewrite.string(arg);
                }
                rewrite.string(user_arg).string(request_arg);
                if let Some(unix_ms) = hold_until {
                    rewrite.option(&rewrite::HOLDUNTIL, unix_ms);
                }
                for (line, variant) in (1..).zip(&variants) {
                    if let Some(variant) = variant {
                        rewrite.option(&rewrite::VARIANT, line).string(variant);
                    }
                }
                rewrite.option(&rewrite::AT, now);
                replicate(ctx, rewrite.command(), rewrite.args());
            }
            // Written in place: an order's reply is on a checkout's hot
            // path, and a RedisValue array of it is an allocation more.
            if with_deadline {
                reply::array(ctx, 2);
            }
            reply::array(ctx, figures.len());
            for figure in figures {
                reply::integer(ctx, figure.unwrap_or_default());
            }
            if with_deadline {
                match deadline.get() {
                    Some(unix_ms) => reply::integer(ctx, unix_ms),
                    None => reply::null(ctx),
                }
            }
            return Ok(RedisValue::NoReply);
        }
        Err(answer) => answer,
    };
    if !with_deadline {
        return Ok(reply);
    }
    let deadline = deadline.get().map_or(RedisValue::Null, RedisValue::Integer);
    Ok(RedisValue::Array(vec![reply, deadline]))
}

/// The keys and options of MCONFIRM and MREFUND: `numkeys key [key ...]
/// request_id [DETAIL]`.
struct WholeOrder<'a, 'b> {
    names: PerLine<&'b Arg<'a>>,
    request_arg: &'b Arg<'a>,
    request_id: &'b [u8],
    detail: bool,
}

impl<'a, 'b> WholeOrder<'a, 'b> {
    fn parse(args: &'b [Arg<'a>]) -> Result<Self, RedisError> {
        let [_, count, rest @ ..] = args else {
            return Err(RedisError::WrongArity);
        };
        let (keys, rest) = counted(count, rest, 1, ERR_ORDER_KEYS)?;
        let [request_arg, flags @ ..] = rest else {
            return Err(RedisError::Str(ERR_SYNTAX));
        };
        let request_id = id(request_arg, ERR_BAD_REQUEST)?;
        let detail = detail_flag(flags)?;
        let names: PerLine<&Arg> = keys.iter().collect();
        distinct(&names)?;
        Ok(WholeOrder {
            names,
            request_arg,
            request_id,
            detail,
        })
    }

    /// The part of each item the order is on: the variant that recorded
    /// its request id, for an item with variants.
    fn parts(&self) -> PerLine<Part<'_>> {
        smallvec::smallvec![Part::OfRequest(self.request_id); self.names.len()]
    }

    /// What replicas and the AOF receive for each line: `command key
    /// request_id`.
    fn rewrites(&self, command: &'static CStr) -> PerLine<Rewrite<'_>> {
        self.names
            .iter()
            .map(|name| {
                let mut rewrite = Rewrite::of(command);
                rewrite.string(name).string(self.request_arg);
                rewrite
            })
            .collect()
    }
}

/// SECKILL.MCONFIRM numkeys key [key ...] request_id [DETAIL]: confirms
/// every line of an order, or none if any cannot be.
pub fn mconfirm(ctx: &Context, args: &[Arg]) -> RedisResult {
    let order = WholeOrder::parse(args)?;
    let (_, moment) = order_moment(ctx);
    let rewrites = order.rewrites(c"SECKILL.CONFIRM");
    let judge = items_judge(|items, decisions| {
        let judged: PerLine<Line> = items
            .iter()
            .zip(&rewrites)
            .map(|(seen, rewrite)| {
                let Some(Seen { part: item, .. }) = seen else {
                    decisions.push(None);
                    return Line::Refused(NO_SUCH_ITEM);
                };
                let line = match item.judge_confirm(order.request_id, moment) {
                    Verdict::Change(change) => {
                        decisions.push(Some(Decision {
                            change,
                            effect: Effect::Rewritten(rewrite),
                            event: Some(c"seckill.confirm"),
                            moment,
                        }));
                        return Line::Taken;
                    }
                    Verdict::Answer(Confirmation::AlreadyConfirmed) => Line::Known(0),
                    Verdict::Answer(_) if order.detail => {
                        Line::Refused(why_not(item, order.request_id, moment, CANCELLED))
                    }
                    Verdict::Answer(_) => Line::Refused(CANCELLED),
                };
                decisions.push(None);
                line
            })
            .collect();
        let refused = judged.iter().any(|line| matches!(line, Line::Refused(_)));
        if refused || !judged.iter().any(|line| matches!(line, Line::Taken)) {
            // A repeat, or a refusal: nothing changes, and a `WAIT` after
            // it still covers the confirmations made before.
            fence_repeat(ctx);
            return Ok(Judgements::Answer(RedisValue::Array(
                judged.iter().map(Line::answered).collect(),
            )));
        }
        Ok(Judgements::Decide)
    });
    let parts = order.parts();
    let reply = match write_items(ctx, &order.names, &parts, judge)? {
        // 1 confirmed now, 0 final already.
        Ok(figures) => integers(figures.iter().map(|figure| i64::from(figure.is_some()))),
        Err(answer) => answer,
    };
    Ok(reply)
}

/// SECKILL.MREFUND numkeys key [key ...] request_id [DETAIL]: gives back
/// every line of an order that can be, as REFUND does each.
pub fn mrefund(ctx: &Context, args: &[Arg]) -> RedisResult {
    let order = WholeOrder::parse(args)?;
    let (_, moment) = order_moment(ctx);
    let rewrites = order.rewrites(c"SECKILL.REFUND");
    // The code of each line that gives nothing back.
    let mut codes: PerLine<i64> = smallvec::smallvec![0; order.names.len()];
    let judge = items_judge(|items, decisions| {
        for ((seen, rewrite), code) in items.iter().zip(&rewrites).zip(codes.iter_mut()) {
            let Some(Seen { part: item, .. }) = seen else {
                *code = NO_SUCH_ITEM;
                decisions.push(None);
                continue;
            };
            decisions.push(match item.judge_refund(order.request_id, moment)? {
                Verdict::Change(change) => Some(Decision {
                    change,
                    effect: Effect::Rewritten(rewrite),
                    event: Some(c"seckill.refund"),
                    moment,
                }),
                Verdict::Answer(units) => {
                    *code = match units {
                        0 if order.detail => why_not(item, order.request_id, moment, 0),
                        units => units,
                    };
                    None
                }
            });
        }
        if decisions.iter().all(Option::is_none) {
            fence_repeat(ctx);
        }
        Ok(Judgements::Decide)
    });
    let parts = order.parts();
    let figures = match write_items(ctx, &order.names, &parts, judge)? {
        Ok(figures) => figures,
        Err(answer) => return Ok(answer),
    };
    Ok(integers(
        figures
            .into_iter()
            .zip(codes)
            .map(|(figure, code)| figure.unwrap_or(code)),
    ))
}
