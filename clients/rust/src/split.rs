//! One item split into parts on several shards.
//!
//! Each part is an ordinary item under its own key; the application puts
//! the parts on different shards (by their names) so that one item's
//! traffic spreads over several main threads. Every user is pinned to one
//! part by a stable hash of the user id, so the per-user limit stays exact:
//! a user's purchases, confirmations and refunds always reach the same
//! part. Stock moves between parts with `TAKE` / `ADD ... ID` / `SETTLE`
//! (the `seckill-rebalancer` binary does it), so a part that runs dry is
//! refilled while its siblings have units.
//!
//! The hash is FNV-1a, 32 bits, over the user id's bytes, modulo the
//! number of parts: the same in the Python, Node.js and Rust libraries.

use crate::command::{Deduct, Init};
use crate::reply::{ConfirmOutcome, DeductResult, ItemInfo, RefundResult, UNLIMITED_STOCK};
use crate::{Result, SeckillCommands};
use redis::ToRedisArgs;

/// FNV-1a over `bytes`, 32 bits.
pub fn fnv1a32(bytes: &[u8]) -> u32 {
    bytes.iter().fold(2_166_136_261u32, |hash, byte| {
        (hash ^ u32::from(*byte)).wrapping_mul(16_777_619)
    })
}

/// Part `i`'s share of `total` units over `parts` parts: an even share,
/// one more for the first `total % parts`.
fn share_of(total: i64, parts: i64, i: usize) -> i64 {
    total / parts + i64::from((i as i64) < total % parts)
}

/// The conventional part names of `item`: `<item>:part:<i>`.
pub fn named(item: &str, parts: usize) -> Vec<String> {
    (0..parts).map(|i| format!("{item}:part:{i}")).collect()
}

/// An item split into parts, each an item of its own.
#[derive(Clone, Debug)]
pub struct SplitItem {
    parts: Vec<String>,
}

impl SplitItem {
    /// Over the part keys `parts` (at least one), in a fixed order: the
    /// order decides which part a user is pinned to.
    pub fn new(parts: Vec<String>) -> SplitItem {
        assert!(!parts.is_empty(), "a split item has at least one part");
        SplitItem { parts }
    }

    pub fn parts(&self) -> &[String] {
        &self.parts
    }

    /// The index of the part `user` buys from.
    pub fn part_for(&self, user: impl AsRef<[u8]>) -> usize {
        fnv1a32(user.as_ref()) as usize % self.parts.len()
    }

    /// The key of the part `user` buys from.
    pub fn key_for(&self, user: impl AsRef<[u8]>) -> &str {
        &self.parts[self.part_for(user)]
    }

    /// Creates every part with an even share of `total` units (the first
    /// `total % parts` get one more), each with the options of `template`
    /// (its key and stock are replaced). Whether each part was created.
    pub fn init<C: SeckillCommands>(
        &self,
        con: &mut C,
        total: i64,
        template: impl Fn(&str, i64) -> Init,
    ) -> Result<Vec<bool>> {
        let n = self.parts.len() as i64;
        self.parts
            .iter()
            .enumerate()
            .map(|(i, part)| con.seckill_init(&template(part, share_of(total, n, i))))
            .collect()
    }

    /// Creates every part of a drop, each size shared out as `init` shares
    /// one stock: part `i` gets `stock / parts` of a size, one more for the
    /// first `stock % parts`. `template` makes each part's `Init` from its
    /// key and its sizes (`Init::with_variants` with its options). Whether
    /// each part was created.
    pub fn init_variants<C: SeckillCommands>(
        &self,
        con: &mut C,
        sizes: &[(&str, i64)],
        template: impl Fn(&str, Vec<(String, i64)>) -> Init,
    ) -> Result<Vec<bool>> {
        let n = self.parts.len() as i64;
        self.parts
            .iter()
            .enumerate()
            .map(|(i, part)| {
                let shares = sizes
                    .iter()
                    .map(|(name, stock)| ((*name).to_owned(), share_of(*stock, n, i)))
                    .collect();
                con.seckill_init(&template(part, shares))
            })
            .collect()
    }

    /// `DEDUCT` on the user's part; `deduct` is built for that part's key.
    pub fn deduct<C: SeckillCommands>(
        &self,
        con: &mut C,
        user: &str,
        deduct: impl FnOnce(&str) -> Deduct,
    ) -> Result<DeductResult> {
        con.seckill_deduct(&deduct(self.key_for(user)))
    }

    pub fn confirm<C: SeckillCommands, I: ToRedisArgs>(
        &self,
        con: &mut C,
        user: &str,
        request_id: I,
    ) -> Result<ConfirmOutcome> {
        con.seckill_confirm(self.key_for(user), request_id)
    }

    pub fn refund<C: SeckillCommands, I: ToRedisArgs>(
        &self,
        con: &mut C,
        user: &str,
        request_id: I,
    ) -> Result<RefundResult> {
        con.seckill_refund(self.key_for(user), request_id)
    }

    pub fn bought<C: SeckillCommands>(&self, con: &mut C, user: &str) -> Result<Option<i64>> {
        con.seckill_bought(self.key_for(user), user)
    }

    /// The stock of all parts together; parts with no item count 0, and
    /// `None` only if no part exists.
    pub fn stock<C: SeckillCommands>(&self, con: &mut C) -> Result<Option<i64>> {
        let mut total: Option<i64> = None;
        for part in &self.parts {
            if let Some(units) = con.seckill_get(part)? {
                total = Some(total.unwrap_or(0).saturating_add(units));
            }
        }
        Ok(total)
    }

    /// Each size of a split drop with its stock over all parts, in the
    /// order the parts name them (parts with no item count 0, a size
    /// unlimited in a part is `UNLIMITED_STOCK`); empty for an item without
    /// sizes, `None` only if no part exists.
    pub fn variants<C: SeckillCommands>(&self, con: &mut C) -> Result<Option<Vec<(String, i64)>>> {
        let mut total: Option<Vec<(String, i64)>> = None;
        for part in &self.parts {
            let Some(sizes) = con.seckill_variants(part)? else {
                continue;
            };
            let total = total.get_or_insert_with(Vec::new);
            for (name, stock) in sizes {
                match total.iter_mut().find(|(known, _)| *known == name) {
                    Some((_, sum)) if *sum == UNLIMITED_STOCK || stock == UNLIMITED_STOCK => {
                        *sum = UNLIMITED_STOCK;
                    }
                    Some((_, sum)) => *sum = sum.saturating_add(stock),
                    None => total.push((name, stock)),
                }
            }
        }
        Ok(total)
    }

    /// Each part's counters, in part order.
    pub fn info<C: SeckillCommands>(&self, con: &mut C) -> Result<Vec<Option<ItemInfo>>> {
        self.parts
            .iter()
            .map(|part| con.seckill_info(part))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv1a32_matches_the_reference_vectors() {
        assert_eq!(fnv1a32(b""), 2_166_136_261);
        assert_eq!(fnv1a32(b"a"), 0xe40c_292c);
        assert_eq!(fnv1a32(b"foobar"), 0xbf9c_f968);
    }

    #[test]
    fn a_user_is_always_pinned_to_the_same_part() {
        let split = SplitItem::new(named("sku:1", 3));
        assert_eq!(split.parts()[2], "sku:1:part:2");
        for user in ["ann", "bob", "user:42"] {
            let part = split.part_for(user);
            assert!(part < 3);
            assert_eq!(split.part_for(user), part);
            assert_eq!(part, fnv1a32(user.as_bytes()) as usize % 3);
        }
    }
}
