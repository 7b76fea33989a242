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
        parse_integer(self.as_bytes())
    }

    pub fn is_keyword(&self, keyword: &str) -> bool {
        self.as_bytes().eq_ignore_ascii_case(keyword.as_bytes())
    }

    /// The string, for a call of the module API within `'a`.
    pub(super) fn as_ptr(&self) -> *mut raw::RedisModuleString {
        self.string
    }
}

/// True if `bytes` is `keyword`, an upper-case word of letters only, in
/// any case. A letter and its other case differ in bit 5 alone, and no
/// other byte matches a letter with that bit set, so each byte is compared
/// in one step: a fixed-length compare the compiler unrolls, where
/// `eq_ignore_ascii_case` folds both sides byte by byte (a hot path's
/// options are read on every call).
pub fn is_word<const N: usize>(bytes: &[u8], keyword: &[u8; N]) -> bool {
    debug_assert!(keyword.iter().all(u8::is_ascii_uppercase));
    let Ok(bytes) = <&[u8; N]>::try_from(bytes) else {
        return false;
    };
    bytes
        .iter()
        .zip(keyword)
        .fold(true, |same, (byte, letter)| {
            same & (byte | 0x20 == letter | 0x20)
        })
}

/// `bytes` as a 64-bit integer by the rules of the server's `string2ll`
/// (what `RedisModule_StringToLongLong` applies): the decimal form of an
/// integer exactly as the server would print it, so no sign but `-`, no
/// leading zeros, no `-0`, no spaces. Read here rather than through the
/// module API, whose call cost more than the parse on a sale's hot path.
pub fn parse_integer(bytes: &[u8]) -> Option<i64> {
    let (negative, digits) = match bytes {
        [b'0'] => return Some(0),
        [b'-', digits @ ..] => (true, digits),
        digits => (false, digits),
    };
    // A first digit of 1 to 9, and no more than i64's 19 digits.
    if !matches!(digits.first(), Some(b'1'..=b'9')) || digits.len() > 19 {
        return None;
    }
    let mut magnitude: u64 = 0;
    for &digit in digits {
        if !digit.is_ascii_digit() {
            return None;
        }
        magnitude = magnitude
            .checked_mul(10)?
            .checked_add(u64::from(digit - b'0'))?;
    }
    if negative {
        0i64.checked_sub_unsigned(magnitude)
    } else {
        i64::try_from(magnitude).ok()
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

#[cfg(test)]
mod tests {
    use super::{is_word, parse_integer};
    use proptest::prelude::*;

    #[test]
    fn integers_are_read_as_the_server_reads_them() {
        for (text, value) in [
            ("0", Some(0)),
            ("1", Some(1)),
            ("-1", Some(-1)),
            ("9223372036854775807", Some(i64::MAX)),
            ("-9223372036854775808", Some(i64::MIN)),
            ("9223372036854775808", None),
            ("-9223372036854775809", None),
            ("99999999999999999999", None),
            ("", None),
            ("-", None),
            ("-0", None),
            ("+1", None),
            ("01", None),
            ("00", None),
            (" 1", None),
            ("1 ", None),
            ("1.0", None),
            ("1e3", None),
            ("0x10", None),
        ] {
            assert_eq!(parse_integer(text.as_bytes()), value, "{text:?}");
        }
    }

    proptest! {
        /// A word matches exactly what a case-blind compare matches: the
        /// keyword in any mix of cases, with any byte changed to any other
        /// (the other case of a non-letter included), or cut short.
        #[test]
        fn a_word_matches_as_a_case_blind_compare(
            cases in any::<u16>(),
            changed in any::<(usize, u8)>(),
            cut in 0usize..14,
        ) {
            let keyword = b"WITHDEADLINE";
            let mut bytes: Vec<u8> = keyword
                .iter()
                .enumerate()
                .map(|(at, letter)| if cases >> at & 1 == 1 { letter.to_ascii_lowercase() } else { *letter })
                .collect();
            prop_assert!(is_word(&bytes, keyword));
            let (at, byte) = changed;
            bytes[at % keyword.len()] = byte;
            prop_assert_eq!(is_word(&bytes, keyword), bytes.eq_ignore_ascii_case(keyword));
            bytes.truncate(cut);
            prop_assert_eq!(is_word(&bytes, keyword), bytes.eq_ignore_ascii_case(keyword));
            prop_assert_eq!(is_word(&bytes, b"ID"), bytes.eq_ignore_ascii_case(b"ID"));
        }

        /// What the server's `string2ll` accepts is exactly the decimal
        /// form an integer prints as.
        #[test]
        fn only_an_integer_as_printed_is_read(text in "-?[0-9+ ]{0,21}") {
            let printed = text.parse::<i64>().ok().filter(|n| n.to_string() == text);
            prop_assert_eq!(parse_integer(text.as_bytes()), printed);
        }

        #[test]
        fn every_integer_reads_back(n in any::<i64>()) {
            prop_assert_eq!(parse_integer(n.to_string().as_bytes()), Some(n));
        }
    }
}
