//! Moving stock between the parts of a split item: TAKE, ADD ... ID
//! (receiving), SETTLE, TRANSFERS.

use super::*;
use crate::rewrite::{self, Rewrite};
use crate::sale_item::{Change, SaleItem, Take, Verdict, MAX_DESTINATION_LEN};
use crate::server::{Arg, ItemKey};
use crate::write::{fence_repeat, master_decided, write_part, Decision, Effect, Judgement, Part};
use redis_module::{Context, RedisError, RedisResult, RedisValue};

/// SECKILL.ADD key qty ID transfer_id: units moved here from another part
/// of a split item, added once per transfer id. Replies the stock after
/// the first call, to that call and to every replay.
pub(super) fn receive_transfer(
    ctx: &Context,
    name: &Arg,
    qty: i64,
    transfer_id: &[u8],
    variant: Option<&Arg>,
    decided_at: Option<i64>,
) -> RedisResult {
    let mut rewrite_slot = None;
    let rewrite_slot = &mut rewrite_slot;
    write_part(
        ctx,
        name,
        Part::Transfer {
            variant: variant.map(Arg::as_bytes),
            transfer_id,
        },
        move |item, moment| {
            let moment = moment.or_decided(decided_at);
            let change = match item.judge_transfer_in(transfer_id, qty, moment)? {
                // Only a replay of the transfer id is answered.
                Verdict::Answer(reply) => {
                    fence_repeat(ctx);
                    return Ok(Judgement::Answer(RedisValue::Integer(reply)));
                }
                Verdict::Change(change) => change,
            };
            // The stock recorded as the reply counts lapsed holds as given
            // back: a replica must judge them at the master's moment.
            let Some(now) = judged_with_lapses(item, moment) else {
                return Ok(Judgement::Decide(verbatim(change, c"seckill.add", moment)));
            };
            let rewrite = rewrite_slot.insert(Rewrite::of(c"SECKILL.ADD"));
            rewrite
                .string(name)
                .number(qty)
                .keyword(&rewrite::ID)
                .arg(transfer_id);
            if let Some(variant) = variant {
                rewrite.keyword(&rewrite::VARIANT).string(variant);
            }
            rewrite.option(&rewrite::AT, now);
            Ok(Judgement::Decide(Decision {
                change,
                effect: Effect::Rewritten(rewrite),
                event: Some(c"seckill.add"),
                moment,
            }))
        },
        |_, reply, _| RedisValue::Integer(reply),
    )
}

/// SECKILL.TAKE key qty ID transfer_id [TO destination] [VARIANT name]:
/// takes up to `qty` units of the stock in hand out of this part (of the
/// variant named), once per transfer id, and keeps the transfer open until
/// SETTLE. Replies the units taken.
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
    let mut variant: Option<&Arg> = None;
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
        } else if option.is_keyword("VARIANT") && variant.is_none() {
            variant = Some(value);
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
    let mut rewrite_slot = None;
    let rewrite_slot = &mut rewrite_slot;
    write_part(
        ctx,
        name,
        Part::Transfer {
            variant: variant.map(Arg::as_bytes),
            transfer_id,
        },
        move |item, moment| {
            let change = match item.judge_take(take)? {
                Verdict::Answer(taken) => {
                    // A replay answers the units taken then, never 0: a
                    // take of nothing records nothing to be replayed.
                    if taken > 0 {
                        fence_repeat(ctx);
                    }
                    return Ok(Judgement::Answer(RedisValue::Integer(taken)));
                }
                Verdict::Change(change) => change,
            };
            let Change::Take { taken, .. } = change else {
                return Ok(Judgement::Answer(RedisValue::Integer(0)));
            };
            let rewrite = rewrite_slot.insert(Rewrite::of(c"SECKILL.TAKE"));
            rewrite
                .string(name)
                .string(qty_arg)
                .keyword(&rewrite::ID)
                .arg(transfer_id);
            if let Some(destination) = destination {
                rewrite.keyword(&rewrite::TO).arg(destination);
            }
            if let Some(variant) = variant {
                rewrite.keyword(&rewrite::VARIANT).string(variant);
            }
            rewrite.option(&rewrite::TAKEN, taken);
            Ok(Judgement::Decide(Decision {
                change,
                effect: Effect::Rewritten(rewrite),
                event: Some(c"seckill.take"),
                moment,
            }))
        },
        |_, taken, _| RedisValue::Integer(taken),
    )
}

/// SECKILL.SETTLE key transfer_id [VARIANT name]: closes a transfer given
/// out once its units arrived. Replies 1 closed now, 0 closed before, -4
/// no such transfer given out here (by the variant named).
pub fn settle(ctx: &Context, args: &[Arg]) -> RedisResult {
    let (name, transfer_id, variant) = match args {
        [_, name, transfer_id] => (name, transfer_id, None),
        [_, name, transfer_id, keyword, variant] if keyword.is_keyword("VARIANT") => {
            (name, transfer_id, Some(variant.as_bytes()))
        }
        [_, _, _, ..] => return Err(RedisError::Str(ERR_SYNTAX)),
        _ => return Err(RedisError::WrongArity),
    };
    let transfer_id = id(transfer_id, ERR_BAD_TRANSFER)?;
    write_part(
        ctx,
        name,
        Part::Transfer {
            variant,
            transfer_id,
        },
        |item, moment| {
            Ok(match item.judge_settle(transfer_id) {
                Verdict::Answer(reply) => {
                    // 0: settled before, by a call the replicas may lack.
                    if reply == 0 {
                        fence_repeat(ctx);
                    }
                    Judgement::Answer(RedisValue::Integer(reply))
                }
                Verdict::Change(change) => {
                    Judgement::Decide(verbatim(change, c"seckill.settle", moment))
                }
            })
        },
        |_, _, _| RedisValue::Integer(1),
    )
}

/// SECKILL.TRANSFERS key: the transfers this part gave out and that are
/// not settled, by transfer id, each `[transfer_id, units, destination]`
/// (nil destination if none was given), and the variant's name after them
/// for an item with variants, variant by variant; nil if there is no item.
pub fn transfers(ctx: &Context, args: &[Arg]) -> RedisResult {
    let [_, name] = args else {
        return Err(RedisError::WrongArity);
    };
    let key = ItemKey::open_read(ctx, name);
    let Some(item) = key.item()? else {
        return Ok(RedisValue::Null);
    };
    let listed = |part: &SaleItem, variant: Option<&[u8]>| -> Vec<RedisValue> {
        part.open_transfers()
            .map(|(transfer_id, units, destination)| {
                let mut entry = vec![
                    RedisValue::StringBuffer(transfer_id.to_vec()),
                    RedisValue::Integer(units),
                    destination.map_or(RedisValue::Null, |d| RedisValue::StringBuffer(d.to_vec())),
                ];
                if let Some(variant) = variant {
                    entry.push(RedisValue::StringBuffer(variant.to_vec()));
                }
                RedisValue::Array(entry)
            })
            .collect()
    };
    let open = if item.has_variants() {
        item.variants()
            .iter()
            .flat_map(|variant| listed(&variant.item, Some(&variant.name)))
            .collect()
    } else {
        listed(item, None)
    };
    Ok(RedisValue::Array(open))
}
