//! SECKILL.IMPORT: records loaded into an item, to rebuild a lost one from
//! the order database.

use super::*;
use crate::sale_item::{ImportRecord, Status, Verdict, MAX_IMPORT_RECORDS};
use crate::server::ItemKey;
use crate::write::{part_index, vouch_whole, write_opened, Judgement, Part, NO_SUCH_ITEM};
use redis_module::{RedisResult, RedisValue};

fn status(arg: &Arg) -> Result<Status, RedisError> {
    [
        Status::Purchased,
        Status::Held,
        Status::Confirmed,
        Status::Refunded,
        Status::Lapsed,
    ]
    .into_iter()
    .find(|status| arg.is_keyword(status.name()))
    .ok_or(RedisError::Str(ERR_IMPORT_STATUS))
}

/// SECKILL.IMPORT key [VARIANT name] record [record ...], each record
/// `BUYER user units` or `REQUEST request_id user qty status deadline reply`:
/// replies how many records it imported. Judged whole: a refused call
/// imports none. On an item with variants the records are of the variant
/// named, and are judged against the others too (`judge_import_across`).
pub fn import(ctx: &Context, args: &[Arg]) -> RedisResult {
    let [_, name, rest @ ..] = args else {
        return Err(RedisError::WrongArity);
    };
    let (variant, mut rest) = match rest {
        [keyword, variant, tail @ ..] if keyword.is_keyword("VARIANT") => {
            (Some(variant.as_bytes()), tail)
        }
        _ => (None, rest),
    };
    if rest.is_empty() {
        return Err(RedisError::WrongArity);
    }
    let mut records = Vec::new();
    while let [keyword, tail @ ..] = rest {
        if records.len() == MAX_IMPORT_RECORDS {
            return Err(RedisError::Str(ERR_IMPORT_TOO_MANY));
        }
        if keyword.is_keyword("BUYER") {
            let [user, units, tail @ ..] = tail else {
                return Err(RedisError::Str(ERR_SYNTAX));
            };
            records.push(ImportRecord::Buyer {
                user: id(user, ERR_BAD_USER)?,
                units: positive(units)?,
            });
            rest = tail;
        } else if keyword.is_keyword("REQUEST") {
            let [request_id, user, qty, status_arg, deadline, reply, tail @ ..] = tail else {
                return Err(RedisError::Str(ERR_SYNTAX));
            };
            records.push(ImportRecord::Request {
                id: id(request_id, ERR_BAD_REQUEST)?,
                user: id(user, ERR_BAD_USER)?,
                qty: positive(qty)?,
                status: status(status_arg)?,
                deadline: integer(deadline)?,
                reply: integer(reply)?,
            });
            rest = tail;
        } else {
            return Err(RedisError::Str(ERR_SYNTAX));
        }
    }
    let mut key = ItemKey::open_read(ctx, name);
    let Some(item) = key.item_mut()? else {
        return Ok(RedisValue::Integer(NO_SUCH_ITEM));
    };
    let index = part_index(item, Part::Variant(variant))?;
    if let Some(index) = index {
        item.judge_import_across(index, &records)?;
    }
    let judge = |part: &SaleItem, moment| {
        Ok(match part.judge_import(records)? {
            Verdict::Answer(reply) => Judgement::Answer(RedisValue::Integer(reply)),
            // Deterministic: no clock is read, every server imports alike.
            Verdict::Change(change) => {
                Judgement::Decide(verbatim(change, c"seckill.import", moment))
            }
        })
    };
    let imported = |_: &SaleItem, imported, _| RedisValue::Integer(imported);
    let Some(index) = index else {
        return write_opened(ctx, name, item, judge, imported);
    };
    let part = item
        .variant_mut(index)
        .ok_or(RedisError::Str(ERR_NO_SUCH_VARIANT))?;
    let reply = write_opened(ctx, name, part, judge, imported);
    vouch_whole(item);
    reply
}
