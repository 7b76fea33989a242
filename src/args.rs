//! A command's arguments, borrowed from Redis for the duration of the call.
//!
//! The `redis-module` crate hands a handler a `Vec<RedisString>`, which costs
//! an allocation and a reference-count round trip per argument on every
//! call. These commands sit on a flash sale's hot path, so they read the
//! argument vector Redis passes in place instead.

use redis_module::{raw, RedisString};
use std::os::raw::c_int;

/// One argument, as Redis passed it.
#[repr(transparent)]
pub struct Arg(*mut raw::RedisModuleString);

impl Arg {
    /// Wraps a string Redis handed the module outside a command's `argv`,
    /// e.g. a key name in a keyspace event or a scan callback.
    ///
    /// # Safety
    /// `string` must be a valid Redis string that outlives the `Arg`: every
    /// method reads through it.
    pub unsafe fn from_ptr(string: *mut raw::RedisModuleString) -> Arg {
        Arg(string)
    }

    pub fn as_bytes(&self) -> &[u8] {
        RedisString::string_as_slice(self.0)
    }

    /// The argument as a 64-bit integer, by Redis's own rules.
    pub fn integer(&self) -> Option<i64> {
        let mut value = 0;
        (raw::string_to_longlong(self.0, &mut value) == raw::Status::Ok).then_some(value)
    }

    pub fn is_keyword(&self, keyword: &str) -> bool {
        self.as_bytes().eq_ignore_ascii_case(keyword.as_bytes())
    }

    pub fn as_ptr(&self) -> *mut raw::RedisModuleString {
        self.0
    }
}

/// Views the `argv` Redis passes a command handler as a slice.
///
/// # Safety
/// `argv` must point to `argc` valid strings that outlive the returned
/// slice, as Redis guarantees for the duration of a command call.
pub unsafe fn from_argv<'a>(argv: *mut *mut raw::RedisModuleString, argc: c_int) -> &'a [Arg] {
    match usize::try_from(argc) {
        // SAFETY: as the caller promises; `Arg` is a transparent pointer.
        Ok(len) if !argv.is_null() => unsafe {
            std::slice::from_raw_parts(argv.cast::<Arg>(), len)
        },
        _ => &[],
    }
}
