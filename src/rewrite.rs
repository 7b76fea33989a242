//! The command replicas and the AOF receive in place of the one a client
//! sent, when the client's depends on something only this server saw: the
//! clock a relative deadline was read against (`HOLD`, `EX`), the moment
//! lapsed holds were judged at, the units a transfer found in hand.
//!
//! Every rewrite is built here, argument by argument. The call's own
//! arguments are kept as the server's strings and replicated as they are:
//! only numbers and keywords become new strings.

use crate::server::notify::ReplicaArg;
use crate::server::Arg;
use std::ffi::CStr;

/// A command to replicate, built argument by argument.
pub struct Rewrite<'a> {
    command: &'static CStr,
    args: Vec<ReplicaArg<'a>>,
}

impl<'a> Rewrite<'a> {
    /// An empty `command`, to which arguments are added in order.
    pub fn of(command: &'static CStr) -> Rewrite<'a> {
        Rewrite {
            command,
            // Room for a DEDUCT with a hold and a lapse moment.
            args: Vec::with_capacity(10),
        }
    }

    /// Adds one of the call's own arguments, as the server passed it.
    pub fn string(&mut self, arg: &'a Arg<'a>) -> &mut Rewrite<'a> {
        self.args.push(ReplicaArg::String(arg));
        self
    }

    /// Adds `bytes`, e.g. a keyword.
    pub fn arg(&mut self, bytes: &'a [u8]) -> &mut Rewrite<'a> {
        self.args.push(ReplicaArg::Bytes(bytes));
        self
    }

    /// Adds `number` in decimal, as a client would send it.
    pub fn number(&mut self, number: i64) -> &mut Rewrite<'a> {
        self.args.push(ReplicaArg::Number(number));
        self
    }

    /// Adds `option` and its numeric value.
    pub fn option(&mut self, option: &'a [u8], value: i64) -> &mut Rewrite<'a> {
        self.arg(option).number(value)
    }

    pub fn command(&self) -> &'static CStr {
        self.command
    }

    /// The arguments, in the order they were added.
    pub fn args(&self) -> &[ReplicaArg<'a>] {
        &self.args
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
            .option(b"HOLDUNTIL", i64::MAX)
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
    fn a_rewrite_with_no_arguments_has_none() {
        assert!(Rewrite::of(c"SECKILL.ADD").args().is_empty());
    }
}
