//! Variants: several stocks sold as one sale under one per-user limit (a
//! drop's sizes, a phone's colours), kept in one key.
//!
//! An item with variants sells nothing of its own: each variant is a whole
//! item (its stock, its own optional limit, its buyers, request ids and
//! holds), owned by the item that names it. What the variants share is
//! judged here: the item's `LIMIT` caps the units a buyer holds across
//! all of them, and a request id names one purchase of one variant. Every
//! rule that concerns one variant alone is that variant's, unchanged, so
//! holds, refunds, lapses and the order stream work per variant exactly as
//! they do per item.

#[cfg(test)]
use super::change::Order;
use super::ledger::{hash_of, Lookup};
#[cfg(test)]
use super::{Deduction, Verdict};
use super::{ItemError, ItemStats, Moment, SaleItem, Stock};

/// Most variants one item has: a shoe's sizes or a phone's colours fit,
/// and a call that looks at every variant (a buyer's units across them)
/// stays a handful of lookups.
pub const MAX_VARIANTS: usize = 64;

/// Longest variant name, in bytes.
pub const MAX_VARIANT_NAME_LEN: usize = 64;

/// One variant: its name and the item that sells it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Variant {
    pub name: Box<[u8]>,
    /// Boxed so that it stays at one address for as long as it lives: the
    /// sweep's registry knows an item with holds by its address.
    pub item: Box<SaleItem>,
}

/// A variant as INIT declares it.
#[derive(Clone, Copy, Debug)]
pub struct VariantSpec<'a> {
    pub name: &'a [u8],
    pub stock: Stock,
    /// The variant's own per-user cap; 0 for none.
    pub limit: i64,
}

/// What a purchase in one variant must respect besides that variant's own
/// rules: the item's limit across variants, and the units the buyer holds
/// in the other variants at the moment of the purchase.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Quota {
    /// 0: no cap across variants.
    pub limit: i64,
    pub elsewhere: i64,
    /// The request id's and the user's hashes, as every ledger hashes
    /// them: worked out once for all the variants, the one bought from
    /// included.
    pub request_hash: Option<u64>,
    pub user_hash: Option<u64>,
}

impl Quota {
    /// No cap across variants, with the hashes of `user` and `request_id`
    /// worked out for every item a call judges them on.
    pub fn hashing(user: &[u8], request_id: Option<&[u8]>) -> Quota {
        Quota {
            limit: 0,
            elsewhere: 0,
            request_hash: request_id.map(hash_of),
            user_hash: Some(hash_of(user)),
        }
    }

    /// Checks, in debug builds, that the hashes carried are those of
    /// `user` and `request_id`: a record indexed under another id's hash
    /// would never be found again, and its request could be sold twice.
    pub fn check_hashes_of(&self, user: &[u8], request_id: Option<&[u8]>) {
        debug_assert!(self.user_hash.is_none_or(|hash| hash == hash_of(user)));
        debug_assert!(self
            .request_hash
            .is_none_or(|hash| request_id.is_some_and(|id| hash == hash_of(id))));
    }

    /// True if `held` units in the variant bought from, plus `qty` more,
    /// would take the buyer over the item's limit.
    pub fn exceeded_by(&self, held: i64, qty: i64) -> bool {
        self.limit > 0
            && held
                .checked_add(self.elsewhere)
                .and_then(|units| units.checked_add(qty))
                .is_none_or(|units| units > self.limit)
    }
}

/// True if `name` can name a variant.
pub fn valid_variant_name(name: &[u8]) -> bool {
    !name.is_empty() && name.len() <= MAX_VARIANT_NAME_LEN
}

/// Why a set of variants is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VariantError {
    /// None, or more than [`MAX_VARIANTS`].
    Count,
    /// Empty, or longer than [`MAX_VARIANT_NAME_LEN`].
    Name,
    Repeated,
}

impl SaleItem {
    /// An item selling `specs` under `limit` units per user across them (0:
    /// no cap across them).
    pub fn with_variants(specs: &[VariantSpec], limit: i64) -> Result<SaleItem, VariantError> {
        if specs.is_empty() || specs.len() > MAX_VARIANTS {
            return Err(VariantError::Count);
        }
        let mut variants: Vec<Variant> = Vec::with_capacity(specs.len());
        for spec in specs {
            if !valid_variant_name(spec.name) {
                return Err(VariantError::Name);
            }
            if variants.iter().any(|variant| *variant.name == *spec.name) {
                return Err(VariantError::Repeated);
            }
            variants.push(Variant {
                name: spec.name.into(),
                item: Box::new(SaleItem::new(spec.stock, spec.limit)),
            });
        }
        let mut item = SaleItem::new(Stock::Limited(0), limit);
        item.set_variants(variants);
        Ok(item)
    }

    /// The item's variants; none for an item that sells a stock of its own.
    pub fn variants(&self) -> &[Variant] {
        self.rare
            .as_ref()
            .map_or(&[][..], |rare| rare.variants.as_slice())
    }

    pub fn has_variants(&self) -> bool {
        !self.variants().is_empty()
    }

    pub(super) fn set_variants(&mut self, mut variants: Vec<Variant>) {
        for variant in &mut variants {
            if let Some(rare) = variant.item.rare_mut(true) {
                rare.variant_label = Some(variant.name.clone());
            }
        }
        if let Some(rare) = self.rare_mut(!variants.is_empty()) {
            rare.variants = variants;
        }
    }

    pub fn variants_mut(&mut self) -> &mut [Variant] {
        self.rare
            .as_mut()
            .map_or(&mut [][..], |rare| rare.variants.as_mut_slice())
    }

    /// The name of this item as a variant of another, if it is one.
    pub fn variant_label(&self) -> Option<&[u8]> {
        self.rare.as_ref()?.variant_label.as_deref()
    }

    /// The place of the variant called `name`.
    pub fn variant_index(&self, name: &[u8]) -> Option<usize> {
        // Names are a few bytes: compared in place, not by a call to
        // memcmp each.
        self.variants().iter().position(|variant| {
            variant.name.len() == name.len() && variant.name.iter().zip(name).all(|(a, b)| a == b)
        })
    }

    pub fn variant(&self, index: usize) -> Option<&SaleItem> {
        self.variants().get(index).map(|variant| &*variant.item)
    }

    pub fn variant_mut(&mut self, index: usize) -> Option<&mut SaleItem> {
        self.variants_mut()
            .get_mut(index)
            .map(|variant| &mut *variant.item)
    }

    /// The items that sell: the variants of an item that has them, else
    /// the item itself.
    pub fn parts(&self) -> impl Iterator<Item = &SaleItem> {
        let variants = self.variants();
        let own = variants.is_empty().then_some(self);
        own.into_iter()
            .chain(variants.iter().map(|variant| &*variant.item))
    }

    /// The variant that recorded `request_id`, if any.
    pub fn variant_of_request(&self, request_id: &[u8]) -> Option<usize> {
        self.variants()
            .iter()
            .position(|variant| variant.item.request(request_id).is_some())
    }

    /// What a purchase of variant `index` by `user` under `request_id`,
    /// judged at `moment`, must respect across variants, with the ids'
    /// hashes `hashed` carries (from [`Quota::hashing`]). A request id
    /// another variant recorded is refused: it names that purchase.
    pub fn quota_from(
        &self,
        index: usize,
        user: &[u8],
        request_id: Option<&[u8]>,
        moment: Moment,
        hashed: Quota,
    ) -> Result<Quota, ItemError> {
        hashed.check_hashes_of(user, request_id);
        let mut elsewhere: i64 = 0;
        // Every ledger hashes ids alike: each id is hashed once, not once
        // per variant (a purchase of a variant is a flash sale's hot path).
        let request_hash = hashed.request_hash;
        let user_hash = hashed.user_hash.unwrap_or_else(|| hash_of(user));
        for (place, variant) in self.variants().iter().enumerate() {
            if place == index {
                continue;
            }
            let ledger = &variant.item.ledger;
            // A size nobody bought yet (the usual case early in a drop)
            // has nothing to look up.
            if ledger.request_count() == 0 && ledger.buyer_count() == 0 {
                continue;
            }
            if let (Some(hash), Some(id)) = (request_hash, request_id) {
                if matches!(ledger.find_request_hashed(hash, id), Lookup::Found(_)) {
                    return Err(ItemError::RequestMismatch);
                }
            }
            if self.limit > 0 {
                elsewhere =
                    elsewhere.saturating_add(variant.item.units_at(user_hash, user, moment));
            }
        }
        Ok(Quota {
            limit: self.limit,
            elsewhere,
            request_hash,
            user_hash: Some(user_hash),
        })
    }

    /// Units `user` holds at `moment`: holds lapsed by then count as given
    /// back, as the judge counts them.
    /// `hash` is the ledger's hash of `user`.
    pub(super) fn units_at(&self, hash: u64, user: &[u8], moment: Moment) -> i64 {
        let Lookup::Found(buyer) = self.ledger.find_buyer_hashed(hash, user) else {
            return 0;
        };
        let (_, lapsing) = self.lapsing(moment, Some(buyer.handle()));
        buyer.units.saturating_sub(lapsing).max(0)
    }

    /// Judges a DEDUCT of variant `index`, across variants and then as
    /// that variant judges it; `None` for no such variant. What the module
    /// does in two steps around its write pipeline, in one call.
    #[cfg(test)]
    pub fn judge_variant_deduct<'a>(
        &self,
        index: usize,
        order: Order<'a>,
        moment: Moment,
    ) -> Option<Result<Verdict<'a, Deduction>, ItemError>> {
        let variant = self.variant(index)?;
        let hashed = Quota::hashing(order.user, order.request_id);
        Some(
            self.quota_from(index, order.user, order.request_id, moment, hashed)
                .and_then(|quota| variant.judge_deduct_within(order, moment, quota)),
        )
    }

    /// The counters of every variant added up, at `now`; the item's own
    /// for an item without variants.
    pub fn total_stats_at(&self, now: i64) -> ItemStats {
        if !self.has_variants() {
            return self.stats_at(now);
        }
        let mut total = self.stats();
        total.stock = 0;
        let mut unlimited = false;
        for variant in self.variants() {
            let stats = variant.item.stats_at(now);
            unlimited |= stats.unlimited;
            let add = |sum: &mut i64, figure: i64| *sum = sum.saturating_add(figure);
            add(&mut total.stock, stats.stock);
            add(&mut total.initial, stats.initial);
            add(&mut total.added, stats.added);
            add(&mut total.sold, stats.sold);
            add(&mut total.refunded, stats.refunded);
            add(&mut total.held, stats.held);
            add(&mut total.expired, stats.expired);
            add(&mut total.moved_out, stats.moved_out);
            add(&mut total.moved_in, stats.moved_in);
            total.holds = total.holds.saturating_add(stats.holds);
            // A buyer of two variants counts in each: telling them apart
            // would walk every buyer of every variant.
            total.buyers = total.buyers.saturating_add(stats.buyers);
            total.requests = total.requests.saturating_add(stats.requests);
        }
        if unlimited {
            total.stock = super::UNLIMITED_STOCK;
        }
        total.unlimited = unlimited;
        total
    }

    /// Units `user` holds across every part at `now`.
    pub fn total_bought_at(&self, user: &[u8], now: i64) -> i64 {
        self.parts()
            .map(|part| part.bought_at(user, now))
            .fold(0, i64::saturating_add)
    }
}

impl SaleItem {
    /// The earliest deadline among the pending holds of every part: when
    /// something of the sale as a whole next lapses.
    #[inline]
    pub fn earliest_deadline(&self) -> Option<i64> {
        if self.rare.is_none() {
            return self.next_deadline();
        }
        self.parts().filter_map(SaleItem::next_deadline).min()
    }

    /// The latest replicated moment of every part (see
    /// [`SaleItem::replicated_moment`]) and [`SaleItem::earliest_deadline`],
    /// in one pass over the variants: a purchase of one variant is judged
    /// against the others too, at the moment the whole sale was last
    /// replicated with.
    pub fn latest_replicated_and_earliest_due(&self) -> (i64, Option<i64>) {
        let variants = self.variants();
        if variants.is_empty() {
            return (self.replicated_moment(), self.next_deadline());
        }
        let mut latest = 0;
        let mut earliest: Option<i64> = None;
        for variant in variants {
            latest = latest.max(variant.item.replicated_moment());
            if let Some(deadline) = variant.item.next_deadline() {
                earliest = Some(earliest.map_or(deadline, |at| at.min(deadline)));
            }
        }
        (latest, earliest)
    }
}

#[cfg(test)]
mod tests;
