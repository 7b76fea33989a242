//! The command replicas and the AOF receive in place of the one a client
//! sent, when the client's depends on something only this server saw: the
//! clock a relative deadline was read against (`HOLD`, `EX`), the moment
//! lapsed holds were judged at, the units a transfer found in hand.
//!
//! Every rewrite is built here, one argument after another into one
//! buffer, so that a write on the hold path allocates twice for its
//! rewrite, not once per argument.

use std::io::Write;

/// A command to replicate, built argument by argument.
pub struct Rewrite {
    command: &'static str,
    /// Every argument, one after the other.
    bytes: Vec<u8>,
    /// Where each argument ends in `bytes`.
    ends: Vec<usize>,
}

impl Rewrite {
    /// An empty `command`, to which arguments are added in order.
    pub fn of(command: &'static str) -> Rewrite {
        Rewrite {
            command,
            // Room for a DEDUCT with a hold and a lapse moment.
            bytes: Vec::with_capacity(128),
            ends: Vec::with_capacity(10),
        }
    }

    /// Adds `arg` as it is.
    pub fn arg(&mut self, arg: &[u8]) -> &mut Rewrite {
        self.bytes.extend_from_slice(arg);
        self.ends.push(self.bytes.len());
        self
    }

    /// Adds `number` in decimal, as a client would send it.
    pub fn number(&mut self, number: i64) -> &mut Rewrite {
        write!(self.bytes, "{number}").expect("writing to a Vec cannot fail");
        self.ends.push(self.bytes.len());
        self
    }

    /// Adds `option` and its numeric value.
    pub fn option(&mut self, option: &[u8], value: i64) -> &mut Rewrite {
        self.arg(option).number(value)
    }

    pub fn command(&self) -> &'static str {
        self.command
    }

    /// The arguments, in the order they were added.
    pub fn args(&self) -> Vec<&[u8]> {
        let mut start = 0;
        self.ends
            .iter()
            .map(|&end| {
                let arg = &self.bytes[start..end];
                start = end;
                arg
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::Rewrite;

    #[test]
    fn arguments_come_back_in_order_and_whole() {
        let mut rewrite = Rewrite::of("SECKILL.DEDUCT");
        rewrite
            .arg(b"item")
            .arg(b"")
            .number(-42)
            .option(b"HOLDUNTIL", i64::MAX)
            .arg(b"with space");
        assert_eq!(rewrite.command(), "SECKILL.DEDUCT");
        let max = i64::MAX.to_string();
        assert_eq!(
            rewrite.args(),
            vec![
                &b"item"[..],
                b"",
                b"-42",
                b"HOLDUNTIL",
                max.as_bytes(),
                b"with space"
            ]
        );
    }

    #[test]
    fn a_rewrite_with_no_arguments_has_none() {
        assert!(Rewrite::of("SECKILL.ADD").args().is_empty());
    }
}
