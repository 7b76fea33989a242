//! Replies written piece by piece, where a `RedisValue` would not keep the
//! order or the form (SECKILL.INFO's map, raw byte strings).

use redis_module::{raw, Context};
use std::ffi::CStr;
use std::os::raw::{c_char, c_long};

/// Opens a map of `len` pairs: a map under RESP3, a flat field/value array
/// under RESP2.
pub fn map(ctx: &Context, len: usize) {
    raw::reply_with_map(ctx.get_raw(), len as c_long);
}

/// Opens an array of `len` elements.
pub fn array(ctx: &Context, len: usize) {
    raw::reply_with_array(ctx.get_raw(), len as c_long);
}

/// A simple string (`+text`), as Redis replies `OK`.
pub fn simple(ctx: &Context, text: &CStr) {
    raw::reply_with_simple_string(ctx.get_raw(), text.as_ptr());
}

pub fn bytes(ctx: &Context, bytes: &[u8]) {
    raw::reply_with_string_buffer(ctx.get_raw(), bytes.as_ptr().cast::<c_char>(), bytes.len());
}

pub fn integer(ctx: &Context, value: i64) {
    raw::reply_with_long_long(ctx.get_raw(), value);
}

pub fn null(ctx: &Context) {
    raw::reply_with_null(ctx.get_raw());
}
