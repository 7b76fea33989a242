//! A string the server lent the module, read in place.
//!
//! The `redis-module` crate hands a handler a `Vec<RedisString>`, which costs
//! an allocation and a reference-count round trip per argument on every
//! call. These commands sit on a flash sale's hot path, so they read the
//! argument vector Redis passes in place instead.

use redis_module::{raw, RedisString};
use std::marker::PhantomData;
use std::os::raw::c_int;

/// One string, as Redis passed it: a command's argument, a key name in a
/// keyspace event or a scan callback, or a string this module made
/// ([`super::OwnedString`]). It cannot outlive `'a`, the time the server
/// (or its owner) keeps the string alive.
#[repr(transparent)]
pub struct Arg<'a> {
    string: *mut raw::RedisModuleString,
    _lent: PhantomData<&'a raw::RedisModuleString>,
}

impl<'a> Arg<'a> {
    /// Wraps a string Redis handed the module.
    ///
    /// # Safety
    /// `string` must be a valid Redis string that stays alive, unchanged,
    /// for `'a`: every method reads through it.
    pub(super) unsafe fn from_ptr(string: *mut raw::RedisModuleString) -> Arg<'a> {
        Arg {
            string,
            _lent: PhantomData,
        }
    }

    pub fn as_bytes(&self) -> &[u8] {
        RedisString::string_as_slice(self.string)
    }

    /// The argument as a 64-bit integer, by Redis's own rules.
    pub fn integer(&self) -> Option<i64> {
        let mut value = 0;
        (raw::string_to_longlong(self.string, &mut value) == raw::Status::Ok).then_some(value)
    }

    pub fn is_keyword(&self, keyword: &str) -> bool {
        self.as_bytes().eq_ignore_ascii_case(keyword.as_bytes())
    }

    /// The string, for a call of the module API within `'a`.
    pub(super) fn as_ptr(&self) -> *mut raw::RedisModuleString {
        self.string
    }
}

/// Views the `argv` Redis passes a command handler as a slice.
///
/// # Safety
/// `argv` must point to `argc` valid strings that outlive `'a`, as Redis
/// guarantees for the duration of a command call.
pub unsafe fn from_argv<'a>(argv: *mut *mut raw::RedisModuleString, argc: c_int) -> &'a [Arg<'a>] {
    match usize::try_from(argc) {
        // SAFETY: as the caller promises; `Arg` is a transparent pointer.
        Ok(len) if !argv.is_null() => unsafe {
            std::slice::from_raw_parts(argv.cast::<Arg>(), len)
        },
        _ => &[],
    }
}
