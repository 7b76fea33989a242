//! SECKILL.IMPORT: records loaded into an item, to rebuild a lost one from
//! the order database.

use super::*;
use crate::sale_item::{ImportRecord, Status, Verdict, MAX_IMPORT_RECORDS};
use crate::write::{write_item, Judgement};
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

/// SECKILL.IMPORT key record [record ...], each record
/// `BUYER user units` or `REQUEST request_id user qty status deadline reply`:
/// replies how many records it imported. Judged whole: a refused call
/// imports none.
pub fn import(ctx: &Context, args: &[Arg]) -> RedisResult {
    let [_, name, rest @ ..] = args else {
        return Err(RedisError::WrongArity);
    };
    let mut rest = rest;
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
    write_item(
        ctx,
        name,
        |item, moment| {
            Ok(match item.judge_import(records)? {
                Verdict::Answer(reply) => Judgement::Answer(RedisValue::Integer(reply)),
                // Deterministic: no clock is read, every server imports alike.
                Verdict::Change(change) => {
                    Judgement::Decide(verbatim(change, c"seckill.import", moment))
                }
            })
        },
        |_, imported, _| RedisValue::Integer(imported),
    )
}
