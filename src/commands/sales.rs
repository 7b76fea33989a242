//! Sales and holds: DEDUCT, CONFIRM, RELEASE, REFUND.

use super::*;
use crate::rewrite::{self, Rewrite};
use crate::sale_item::{
    Change, Confirmation, Deduction, Moment, Order, Quota, SaleItem, Status, Verdict,
};
use crate::server::arg::is_word;
use crate::server::ItemKey;
use crate::server::{now_ms, Arg};
use crate::stats;
use crate::write::{
    check_stream_room, fence_repeat, master_decided, moment_given, part_of, vouch_whole,
    write_opened, write_part, Decision, Effect, Judgement, Part, NO_SUCH_ITEM,
};
use redis_module::{Context, RedisError, RedisResult, RedisValue};
use std::cell::Cell;

/// How long a hold lasts, as DEDUCT was given it.
#[derive(Clone, Copy)]
enum Hold {
    /// HOLD seconds, from the server's clock.
    For(i64),
    /// HOLDUNTIL unix-ms, as replicated.
    Until(i64),
}

#[derive(Clone, Copy)]
struct DeductOptions<'a> {
    request_id: Option<&'a [u8]>,
    /// The request id as the server passed it, to replicate as it is.
    request_arg: Option<&'a Arg<'a>>,
    hold: Option<Hold>,
    /// AT unix-ms: the moment the master judged the call at. Only its
    /// master or the AOF sends it, so that a replica records the reply the
    /// master gave.
    decided_at: Option<i64>,
    /// WITHDEADLINE: reply the hold's deadline beside the usual figure.
    with_deadline: bool,
    /// VARIANT name: the variant bought, of an item that has variants.
    variant: Option<&'a Arg<'a>>,
}

impl<'a> DeductOptions<'a> {
    fn parse(args: &'a [Arg], from_master: impl Fn() -> bool) -> Result<Self, RedisError> {
        let mut options = DeductOptions {
            request_id: None,
            request_arg: None,
            hold: None,
            decided_at: None,
            with_deadline: false,
            variant: None,
        };
        let mut args = args.iter();
        while let Some(option) = args.next() {
            // The option's bytes are read once, not once per keyword tried.
            let option = option.as_bytes();
            if is_word(option, b"WITHDEADLINE") && !options.with_deadline {
                options.with_deadline = true;
                continue;
            }
            let value = args.next().ok_or(RedisError::Str(ERR_SYNTAX))?;
            if is_word(option, b"ID") && options.request_id.is_none() {
                options.request_id = Some(id(value, ERR_BAD_REQUEST)?);
                options.request_arg = Some(value);
            } else if is_word(option, b"HOLD") && options.hold.is_none() {
                let millis = integer(value)?
                    .checked_mul(1000)
                    .filter(|millis| *millis > 0)
                    .ok_or(RedisError::Str(ERR_BAD_HOLD))?;
                options.hold = Some(Hold::For(millis));
            } else if is_word(option, b"HOLDUNTIL") && options.hold.is_none() {
                let unix_ms = integer(value)?;
                if unix_ms <= 0 {
                    return Err(RedisError::Str(ERR_BAD_HOLD));
                }
                options.hold = Some(Hold::Until(unix_ms));
            } else if is_word(option, b"VARIANT") && options.variant.is_none() {
                options.variant = Some(value);
            } else if is_word(option, b"AT") && options.decided_at.is_none() && from_master() {
                options.decided_at = Some(integer(value)?);
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

/// What a purchase of one variant is judged with besides the variant: the
/// whole item's moment, replicated moment and earliest deadline, and the
/// quota across variants, all read before the variant is opened for the
/// write.
#[derive(Clone, Copy)]
struct AcrossVariants {
    moment: Moment,
    anchor: i64,
    earliest_deadline: Option<i64>,
    quota: Quota,
}

/// The moment a DEDUCT is judged at, from the moment the pipeline gives
/// (`base`): where this server applies its master's call as sent, it reads
/// no clock and judges the call at the item's replicated moment
/// (`anchor`), which the master keeps alike (see `deduct`). A relative
/// hold on an item no clock judged before is judged at this server's
/// clock where it decides.
fn deduct_moment(ctx: &Context, base: Moment, options: &DeductOptions, anchor: i64) -> Moment {
    let relative_hold = matches!(options.hold, Some(Hold::For(_)));
    match base.or_decided(options.decided_at) {
        Moment::Untimed if relative_hold && !master_decided(ctx) => Moment::Now(now_ms()),
        Moment::Untimed => Moment::Decided(anchor),
        moment => moment,
    }
}

/// SECKILL.DEDUCT key user qty [ID request_id] [HOLD seconds | HOLDUNTIL unix-ms]
/// [VARIANT name] [WITHDEADLINE]
pub fn deduct(ctx: &Context, args: &[Arg]) -> RedisResult {
    let [_, name, user_arg, qty_arg, options @ ..] = args else {
        return Err(RedisError::WrongArity);
    };
    let user = id(user_arg, ERR_BAD_USER)?;
    let qty = positive(qty_arg)?;
    // A plain purchase (no option) by a user id no setting refuses can be
    // answered sold out before anything else is read or built: what almost
    // every call of a sale's last seconds gets (see `sold_out_for`).
    let plain = options.is_empty()
        && i64::try_from(user.len()).is_ok_and(|len| len <= MAX_ID_LENGTH.load(Ordering::Relaxed));
    let mut opened = plain.then(|| ItemKey::open_read(ctx, name));
    let found = opened.as_mut().map(ItemKey::item_mut);
    // The user hashed, and its index slot loading, as early as possible.
    let mut prefetched = None;
    if let Some(Ok(Some(item))) = &found {
        if item.sold_out_for(qty) && !item.has_variants() {
            stats::count_deduct_reply(NOT_ENOUGH_STOCK);
            return Ok(RedisValue::Integer(NOT_ENOUGH_STOCK));
        }
        let hashed = Quota::hashing(user, None);
        item.prefetch_purchase(&hashed);
        prefetched = Some(hashed);
    }
    // A call with options opens its key once they are read: one they
    // refuse touches nothing, not even the keyspace's hit counters.
    let options = DeductOptions::parse(options, || master_decided(ctx))?;
    let mut rewrite_slot = None;
    let rewrite_slot = &mut rewrite_slot;
    // The deadline of the hold the call made or replayed, for WITHDEADLINE.
    let deadline = Cell::new(None);
    let with_deadline = options.with_deadline;
    let deadline = &deadline;
    // The ids hashed once, for the lookups of whichever part is bought.
    let hashed = prefetched.unwrap_or_else(|| Quota::hashing(user, options.request_id));
    let across_variants: Cell<Option<AcrossVariants>> = Cell::new(None);
    let across_variants = &across_variants;
    let judge = move |item: &SaleItem, moment: Moment| {
        // Moved in whole, so that the rewrite outlives the call.
        let rewrite_slot = rewrite_slot;
        // A variant's ids were checked against the whole item, below.
        if across_variants.get().is_none() {
            check_configured_id_length(ctx, item, user, options.request_id)?;
        }
        let relative_hold = matches!(options.hold, Some(Hold::For(_)));
        let (moment, anchor, earliest_deadline, quota) = match across_variants.get() {
            Some(across) => (
                across.moment,
                across.anchor,
                across.earliest_deadline,
                across.quota,
            ),
            None => (
                deduct_moment(ctx, moment, &options, item.replicated_moment()),
                item.replicated_moment(),
                item.next_deadline(),
                hashed,
            ),
        };
        let hold_until = match options.hold {
            None => None,
            Some(Hold::Until(unix_ms)) => Some(unix_ms),
            Some(Hold::For(millis)) => Some(
                moment
                    .lapses_at()
                    .and_then(|at| at.checked_add(millis))
                    .ok_or(RedisError::Str(ERR_BAD_HOLD))?,
            ),
        };
        let order = Order {
            user,
            qty,
            request_id: options.request_id,
            hold_until,
        };
        let mut change = match item.judge_deduct_within(order, moment, quota)? {
            Verdict::Answer(deduction) => {
                if matches!(deduction, Deduction::Replayed { .. } | Deduction::Cancelled) {
                    fence_repeat(ctx);
                }
                if let (true, Deduction::Replayed { .. }, Some(request_id)) =
                    (options.with_deadline, deduction, options.request_id)
                {
                    deadline.set(item.pending_deadline(request_id, moment));
                }
                return Ok(Judgement::Answer(RedisValue::Integer(deduction_reply(
                    deduction,
                ))));
            }
            Verdict::Change(change) => change,
        };
        // The reply a replica records must be the master's. A replica judges
        // a call sent as it came at the item's replicated moment: that is
        // this server's judgement when the moment is now, or when no hold is
        // due by either (a relative hold's deadline needs the moment
        // itself). Otherwise the call goes with the moment it was judged at
        // (AT) and a relative hold with its deadline (HOLDUNTIL), and the
        // item keeps that moment as its replicated one, on replicas too: in
        // a flash sale, with many calls a millisecond on one item, most go
        // as they came.
        let as_sent = match moment.now() {
            None => true,
            Some(now) if now == anchor => true,
            Some(_) if relative_hold => false,
            Some(now) => earliest_deadline.is_none_or(|deadline| deadline > now.max(anchor)),
        };
        let mut sent_at = options.decided_at;
        let effect = match moment.now() {
            Some(now) if !as_sent => {
                let rewrite = rewrite_slot.insert(Rewrite::of(c"SECKILL.DEDUCT"));
                rewrite.string(name).string(user_arg).string(qty_arg);
                if let Some(request_arg) = options.request_arg {
                    rewrite.keyword(&rewrite::ID).string(request_arg);
                }
                if let Some(variant) = options.variant {
                    rewrite.keyword(&rewrite::VARIANT).string(variant);
                }
                if let Some(unix_ms) = hold_until {
                    rewrite.option(&rewrite::HOLDUNTIL, unix_ms);
                }
                rewrite.option(&rewrite::AT, now);
                sent_at = Some(now);
                Effect::Rewritten(rewrite)
            }
            _ => Effect::Verbatim,
        };
        if let (Change::Deduct(purchase), Some(at)) = (&mut change, sent_at) {
            purchase.replicated_moment = Some(at);
        }
        deadline.set(hold_until);
        Ok(Judgement::Decide(Decision {
            change,
            effect,
            event: Some(c"seckill.deduct"),
            moment,
        }))
    };
    let mut key;
    let found = match found {
        Some(found) => found,
        None => {
            key = ItemKey::open_read(ctx, name);
            key.item_mut()
        }
    };
    let reply = match found? {
        None => Ok(RedisValue::Integer(NO_SUCH_ITEM)),
        Some(item) if options.variant.is_some() || item.has_variants() => {
            let variant = options.variant.map(Arg::as_bytes);
            let index = variant_place(item, variant)?;
            if let Some(part) = item.variant(index) {
                part.prefetch_purchase(&hashed);
            }
            check_configured_id_length(ctx, item, user, options.request_id)?;
            let (anchor, earliest_deadline) = item.latest_replicated_and_earliest_due();
            let whole_moment = moment_given(ctx, item, earliest_deadline);
            let moment = deduct_moment(ctx, whole_moment, &options, anchor);
            across_variants.set(Some(AcrossVariants {
                moment,
                anchor,
                earliest_deadline,
                quota: item.quota_from(index, user, options.request_id, moment, hashed)?,
            }));
            let part = item
                .variant_mut(index)
                .ok_or(RedisError::Str(ERR_NO_SUCH_VARIANT))?;
            let reply = write_opened(ctx, name, part, judge, |_, remaining, _| {
                RedisValue::Integer(remaining)
            });
            vouch_whole(item);
            reply
        }
        Some(item) => {
            // The index slots the judge reads first start loading now: a
            // sale's buyers and request ids are too many to stay in cache.
            if prefetched.is_none() {
                item.prefetch_purchase(&hashed);
            }
            write_opened(ctx, name, item, judge, |_, remaining, _| {
                RedisValue::Integer(remaining)
            })
        }
    };
    match reply {
        Ok(RedisValue::Integer(code)) => {
            stats::count_deduct_reply(code);
            if !with_deadline {
                return reply;
            }
            let deadline = deadline.get().map_or(RedisValue::Null, RedisValue::Integer);
            Ok(RedisValue::Array(vec![RedisValue::Integer(code), deadline]))
        }
        reply => reply,
    }
}

/// DEDUCT's reply when it sells nothing.
pub(super) fn deduction_reply(deduction: Deduction) -> i64 {
    match deduction {
        Deduction::Replayed { remaining } => remaining,
        // Never an answer of the judge: a purchase is a change, replied
        // once applied.
        #[cfg(test)]
        Deduction::Bought { remaining } => remaining,
        Deduction::SoldOut => NOT_ENOUGH_STOCK,
        Deduction::LimitExceeded => LIMIT_EXCEEDED,
        Deduction::Cancelled => CANCELLED,
        Deduction::NotStarted => SALE_NOT_STARTED,
        Deduction::Ended => SALE_ENDED,
    }
}

/// The DETAIL flag of CONFIRM and REFUND, after the request id.
pub(super) fn detail_flag(rest: &[Arg]) -> Result<bool, RedisError> {
    match rest {
        [] => Ok(false),
        [flag] if flag.is_keyword("DETAIL") => Ok(true),
        _ => Err(RedisError::Str(ERR_SYNTAX)),
    }
}

/// Why CONFIRM or REFUND found nothing to do with `request_id`, as DETAIL
/// replies it; `otherwise` for a request in no such state (an item whose
/// records disagree, which loaders refuse).
pub(super) fn why_not(item: &SaleItem, request_id: &[u8], moment: Moment, otherwise: i64) -> i64 {
    match item.request_status(request_id, moment) {
        None => UNKNOWN_REQUEST,
        Some(Status::Refunded) => REQUEST_REFUNDED,
        Some(Status::Lapsed) => REQUEST_LAPSED,
        Some(_) => otherwise,
    }
}

/// SECKILL.CONFIRM key request_id [DETAIL]
pub fn confirm(ctx: &Context, args: &[Arg]) -> RedisResult {
    let [_, name, request_id, rest @ ..] = args else {
        return Err(RedisError::WrongArity);
    };
    let request_id = id(request_id, ERR_BAD_REQUEST)?;
    let detail = detail_flag(rest)?;
    write_part(
        ctx,
        name,
        Part::OfRequest(request_id),
        |item, moment| {
            Ok(match item.judge_confirm(request_id, moment) {
                Verdict::Answer(confirmation) => {
                    fence_repeat(ctx);
                    Judgement::Answer(RedisValue::Integer(match confirmation {
                        #[cfg(test)]
                        Confirmation::Confirmed => 1,
                        Confirmation::AlreadyConfirmed => 0,
                        Confirmation::Cancelled if detail => {
                            why_not(item, request_id, moment, CANCELLED)
                        }
                        Confirmation::Cancelled => CANCELLED,
                    }))
                }
                Verdict::Change(change) => {
                    Judgement::Decide(verbatim(change, c"seckill.confirm", moment))
                }
            })
        },
        |_, _, _| RedisValue::Integer(1),
    )
}

/// SECKILL.RELEASE key request_id [request_id ...]: lets the named holds
/// lapse now. The master replicates its releases by clock this way.
pub fn release(ctx: &Context, args: &[Arg]) -> RedisResult {
    let [_, name, id_args @ ..] = args else {
        return Err(RedisError::WrongArity);
    };
    if id_args.is_empty() {
        return Err(RedisError::WrongArity);
    }
    let request_ids = id_args
        .iter()
        .map(|request_id| id(request_id, ERR_BAD_REQUEST))
        .collect::<Result<Vec<_>, _>>()?;
    let mut key = ItemKey::open_read(ctx, name);
    let Some(item) = key.item_mut()? else {
        return Ok(RedisValue::Integer(NO_SUCH_ITEM));
    };
    // An item with variants keeps each hold in the variant that took it:
    // the ids go to their variants, a write to each (as the sweep releases
    // one variant's holds at a time). Ids no variant knows release nothing.
    let groups: Vec<Vec<usize>> = if item.has_variants() {
        let mut groups: Vec<(usize, Vec<usize>)> = Vec::new();
        for (place, request_id) in request_ids.iter().enumerate() {
            let Some(variant) = item.variant_of_request(request_id) else {
                continue;
            };
            match groups.iter_mut().find(|(other, _)| *other == variant) {
                Some((_, places)) => places.push(place),
                None => groups.push((variant, vec![place])),
            }
        }
        groups.into_iter().map(|(_, places)| places).collect()
    } else {
        vec![(0..request_ids.len()).collect()]
    };
    if groups.len() > 1 {
        check_stream_room(ctx, name, item, groups.len(), request_ids.len())?;
    }
    let whole_call = groups.len() == 1 && groups[0].len() == request_ids.len();
    let mut released = 0;
    for places in groups {
        let ids: Vec<(&[u8], &Arg)> = places
            .iter()
            .map(|place| (request_ids[*place], &id_args[*place]))
            .collect();
        let first = ids.first().map(|(request_id, _)| *request_id);
        let part = part_of(item, Part::OfRequest(first.unwrap_or_default()))?;
        if let RedisValue::Integer(count) = release_in_part(ctx, name, part, &ids, whole_call)? {
            released += count;
        }
    }
    vouch_whole(item);
    // An id released nothing: released before, perhaps by a call the
    // replicas lack, or never held. A WAIT after this call must cover it.
    if released < request_ids.len() as i64 {
        fence_repeat(ctx);
    }
    Ok(RedisValue::Integer(released))
}

/// Releases the pending holds of `ids` (each a request id and its
/// argument) in `part`, the part of the item at `name` that recorded them.
/// `whole_call` when they are every id of the call, which then replicates
/// as sent if every one was released.
fn release_in_part(
    ctx: &Context,
    name: &Arg,
    part: &mut SaleItem,
    ids: &[(&[u8], &Arg)],
    whole_call: bool,
) -> RedisResult {
    let request_ids: Vec<&[u8]> = ids.iter().map(|(request_id, _)| *request_id).collect();
    let mut rewrite_slot = None;
    let rewrite_slot = &mut rewrite_slot;
    write_opened(
        ctx,
        name,
        part,
        move |item, moment| {
            let rewrite_slot = rewrite_slot;
            let change = match item.judge_release(&request_ids, moment) {
                Verdict::Answer(released) => {
                    return Ok(Judgement::Answer(RedisValue::Integer(released)))
                }
                Verdict::Change(change) => change,
            };
            let mut decision = verbatim(change, c"seckill.expire", moment);
            // The ids of holds this server released, and no other: a
            // hold lapsed here and not swept yet counts as released
            // already, and a replica sent every id would release it now,
            // ahead of this server's sweep.
            if let Change::Release(holds) = &decision.change {
                if !whole_call || holds.len() != ids.len() {
                    let released: Vec<&[u8]> = holds
                        .iter()
                        .map(|hold| item.hold_request_id(*hold))
                        .collect();
                    let rewrite = rewrite_slot.insert(Rewrite::of(c"SECKILL.RELEASE"));
                    rewrite.string(name);
                    for (request_id, arg) in ids {
                        if released.contains(request_id) {
                            rewrite.string(arg);
                        }
                    }
                    decision.effect = Effect::Rewritten(rewrite);
                }
            }
            Ok(Judgement::Decide(decision))
        },
        |_, released, _| RedisValue::Integer(released),
    )
}

/// SECKILL.REFUND key request_id [DETAIL]
pub fn refund(ctx: &Context, args: &[Arg]) -> RedisResult {
    let [_, name, request_id, rest @ ..] = args else {
        return Err(RedisError::WrongArity);
    };
    let request_id = id(request_id, ERR_BAD_REQUEST)?;
    let detail = detail_flag(rest)?;
    write_part(
        ctx,
        name,
        Part::OfRequest(request_id),
        |item, moment| {
            Ok(match item.judge_refund(request_id, moment)? {
                Verdict::Answer(units) => {
                    fence_repeat(ctx);
                    Judgement::Answer(RedisValue::Integer(match units {
                        0 if detail => why_not(item, request_id, moment, 0),
                        units => units,
                    }))
                }
                Verdict::Change(change) => {
                    Judgement::Decide(verbatim(change, c"seckill.refund", moment))
                }
            })
        },
        |_, units, _| RedisValue::Integer(units),
    )
}
