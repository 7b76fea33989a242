//! Typed commands and replies of the seckill Redis module, over redis-rs.
//!
//! A thin layer over the connection you already have: `SeckillCommands`
//! adds `seckill_*` methods to every `redis::ConnectionLike` (a plain
//! connection, a `ClusterConnection`), and, with the `aio` feature,
//! `AsyncSeckillCommands` to every async one (`MultiplexedConnection`,
//! `ConnectionManager`, the async cluster connection). For pipelines and
//! transactions, `command` builds each command and the types of `reply`
//! decode its reply. A purchase, confirmation or refund that must outlive
//! a failover is given `wait_replicas` and sent with `seckill_durably`,
//! which waits for replicas to acknowledge it and replies a `Durable`.
//!
//! A purchase with a hold replies its deadline too (`DeductResult::deadline`,
//! Unix ms): the time to pay by. `seckill_confirm` and `seckill_refund`
//! tell a refunded, a lapsed and an unknown request id apart
//! (`ConfirmOutcome::{Refunded, Lapsed, UnknownRequest}`,
//! `RefundOutcome::{AlreadyRefunded, Lapsed, UnknownRequest}`), with no
//! second round trip to `SECKILL.STATUS`.
//!
//! ```no_run
//! use seckill_client::{ConfirmOutcome, Deduct, Init, Outcome, SeckillCommands};
//!
//! let client = redis::Client::open("redis://127.0.0.1/")?;
//! let mut con = client.get_connection()?;
//! con.seckill_init(&Init::new("sku:1001", 100).limit(2))?;
//! let result = con.seckill_deduct(&Deduct::new("sku:1001", "user:7", 1).request_id("order:7-1"))?;
//! match result.outcome {
//!     Outcome::Bought => println!("bought; {} left", result.stock.unwrap_or(0)),
//!     Outcome::SoldOut => println!("sold out"),
//!     other => println!("refused: {}", other.name()),
//! }
//!
//! // Held for 15 minutes, until paid.
//! let hold = Deduct::new("sku:1001", "user:8", 1).request_id("order:8-1").hold(900);
//! let held = con.seckill_deduct(&hold)?;
//! if let Some(pay_by_ms) = held.deadline {
//!     println!("held; pay by {pay_by_ms} (Unix ms)");
//! }
//! match con.seckill_confirm("sku:1001", "order:8-1")? {
//!     ConfirmOutcome::Confirmed | ConfirmOutcome::AlreadyFinal => println!("paid"),
//!     ConfirmOutcome::Lapsed => println!("too late: the hold lapsed"),
//!     other => println!("not paid: {}", other.name()),
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! An item selling several stocks under one per-user limit (the sizes of
//! a sneaker drop) is made with `Init::with_variants`; each purchase names
//! its variant with `Deduct::variant`, and the `*_variant` methods
//! (`seckill_get_variant`, `seckill_bought_variant`,
//! `seckill_info_variant`, `seckill_add_variant`, `seckill_scan_variant`)
//! read or restock one variant, where the plain ones report the whole item.
//!
//! ```no_run
//! use seckill_client::{Deduct, Init, Outcome, SeckillCommands};
//!
//! let client = redis::Client::open("redis://127.0.0.1/")?;
//! let mut con = client.get_connection()?;
//! con.seckill_init(&Init::with_variants("{drop:7}", [("42", 2), ("43", 1)]).limit(1))?;
//! let bought = con.seckill_deduct(&Deduct::new("{drop:7}", "ana", 1).variant("43"))?;
//! assert!(bought.bought());
//! let second = con.seckill_deduct(&Deduct::new("{drop:7}", "ana", 1).variant("42"))?;
//! assert_eq!(second.outcome, Outcome::LimitReached);
//! assert_eq!(con.seckill_get_variant("{drop:7}", "42")?, Some(2));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! An order of several items sharing a hash tag is taken whole or not at
//! all with `seckill_order` (`SECKILL.MDEDUCT`), then confirmed whole
//! (`seckill_confirm_order`) or refunded (`seckill_refund_order`). On a
//! redis-rs cluster connection these go to the master of the first key. A
//! cart whose items are on different shards is the `cart` module's: a
//! saga on holds that a retry or a resume after a crash finishes.
//!
//! ```no_run
//! use seckill_client::{Order, SeckillCommands};
//!
//! let client = redis::Client::open("redis://127.0.0.1/")?;
//! let mut con = client.get_connection()?;
//! let order = Order::new("user:7", "order:60")
//!     .line("{drop:1}:phone", 1)
//!     .line("{drop:1}:case", 1)
//!     .hold(900);
//! let placed = con.seckill_order(&order)?;
//! if placed.taken {
//!     println!("held; pay by {:?} (Unix ms)", placed.deadline);
//! } else {
//!     for (line, outcome) in placed.refusals() {
//!         println!("line {line} refused the order: {}", outcome.name());
//!     }
//! }
//! let paid = con.seckill_confirm_order(&order.keys(), "order:60")?;
//! if !paid.confirmed {
//!     // A line lapsed or was refunded: nothing was confirmed.
//!     con.seckill_refund_order(&order.keys(), "order:60")?;
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod cart;
pub mod command;
#[cfg(feature = "sentinel")]
pub mod endpoint;
mod error;
mod mask;
pub mod reply;
pub mod split;

pub use command::{Confirm, Deduct, Durably, Expiry, Init, Order, Refund, Stock, Waitable};
pub use error::{Error, ErrorKind, Result, SeckillError};
/// For programs that log the URL they connect to.
pub use mask::mask_password;
pub use reply::{
    BuyerRecord, ConfirmOutcome, DeductResult, Durable, Hold, ItemFigure, ItemInfo,
    OrderConfirmation, OrderLine, OrderResult, OrderState, Outcome, RefundOutcome, RefundResult,
    RequestRecord, RequestStatus, ScanPage, ScanRecord, SettleOutcome, Transfer, UNLIMITED_STOCK,
};
pub use split::SplitItem;

use redis::{FromRedisValue, ToRedisArgs};

fn query<T: FromRedisValue>(cmd: redis::Cmd, con: &mut dyn redis::ConnectionLike) -> Result<T> {
    Ok(cmd.query(con)?)
}

/// Sends a command that names its keys after a count (`MDEDUCT`,
/// `MCONFIRM`, `MREFUND`). A redis-rs cluster connection routes an unknown
/// command by its first argument, here the count, and would reach the
/// master of the keys only through a `MOVED` redirection: on one, it is
/// sent to the master of `first_key` instead. Any other connection sends
/// it as it is.
fn query_by_key<T: FromRedisValue, C: redis::ConnectionLike + 'static>(
    cmd: redis::Cmd,
    first_key: Option<Vec<u8>>,
    con: &mut C,
) -> Result<T> {
    #[cfg(feature = "cluster")]
    if let (Some(key), Some(cluster)) = (
        first_key.as_ref(),
        (con as &mut dyn std::any::Any).downcast_mut::<redis::cluster::ClusterConnection>(),
    ) {
        use redis::cluster_routing::{Route, RoutingInfo, SingleNodeRoutingInfo, SlotAddr};
        let route = Route::with_key(key, SlotAddr::Master);
        let routing = RoutingInfo::SingleNode(SingleNodeRoutingInfo::SpecificNode(route));
        let value = cluster.route_command(&cmd, routing)?.extract_error()?;
        return Ok(T::from_redis_value(value).map_err(redis::RedisError::from)?);
    }
    #[cfg(not(feature = "cluster"))]
    let _ = first_key;
    query(cmd, con)
}

/// The seckill commands on any synchronous connection.
pub trait SeckillCommands: redis::ConnectionLike + Sized {
    /// Creates the item; false if it existed (and was left untouched).
    fn seckill_init(&mut self, init: &Init) -> Result<bool> {
        query(init.to_cmd(), self)
    }

    /// The purchase's outcome and the stock left; with a hold, its
    /// deadline too.
    fn seckill_deduct(&mut self, deduct: &Deduct) -> Result<DeductResult> {
        query(deduct.to_cmd(), self)
    }

    /// Makes a hold a final purchase; a refunded, lapsed or unknown
    /// request id is told apart (`Refunded`, `Lapsed`, `UnknownRequest`).
    fn seckill_confirm<K: ToRedisArgs, I: ToRedisArgs>(
        &mut self,
        key: K,
        request_id: I,
    ) -> Result<ConfirmOutcome> {
        query(command::confirm(key, request_id), self)
    }

    /// Holds released; `None` without an item.
    fn seckill_release<K: ToRedisArgs, I: ToRedisArgs>(
        &mut self,
        key: K,
        request_ids: &[I],
    ) -> Result<Option<i64>> {
        query::<ItemFigure>(command::release(key, request_ids), self).map(|figure| figure.0)
    }

    /// Gives the purchase's units back: `Refunded` with the units, or why
    /// nothing was given back (`AlreadyRefunded`, `Lapsed`,
    /// `UnknownRequest`, `NoItem`).
    fn seckill_refund<K: ToRedisArgs, I: ToRedisArgs>(
        &mut self,
        key: K,
        request_id: I,
    ) -> Result<RefundResult> {
        query(command::refund(key, request_id), self)
    }

    /// Takes every line of the order or none, in one step: `taken`, each
    /// line's outcome and stock, and with a hold the order's deadline. On a
    /// redis-rs `ClusterConnection` (feature `cluster`), it is sent to the
    /// master of the first key.
    ///
    /// `Self: 'static` is what lets the connection be recognised as a
    /// cluster connection; a cluster connection inside a pool's wrapper is
    /// not, and reaches the keys' master through one `MOVED` redirection,
    /// unless the call is made on the connection itself (`(*pooled)`).
    fn seckill_order(&mut self, order: &Order) -> Result<OrderResult>
    where
        Self: 'static,
    {
        query_by_key(order.to_cmd(), order.first_key(), self)
    }

    /// Confirms every line of the order under `request_id`, or none (with
    /// `DETAIL`): `confirmed`, and each line's `ConfirmOutcome`, `None` on
    /// a line left unconfirmed because another refused. Routed as
    /// `seckill_order` is.
    fn seckill_confirm_order<K: ToRedisArgs, I: ToRedisArgs>(
        &mut self,
        keys: &[K],
        request_id: I,
    ) -> Result<OrderConfirmation>
    where
        Self: 'static,
    {
        let keys = command::order_keys(keys);
        let first_key = keys.first().cloned();
        query_by_key(command::confirm_order(&keys, request_id), first_key, self)
    }

    /// Refunds every line of the order under `request_id` that can be (with
    /// `DETAIL`): each line's `RefundResult`, in key order. Routed as
    /// `seckill_order` is.
    fn seckill_refund_order<K: ToRedisArgs, I: ToRedisArgs>(
        &mut self,
        keys: &[K],
        request_id: I,
    ) -> Result<Vec<RefundResult>>
    where
        Self: 'static,
    {
        let keys = command::order_keys(keys);
        let first_key = keys.first().cloned();
        query_by_key(command::refund_order(&keys, request_id), first_key, self)
    }

    /// Sends the write (a `Deduct`, `Confirm` or `Refund` given
    /// `wait_replicas`) and `WAIT` right after it on this connection, in
    /// one round trip: its usual reply, and how many replicas acknowledged
    /// it (see `Durable` for a write that changed nothing). A write that
    /// fails returns its error as without the wait; a `WAIT` that fails
    /// after the write ran (an ACL user without `WAIT`, a writable replica)
    /// returns `WAIT`'s error as `Error::Redis`.
    ///
    /// On a `ClusterConnection`, redis-rs sends the pair whole to the
    /// master of the write's key, on one connection; a `MOVED` or `ASK`
    /// reply is not followed there, but returned as `Error::Redis`
    /// (nothing changed). Inside a `MULTI` opened by hand on this
    /// connection, the pair is queued, and an error says so.
    fn seckill_durably<W: Waitable>(&mut self, write: &Durably<W>) -> Result<Durable<W::Reply>> {
        // Sent packed rather than as a `Pipeline`, which a cluster
        // connection refuses: it routes packed commands by the first.
        let packed = write.to_pipeline().get_packed_pipeline();
        let replies = self.req_packed_commands(&packed, 0, 2)?;
        Durable::of_replies(replies, write.wanted(), W::reply)
    }

    /// The new stock; `None` without an item.
    fn seckill_add<K: ToRedisArgs>(&mut self, key: K, qty: i64) -> Result<Option<i64>> {
        query::<ItemFigure>(command::add(key, qty), self).map(|figure| figure.0)
    }

    /// Restocks one variant of an item with variants: the variant's new
    /// stock; `None` without an item.
    fn seckill_add_variant<K: ToRedisArgs, V: ToRedisArgs>(
        &mut self,
        key: K,
        qty: i64,
        variant: V,
    ) -> Result<Option<i64>> {
        query::<ItemFigure>(command::add_variant(key, qty, variant), self).map(|figure| figure.0)
    }

    /// False without an item.
    fn seckill_window<K: ToRedisArgs>(
        &mut self,
        key: K,
        start_ms: i64,
        end_ms: i64,
    ) -> Result<bool> {
        query::<ItemFigure>(command::window(key, start_ms, end_ms), self).map(|f| f.0.is_some())
    }

    /// Sets (or with `None` clears) the order stream; false without an item.
    fn seckill_stream<K: ToRedisArgs, S: ToRedisArgs>(
        &mut self,
        key: K,
        stream: Option<(S, Option<i64>)>,
    ) -> Result<bool> {
        query::<ItemFigure>(command::stream(key, stream), self).map(|f| f.0.is_some())
    }

    /// The stock left (of an item with variants, theirs added up); `None`
    /// without an item.
    fn seckill_get<K: ToRedisArgs>(&mut self, key: K) -> Result<Option<i64>> {
        query(command::get(key), self)
    }

    /// The stock left of one variant; `None` without an item.
    fn seckill_get_variant<K: ToRedisArgs, V: ToRedisArgs>(
        &mut self,
        key: K,
        variant: V,
    ) -> Result<Option<i64>> {
        query(command::get_variant(key, variant), self)
    }

    /// The units `user` holds now (of an item with variants, across them);
    /// `None` without an item.
    fn seckill_bought<K: ToRedisArgs, U: ToRedisArgs>(
        &mut self,
        key: K,
        user: U,
    ) -> Result<Option<i64>> {
        query(command::bought(key, user), self)
    }

    /// The units of one variant `user` holds now; `None` without an item.
    fn seckill_bought_variant<K: ToRedisArgs, U: ToRedisArgs, V: ToRedisArgs>(
        &mut self,
        key: K,
        user: U,
        variant: V,
    ) -> Result<Option<i64>> {
        query(command::bought_variant(key, user, variant), self)
    }

    fn seckill_holds<K: ToRedisArgs, U: ToRedisArgs>(
        &mut self,
        key: K,
        user: Option<U>,
    ) -> Result<Option<Vec<Hold>>> {
        query(command::holds(key, user), self)
    }

    /// The item's counters (of an item with variants, theirs added up,
    /// and `variants` how many there are); `None` without an item.
    fn seckill_info<K: ToRedisArgs>(&mut self, key: K) -> Result<Option<ItemInfo>> {
        query(command::info(key), self)
    }

    /// One variant's counters; `None` without an item.
    fn seckill_info_variant<K: ToRedisArgs, V: ToRedisArgs>(
        &mut self,
        key: K,
        variant: V,
    ) -> Result<Option<ItemInfo>> {
        query(command::info_variant(key, variant), self)
    }

    /// Where the purchase under `request_id` stands; `None` if no item.
    fn seckill_status<K: ToRedisArgs, I: ToRedisArgs>(
        &mut self,
        key: K,
        request_id: I,
    ) -> Result<Option<OrderState>> {
        query(command::status(key, request_id), self)
    }

    /// One page of the item's records from `cursor` (0 starts a scan):
    /// the next cursor (0 when it is over) and at most `count` records (10
    /// without one). A missing item gives an empty page with cursor 0; a
    /// made-up or stale cursor, `ErrorKind::InvalidArgument`.
    fn seckill_scan<K: ToRedisArgs>(
        &mut self,
        key: K,
        cursor: u64,
        count: Option<u64>,
    ) -> Result<ScanPage> {
        query(command::scan(key, cursor, count), self)
    }

    /// One page of the records of one variant of an item with variants
    /// (which is scanned a variant at a time), as `seckill_scan` pages.
    fn seckill_scan_variant<K: ToRedisArgs, V: ToRedisArgs>(
        &mut self,
        key: K,
        cursor: u64,
        count: Option<u64>,
        variant: V,
    ) -> Result<ScanPage> {
        query(command::scan_variant(key, cursor, count, variant), self)
    }

    /// Every record of the item, following `SECKILL.SCAN`'s cursor until
    /// it is 0, `count` records a call. Every record that existed when the
    /// scan started comes once, however the item changes meanwhile;
    /// records written during the scan come too, at its end. An error
    /// ends the iteration after it is yielded.
    fn seckill_scan_iter<K: ToRedisArgs>(
        &mut self,
        key: K,
        count: Option<u64>,
    ) -> ScanIter<'_, Self> {
        ScanIter {
            con: self,
            key: key.to_redis_args(),
            variant: None,
            count,
            cursor: Some(0),
            page: Vec::new().into_iter(),
        }
    }

    /// Every record of one variant of an item with variants, as
    /// `seckill_scan_iter` follows the cursor.
    fn seckill_scan_iter_variant<K: ToRedisArgs, V: ToRedisArgs>(
        &mut self,
        key: K,
        count: Option<u64>,
        variant: V,
    ) -> ScanIter<'_, Self> {
        ScanIter {
            con: self,
            key: key.to_redis_args(),
            variant: Some(variant.to_redis_args()),
            count,
            cursor: Some(0),
            page: Vec::new().into_iter(),
        }
    }

    /// Units taken out of this part; `None` without an item.
    fn seckill_take<K: ToRedisArgs, T: ToRedisArgs, D: ToRedisArgs>(
        &mut self,
        key: K,
        qty: i64,
        transfer_id: T,
        destination: Option<D>,
    ) -> Result<Option<i64>> {
        query::<ItemFigure>(command::take(key, qty, transfer_id, destination), self).map(|f| f.0)
    }

    /// Units received once per transfer id: the stock after the first
    /// call; `None` without an item.
    fn seckill_add_transfer<K: ToRedisArgs, T: ToRedisArgs>(
        &mut self,
        key: K,
        qty: i64,
        transfer_id: T,
    ) -> Result<Option<i64>> {
        query::<ItemFigure>(command::add_transfer(key, qty, transfer_id), self).map(|f| f.0)
    }

    fn seckill_settle<K: ToRedisArgs, T: ToRedisArgs>(
        &mut self,
        key: K,
        transfer_id: T,
    ) -> Result<SettleOutcome> {
        query(command::settle(key, transfer_id), self)
    }

    fn seckill_transfers<K: ToRedisArgs>(&mut self, key: K) -> Result<Option<Vec<Transfer>>> {
        query(command::transfers(key), self)
    }

    /// Units of one variant taken out of this part; `None` without an item.
    fn seckill_take_variant<K: ToRedisArgs, T: ToRedisArgs, D: ToRedisArgs, V: ToRedisArgs>(
        &mut self,
        key: K,
        qty: i64,
        transfer_id: T,
        destination: Option<D>,
        variant: V,
    ) -> Result<Option<i64>> {
        let cmd = command::take_variant(key, qty, transfer_id, destination, variant);
        query::<ItemFigure>(cmd, self).map(|f| f.0)
    }

    /// Units of one variant received once per transfer id: the variant's
    /// stock after the first call; `None` without an item.
    fn seckill_add_transfer_variant<K: ToRedisArgs, T: ToRedisArgs, V: ToRedisArgs>(
        &mut self,
        key: K,
        qty: i64,
        transfer_id: T,
        variant: V,
    ) -> Result<Option<i64>> {
        let cmd = command::add_transfer_variant(key, qty, transfer_id, variant);
        query::<ItemFigure>(cmd, self).map(|f| f.0)
    }

    fn seckill_settle_variant<K: ToRedisArgs, T: ToRedisArgs, V: ToRedisArgs>(
        &mut self,
        key: K,
        transfer_id: T,
        variant: V,
    ) -> Result<SettleOutcome> {
        query(command::settle_variant(key, transfer_id, variant), self)
    }

    /// Each variant's name and stock, in the order `INIT` named them
    /// (empty for an item without variants); `None` without an item.
    fn seckill_variants<K: ToRedisArgs>(&mut self, key: K) -> Result<Option<Vec<(String, i64)>>> {
        query(command::variants(key), self)
    }
}

impl<C: redis::ConnectionLike> SeckillCommands for C {}

/// The records of an item, a `SECKILL.SCAN` page at a time (see
/// `SeckillCommands::seckill_scan_iter`).
pub struct ScanIter<'a, C> {
    con: &'a mut C,
    key: Vec<Vec<u8>>,
    /// The variant scanned, on an item with variants.
    variant: Option<Vec<Vec<u8>>>,
    count: Option<u64>,
    /// The cursor of the next page; `None` once the scan is over.
    cursor: Option<u64>,
    page: std::vec::IntoIter<ScanRecord>,
}

impl<C: SeckillCommands> Iterator for ScanIter<'_, C> {
    type Item = Result<ScanRecord>;

    fn next(&mut self) -> Option<Result<ScanRecord>> {
        loop {
            if let Some(record) = self.page.next() {
                return Some(Ok(record));
            }
            let cursor = self.cursor?;
            let page = match &self.variant {
                None => self.con.seckill_scan(&self.key, cursor, self.count),
                Some(variant) => self
                    .con
                    .seckill_scan_variant(&self.key, cursor, self.count, variant),
            };
            match page {
                Ok(page) => {
                    self.cursor = (page.cursor != 0).then_some(page.cursor);
                    self.page = page.records.into_iter();
                }
                Err(err) => {
                    self.cursor = None;
                    return Some(Err(err));
                }
            }
        }
    }
}

#[cfg(feature = "aio")]
mod asynchronous;
#[cfg(feature = "aio")]
pub use asynchronous::{AsyncScanIter, AsyncSeckillCommands};
