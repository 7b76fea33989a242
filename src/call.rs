//! Commands the module calls on the server itself (`RedisModule_Call`), for
//! what the module API does not tell: a stream's last ID, a slot's
//! migration state, the eviction policy.

use redis_module::{Context, RedisValue};

/// A string reply as text, whichever form the client library gave it.
pub fn text(value: &RedisValue) -> Option<String> {
    match value {
        RedisValue::SimpleStringStatic(text) => Some((*text).to_owned()),
        RedisValue::SimpleString(text) | RedisValue::BulkString(text) => Some(text.clone()),
        RedisValue::BulkRedisString(text) => Some(text.to_string_lossy()),
        RedisValue::StringBuffer(bytes) => Some(String::from_utf8_lossy(bytes).into_owned()),
        _ => None,
    }
}

/// Calls `command` and reads a flat field/value reply (RESP2's form of a
/// map) for the value of `field`, as text.
pub fn field(ctx: &Context, command: &str, args: &[&[u8]], field: &str) -> Option<String> {
    let Ok(RedisValue::Array(reply)) = ctx.call(command, args) else {
        return None;
    };
    reply
        .chunks(2)
        .find(|pair| text(&pair[0]).as_deref() == Some(field))
        .and_then(|pair| pair.get(1))
        .and_then(text)
}

/// Calls `command` for a single string reply, as text.
pub fn string(ctx: &Context, command: &str, args: &[&[u8]]) -> Option<String> {
    ctx.call(command, args).ok().as_ref().and_then(text)
}

/// A numeric setting of the server (`CONFIG GET name`), if it has it.
pub fn config_number<T: std::str::FromStr>(ctx: &Context, name: &str) -> Option<T> {
    field(ctx, "CONFIG", &[b"GET", name.as_bytes()], name).and_then(|value| value.parse().ok())
}

/// How many databases the server has (`databases`; 16 if it will not say).
pub fn database_count(ctx: &Context) -> std::os::raw::c_int {
    config_number(ctx, "databases").unwrap_or(16)
}
