//! The command replicas and the AOF receive in place of the one a client
//! sent, when the client's depends on something only this server saw: the
//! clock a relative deadline was read against (`HOLD`, `EX`), the moment
//! lapsed holds were judged at, the units a transfer found in hand.
//!
//! Every rewrite is built here, argument by argument. The call's own
//! arguments are kept as the server's strings and replicated as they are:
//! only numbers and keywords become new strings.

use crate::server::notify::ReplicaArg;
use crate::server::{Arg, Keyword};
use std::ffi::CStr;

// The keywords rewrites add, each one string kept for every call.
pub static ID: Keyword = Keyword::new(c"ID");
pub static HOLDUNTIL: Keyword = Keyword::new(c"HOLDUNTIL");
pub static AT: Keyword = Keyword::new(c"AT");
pub static PXAT: Keyword = Keyword::new(c"PXAT");
pub static TO: Keyword = Keyword::new(c"TO");
pub static TAKEN: Keyword = Keyword::new(c"TAKEN");
pub static VARIANT: Keyword = Keyword::new(c"VARIANT");

/// A command to replicate, built argument by argument.
pub struct Rewrite<'a> {
    command: &'static CStr,
    /// The arguments while they fit, in place: a DEDUCT with a hold and a
    /// lapse moment does, and it is on a flash sale's hot path (every
    /// relative hold). A longer command moves them all to `spilled`.
    inline: [ReplicaArg<'a>; INLINE],
    len: usize,
    spilled: Vec<ReplicaArg<'a>>,
}

/// Arguments a rewrite keeps in place.
const INLINE: usize = 10;

impl<'a> Rewrite<'a> {
    /// An empty `command`, to which arguments are added in order.
    pub fn of(command: &'static CStr) -> Rewrite<'a> {
        Rewrite {
            command,
            inline: [ReplicaArg::Number(0); INLINE],
            len: 0,
            spilled: Vec::new(),
        }
    }

    /// Adds one of the call's own arguments, as the server passed it.
    pub fn string(&mut self, arg: &'a Arg<'a>) -> &mut Rewrite<'a> {
        self.push(ReplicaArg::String(arg))
    }

    /// Adds `bytes`.
    pub fn arg(&mut self, bytes: &'a [u8]) -> &mut Rewrite<'a> {
        self.push(ReplicaArg::Bytes(bytes))
    }

    /// Adds `keyword`.
    pub fn keyword(&mut self, keyword: &'static Keyword) -> &mut Rewrite<'a> {
        self.push(ReplicaArg::Keyword(keyword))
    }

    /// Adds `number` in decimal, as a client would send it.
    pub fn number(&mut self, number: i64) -> &mut Rewrite<'a> {
        self.push(ReplicaArg::Number(number))
    }

    /// Adds `option` and its numeric value.
    pub fn option(&mut self, option: &'static Keyword, value: i64) -> &mut Rewrite<'a> {
        self.keyword(option).number(value)
    }

    pub fn command(&self) -> &'static CStr {
        self.command
    }

    fn push(&mut self, arg: ReplicaArg<'a>) -> &mut Rewrite<'a> {
        if self.spilled.is_empty() && self.len < INLINE {
            self.inline[self.len] = arg;
            self.len += 1;
        } else {
            if self.spilled.is_empty() {
                self.spilled.extend_from_slice(&self.inline[..self.len]);
            }
            self.spilled.push(arg);
        }
        self
    }

    /// The arguments, in the order they were added.
    pub fn args(&self) -> &[ReplicaArg<'a>] {
        if self.spilled.is_empty() {
            &self.inline[..self.len]
        } else {
            &self.spilled
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{ReplicaArg, Rewrite};

    /// The arguments as text, for comparing.
    fn shown(rewrite: &Rewrite) -> Vec<String> {
        rewrite
            .args()
            .iter()
            .map(|arg| match arg {
                ReplicaArg::String(_) => "<string>".to_owned(),
                ReplicaArg::Bytes(bytes) => String::from_utf8_lossy(bytes).into_owned(),
                ReplicaArg::Keyword(keyword) => {
                    String::from_utf8_lossy(keyword.text()).into_owned()
                }
                ReplicaArg::Number(number) => number.to_string(),
            })
            .collect()
    }

    #[test]
    fn arguments_come_back_in_order_and_whole() {
        let mut rewrite = Rewrite::of(c"SECKILL.DEDUCT");
        rewrite
            .arg(b"item")
            .arg(b"")
            .number(-42)
            .option(&super::HOLDUNTIL, i64::MAX)
            .arg(b"with space");
        assert_eq!(rewrite.command(), c"SECKILL.DEDUCT");
        assert_eq!(
            shown(&rewrite),
            [
                "item",
                "",
                "-42",
                "HOLDUNTIL",
                &i64::MAX.to_string(),
                "with space"
            ]
        );
    }

    #[test]
    fn a_rewrite_longer_than_its_room_keeps_every_argument_in_order() {
        let mut rewrite = Rewrite::of(c"SECKILL.INIT");
        for number in 0..25 {
            rewrite.number(number);
        }
        let expected: Vec<String> = (0..25).map(|number: i64| number.to_string()).collect();
        assert_eq!(shown(&rewrite), expected);
    }

    #[test]
    fn a_rewrite_with_no_arguments_has_none() {
        assert!(Rewrite::of(c"SECKILL.ADD").args().is_empty());
    }
}
