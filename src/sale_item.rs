//! One flash-sale item: its stock, per-user limit, what every buyer holds, and
//! the ledger of request ids. This module knows nothing about Redis, so every
//! rule of the sale is unit- and property-tested without a server.

mod bookkeeping;
mod change;
pub mod codec;
mod events;
mod import;
mod index;
#[cfg(test)]
mod judged_and_applied;
mod ledger;
mod radix;
mod scan;
mod transfer;
mod variants;
#[cfg(test)]
pub use judged_and_applied::{Lapsed, Restock};

pub use change::{Change, Counted, HoldRef, Order, Verdict};
pub use events::EventView;
pub use import::{ImportError, ImportRecord, MAX_IMPORT_RECORDS};
pub use ledger::set_allocator_size_classes;
#[cfg(test)]
pub use ledger::RequestState;
pub use ledger::RequestView;
use ledger::{LazyLedger, Lookup};
pub use scan::{ScanRecord, Status};
pub use transfer::{Take, Transfer, Transfers, MAX_DESTINATION_LEN};
pub use variants::{Quota, Variant, VariantSpec, MAX_VARIANTS};

/// Longest user id or request id accepted, in bytes. Ids are stored per
/// purchase, so the bound keeps one hostile client from inflating an item.
pub const MAX_ID_LEN: usize = 128;

/// The stock an unlimited item reports everywhere: it never runs out.
pub const UNLIMITED_STOCK: i64 = i64::MAX;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stock {
    Limited(i64),
    Unlimited,
}

impl Stock {
    /// What clients see as the remaining stock.
    pub fn remaining(self) -> i64 {
        match self {
            Stock::Limited(units) => units,
            Stock::Unlimited => UNLIMITED_STOCK,
        }
    }
}

/// What a DEDUCT did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Deduction {
    /// Units taken now; the remaining stock after it (only the tests' calls
    /// judge and apply in one go: the module replies the applied figure).
    #[cfg(test)]
    Bought {
        remaining: i64,
    },
    /// The request id already bought; nothing changed, same reply as then.
    Replayed {
        remaining: i64,
    },
    SoldOut,
    LimitExceeded,
    /// The request id bought once and was refunded, or held and let lapse:
    /// cancelled (`-4`); it may not buy again.
    Cancelled,
    /// The sale window has not opened yet.
    NotStarted,
    /// The sale window has closed.
    Ended,
}

/// When the item is on sale, in Unix milliseconds: from `start` (inclusive)
/// to `end` (exclusive); 0 leaves that side open.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Window {
    pub start: i64,
    pub end: i64,
}

impl Window {
    /// A window, if its bounds are non-negative and `end` follows `start`.
    pub fn new(start: i64, end: i64) -> Result<Window, ItemError> {
        if start < 0 || end < 0 || (start > 0 && end > 0 && end <= start) {
            return Err(ItemError::BadWindow);
        }
        Ok(Window { start, end })
    }

    pub fn is_always_open(&self) -> bool {
        self.start == 0 && self.end == 0
    }

    /// Why a purchase at `now` is refused, if it is.
    fn refusal(&self, now: i64) -> Option<Deduction> {
        if self.start > 0 && now < self.start {
            Some(Deduction::NotStarted)
        } else if self.end > 0 && now >= self.end {
            Some(Deduction::Ended)
        } else {
            None
        }
    }
}

/// Where the item writes an event for every purchase, confirmation, refund
/// and lapse, in the same atomic step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StreamSetting {
    pub stream: Box<[u8]>,
    /// Entries the stream keeps at most (exact trimming); 0 keeps them all.
    pub maxlen: i64,
    /// False when the binding came with a RESTORE payload, whose bytes the
    /// restoring client chose: the item then writes the stream only for a
    /// caller allowed to write it, until `SECKILL.STREAM` names it again.
    pub confirmed: bool,
}

/// The moment a write is judged at, in Unix milliseconds: the one name
/// of time in the sale's rules.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Moment {
    /// This server decides the write, at this reading of its clock: the
    /// sale window is checked at it, and holds due by then count as
    /// released.
    Now(i64),
    /// This server applies a write its master decided at this moment (the
    /// `AT` it sent): holds due by then count as released, as they did
    /// there, and the window was the master's to check.
    Decided(i64),
    /// No clock judges the write: its item has no holds, window or order
    /// stream, or it is a master's decision made with nothing lapsing.
    /// Judging again by another clock would diverge.
    Untimed,
}

impl Moment {
    /// The moment holds due by count as released, if any.
    pub fn lapses_at(self) -> Option<i64> {
        match self {
            Moment::Now(at) | Moment::Decided(at) => Some(at),
            Moment::Untimed => None,
        }
    }

    /// This server's clock, where it decides.
    pub fn now(self) -> Option<i64> {
        match self {
            Moment::Now(now) => Some(now),
            Moment::Decided(_) | Moment::Untimed => None,
        }
    }

    /// The moment of a write its master decided at `decided_at` (its `AT`),
    /// where this server does not decide.
    pub fn or_decided(self, decided_at: Option<i64>) -> Moment {
        match (self, decided_at) {
            (Moment::Untimed, Some(at)) => Moment::Decided(at),
            (moment, _) => moment,
        }
    }

    /// True if a hold due at `deadline` counts as lapsed at this moment.
    pub fn has_passed(self, deadline: i64) -> bool {
        self.lapses_at().is_some_and(|at| deadline <= at)
    }
}

/// Calls the item refuses; none of them changes anything.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ItemError {
    /// A counter would leave the range of a signed 64-bit integer.
    Overflow,
    /// The request id was used before by another user or for another quantity.
    RequestMismatch,
    /// Quantities are positive.
    NonPositiveQuantity,
    /// User ids and request ids are 1 to MAX_ID_LEN bytes.
    BadId,
    /// The item cannot record another purchase.
    Full,
    /// A sale window's bounds are negative, or its end does not follow its
    /// start.
    BadWindow,
    /// A hold is found again by its request id, so it needs one.
    HoldWithoutId,
    /// The transfer id was used before for another quantity, or for units
    /// moving the other way.
    TransferMismatch,
    /// An unlimited item has no units to move, nor room for more.
    UnlimitedTransfer,
    /// The item recorded `MAX_TRANSFERS` transfers already.
    TooManyTransfers,
}

/// What a CONFIRM did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Confirmation {
    /// A pending hold became a purchase now (the tests' one-go call; the
    /// module replies once it applied the change).
    #[cfg(test)]
    Confirmed,
    /// The purchase was final already.
    AlreadyConfirmed,
    /// The request id is unknown, refunded, or its hold lapsed: cancelled
    /// (`-4`), as DEDUCT names it too.
    Cancelled,
}

impl From<ledger::Full> for ItemError {
    fn from(_: ledger::Full) -> Self {
        ItemError::Full
    }
}

fn valid_id(id: &[u8]) -> bool {
    !id.is_empty() && id.len() <= MAX_ID_LEN
}

/// Counters reported by SECKILL.INFO.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ItemStats {
    pub stock: i64,
    pub unlimited: bool,
    pub limit: i64,
    pub initial: i64,
    pub added: i64,
    pub sold: i64,
    pub refunded: i64,
    /// Units in pending holds.
    pub held: i64,
    /// Pending holds.
    pub holds: usize,
    /// Units given back by holds that lapsed.
    pub expired: i64,
    pub buyers: usize,
    pub requests: usize,
    pub window: Window,
    /// Units given to, and received from, other parts of a split item.
    pub moved_out: i64,
    pub moved_in: i64,
}

#[derive(Clone)]
pub struct SaleItem {
    stock: Stock,
    /// Most units one user may hold at once; 0 means no cap.
    limit: i64,
    initial: i64,
    /// Units added by restocks since INIT.
    added: i64,
    /// Units ever sold, refunded ones included.
    sold: i64,
    /// Units ever given back by refunds.
    refunded: i64,
    /// What every buyer holds, every purchase made with a request id and
    /// every pending hold; allocated by the first purchase.
    ledger: LazyLedger,
    /// Settings few items use, allocated when one is set.
    rare: Option<Box<Rare>>,
}

/// The parts of an item most items leave unset: kept out of line, so that
/// an item with no buyers costs about what a small hash does.
#[derive(Clone, Default)]
struct Rare {
    window: Window,
    stream_setting: Option<StreamSetting>,
    /// While the item is rebuilt chunk by chunk (SECKILL.LOADCHUNK): the
    /// records its header announced, checked once they are all in.
    chunks_due: Option<codec::Expected>,
    /// Stock moved to and from other parts of a split item.
    transfers: Transfers,
    /// The variants an item sells instead of a stock of its own.
    variants: Vec<Variant>,
    /// While an item with variants is rebuilt chunk by chunk: its header,
    /// whose variants are not all in yet.
    variants_due: Option<Box<codec::VariantsHeader>>,
    /// The name a variant is sold under, kept with it for its events.
    variant_label: Option<Box<[u8]>>,
}

impl SaleItem {
    /// A new item. `limit` 0 means no per-user cap. Negative values are
    /// rejected by the caller's parser; here they are clamped defensively.
    pub fn new(stock: Stock, limit: i64) -> Self {
        let stock = match stock {
            Stock::Limited(units) => Stock::Limited(units.max(0)),
            Stock::Unlimited => Stock::Unlimited,
        };
        let initial = match stock {
            Stock::Limited(units) => units,
            Stock::Unlimited => 0,
        };
        SaleItem {
            stock,
            limit: limit.max(0),
            initial,
            added: 0,
            sold: 0,
            refunded: 0,
            ledger: LazyLedger::default(),
            rare: None,
        }
    }

    /// The out-of-line settings, allocated if `needed` (a value other
    /// than the default is being set); `None` leaves nothing to change.
    fn rare_mut(&mut self, needed: bool) -> Option<&mut Rare> {
        if needed {
            Some(self.rare.get_or_insert_with(Box::default))
        } else {
            self.rare.as_deref_mut()
        }
    }

    pub fn order_stream(&self) -> Option<&StreamSetting> {
        self.rare
            .as_ref()
            .and_then(|rare| rare.stream_setting.as_ref())
    }

    /// Marks the order stream as named by bytes nobody vouched for.
    pub fn distrust_order_stream(&mut self) {
        for variant in self.variants_mut() {
            variant.item.distrust_order_stream();
        }
        if let Some(stream_setting) = self
            .rare
            .as_mut()
            .and_then(|rare| rare.stream_setting.as_mut())
        {
            stream_setting.confirmed = false;
        }
    }

    /// Marks the order stream as vouched for by a caller allowed to write it.
    pub fn confirm_order_stream(&mut self) {
        for variant in self.variants_mut() {
            variant.item.confirm_order_stream();
        }
        if let Some(stream_setting) = self
            .rare
            .as_mut()
            .and_then(|rare| rare.stream_setting.as_mut())
        {
            stream_setting.confirmed = true;
        }
    }

    pub fn set_order_stream(&mut self, stream_setting: Option<StreamSetting>) {
        if let Some(rare) = self.rare_mut(stream_setting.is_some()) {
            rare.stream_setting = stream_setting;
        }
    }

    pub fn window(&self) -> Window {
        self.rare
            .as_ref()
            .map_or_else(Window::default, |rare| rare.window)
    }

    pub fn set_window(&mut self, window: Window) {
        if let Some(rare) = self.rare_mut(!window.is_always_open()) {
            rare.window = window;
        }
    }

    fn chunks_due(&self) -> Option<codec::Expected> {
        self.rare.as_ref().and_then(|rare| rare.chunks_due)
    }

    fn set_chunks_due(&mut self, expected: Option<codec::Expected>) {
        if let Some(rare) = self.rare_mut(expected.is_some()) {
            rare.chunks_due = expected;
        }
    }

    pub fn remaining(&self) -> i64 {
        self.stock.remaining()
    }

    /// Units `user` holds now.
    pub fn bought(&self, user: &[u8]) -> i64 {
        self.ledger.units_of(user)
    }

    /// True if the item has a record of `user`: a buyer, even one whose
    /// units all went back.
    pub fn knows_buyer(&self, user: &[u8]) -> bool {
        matches!(self.ledger.find_buyer(user), Lookup::Found(_))
    }

    /// The purchase recorded under `request_id`, if any.
    pub fn request(&self, request_id: &[u8]) -> Option<RequestView<'_>> {
        match self.ledger.find_request(request_id) {
            Lookup::Found(handle) => Some(self.ledger.request(handle)),
            Lookup::Missing(_) => None,
        }
    }

    pub fn stats(&self) -> ItemStats {
        ItemStats {
            stock: self.remaining(),
            unlimited: self.stock == Stock::Unlimited,
            limit: self.limit,
            initial: self.initial,
            added: self.added,
            sold: self.sold,
            refunded: self.refunded,
            held: self.ledger.held,
            holds: self.ledger.holds.len(),
            expired: self.ledger.expired,
            buyers: self.ledger.holder_count(),
            requests: self.ledger.request_count(),
            window: self.window(),
            moved_out: self.moved_out(),
            moved_in: self.moved_in(),
        }
    }

    /// The moment of the item's last purchase replicated with `AT` (0:
    /// none). A hold placed in that same millisecond by `HOLD seconds`
    /// reaches replicas and the AOF as the client sent it, and they judge
    /// it at this moment, which they keep alike: the master sends `AT`
    /// with a hold whenever its clock has moved on. Rewriting every hold
    /// to carry its deadline cost more than the rest of the hold.
    pub fn replicated_moment(&self) -> i64 {
        self.ledger.replicated_moment
    }

    /// The earliest deadline among pending holds.
    pub fn next_deadline(&self) -> Option<i64> {
        self.ledger.holds.first_deadline()
    }

    /// Pending holds, earliest deadline first: (request id, user, qty,
    /// deadline); those of `user` alone if given. Those due at `now` are
    /// left out: they are as good as released.
    pub fn pending_holds<'s>(
        &'s self,
        now: i64,
        user: Option<&[u8]>,
    ) -> Box<dyn Iterator<Item = (&'s [u8], RequestView<'s>)> + 's> {
        let view =
            |(_, handle): HoldRef| (self.ledger.request_id(handle), self.ledger.request(handle));
        match user.map(|user| self.ledger.find_buyer(user)) {
            None => Box::new(self.ledger.holds.pending_after(now).map(view)),
            Some(Lookup::Found(buyer)) => {
                Box::new(self.ledger.holds.pending_of(buyer.handle(), now).map(view))
            }
            Some(Lookup::Missing(_)) => Box::new(std::iter::empty()),
        }
    }

    /// The item's counters as they will be once every hold due at `now` is
    /// released, without releasing anything: what reads report.
    pub fn stats_at(&self, now: i64) -> ItemStats {
        let mut stats = self.stats();
        let lapsed = self.ledger.lapsed(now);
        stats.held = stats.held.saturating_sub(lapsed.units);
        stats.holds = stats.holds.saturating_sub(lapsed.count);
        stats.expired = stats.expired.saturating_add(lapsed.units);
        if let Stock::Limited(_) = self.stock {
            stats.stock = stats.stock.saturating_add(lapsed.units);
        }
        stats.buyers = stats.buyers.saturating_sub(lapsed.emptied_buyers);
        stats
    }

    /// Units `user` will hold once every hold due at `now` is released.
    pub fn bought_at(&self, user: &[u8], now: i64) -> i64 {
        let Lookup::Found(buyer) = self.ledger.find_buyer(user) else {
            return 0;
        };
        let (_, lapsing) = self.lapsing(Moment::Now(now), Some(buyer.handle()));
        buyer.units.saturating_sub(lapsing).max(0)
    }

    /// Users holding at least one unit, with their units.
    pub fn buyers(&self) -> impl Iterator<Item = (&[u8], i64)> {
        self.ledger.holders()
    }

    pub fn requests(&self) -> impl Iterator<Item = (&[u8], RequestView<'_>)> {
        self.ledger.requests()
    }

    /// Items whose freeing takes long enough to be worth doing off the
    /// main thread (UNLINK, FLUSHALL ASYNC) report their record count.
    pub fn record_count(&self) -> usize {
        self.variants().iter().fold(
            self.ledger
                .buyer_count()
                .saturating_add(self.ledger.request_count()),
            |count, variant| count.saturating_add(variant.item.record_count()),
        )
    }

    /// True while an index of the ledger is moving entries to a bigger
    /// table.
    #[cfg(test)]
    pub fn is_resizing(&self) -> bool {
        self.ledger.is_resizing()
    }

    /// The heap this item occupies besides its own struct, for MEMORY
    /// USAGE.
    pub fn heap_usage(&self) -> usize {
        let rare = self.rare.as_ref().map_or(0, |rare| {
            std::mem::size_of::<Rare>()
                + rare
                    .stream_setting
                    .as_ref()
                    .map_or(0, |stream_setting| stream_setting.stream.len())
                + rare.transfers.heap_usage()
                + rare
                    .variants
                    .iter()
                    .map(|variant| {
                        std::mem::size_of::<Variant>()
                            + variant.name.len()
                            + std::mem::size_of::<SaleItem>()
                            + variant.item.heap_usage()
                    })
                    .sum::<usize>()
        });
        self.ledger.memory_usage() + rare
    }

    fn sorted_content(&self) -> SortedContent<'_> {
        let mut buyers: Vec<_> = self.buyers().collect();
        buyers.sort_unstable();
        let mut requests: Vec<_> = self.requests().collect();
        requests.sort_unstable_by(|a, b| a.0.cmp(b.0));
        (buyers, requests)
    }
}

type SortedContent<'a> = (Vec<(&'a [u8], i64)>, Vec<(&'a [u8], RequestView<'a>)>);

/// Two items are equal when they hold the same sale, whatever order their
/// records were stored in.
impl PartialEq for SaleItem {
    fn eq(&self, other: &Self) -> bool {
        self.stats() == other.stats()
            && self.sorted_content() == other.sorted_content()
            && self.transfers().filter(|t| !t.is_empty())
                == other.transfers().filter(|t| !t.is_empty())
            && self.variants() == other.variants()
    }
}

impl Eq for SaleItem {}

impl std::fmt::Debug for SaleItem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (buyers, requests) = self.sorted_content();
        f.debug_struct("SaleItem")
            .field("stats", &self.stats())
            .field("buyers", &buyers)
            .field("requests", &requests)
            .field("variants", &self.variants())
            .finish()
    }
}

#[cfg(test)]
mod tests;
