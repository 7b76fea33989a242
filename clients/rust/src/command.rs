//! The commands, as `redis::Cmd` values: send them with any connection, or
//! add them to a pipeline and decode each reply with the types of
//! `reply`.

use crate::reply::{ConfirmOutcome, DeductResult, RefundResult};
use redis::{Cmd, FromRedisValue, ParsingError, Pipeline, ToRedisArgs, Value};

/// The stock of a new item.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stock {
    Units(i64),
    /// An item that never runs out (`UNLIMITED`).
    Unlimited,
}

impl From<i64> for Stock {
    fn from(units: i64) -> Stock {
        Stock::Units(units)
    }
}

/// The item key's time to live, set with the item.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expiry {
    /// `EX seconds`
    Seconds(i64),
    /// `PX milliseconds`
    Milliseconds(i64),
    /// `EXAT unix-time-seconds`
    AtUnixSeconds(i64),
    /// `PXAT unix-time-milliseconds`
    AtUnixMilliseconds(i64),
}

/// `SECKILL.INIT key <stock | UNLIMITED | VARIANTS numvariants name stock
/// [name stock ...]> [LIMIT limit] [VARIANTLIMIT name limit ...] [START
/// start-ms] [END end-ms] [STREAM stream_key [MAXLEN maxlen]] [EX ... |
/// PXAT ...] [REPLACE]`
#[derive(Clone, Debug)]
pub struct Init {
    key: Vec<u8>,
    stock: InitStock,
    limit: Option<i64>,
    variant_limits: Vec<(Vec<u8>, i64)>,
    start: Option<i64>,
    end: Option<i64>,
    stream: Option<(Vec<u8>, Option<i64>)>,
    expiry: Option<Expiry>,
    replace: bool,
}

/// What an `Init` sells: one stock, or several variants' stocks.
#[derive(Clone, Debug)]
enum InitStock {
    Single(Stock),
    Variants(Vec<(Vec<u8>, Stock)>),
}

impl Init {
    pub fn new(key: impl Into<Vec<u8>>, stock: impl Into<Stock>) -> Init {
        Init::of(key.into(), InitStock::Single(stock.into()))
    }

    /// An item selling several variants (sizes of a shoe, say), each with
    /// its own stock, under one `limit` across them all (`VARIANTS
    /// numvariants name stock ...`): 1 to 64 variants, names of 1 to 64
    /// bytes, each named once. `Deduct::variant` then names the variant
    /// each purchase is of.
    pub fn with_variants<N, S>(
        key: impl Into<Vec<u8>>,
        variants: impl IntoIterator<Item = (N, S)>,
    ) -> Init
    where
        N: Into<Vec<u8>>,
        S: Into<Stock>,
    {
        let variants = variants
            .into_iter()
            .map(|(name, stock)| (name.into(), stock.into()))
            .collect();
        Init::of(key.into(), InitStock::Variants(variants))
    }

    fn of(key: Vec<u8>, stock: InitStock) -> Init {
        Init {
            key,
            stock,
            limit: None,
            variant_limits: Vec::new(),
            start: None,
            end: None,
            stream: None,
            expiry: None,
            replace: false,
        }
    }

    /// Most units one user may hold at once (0: no cap).
    pub fn limit(mut self, units: i64) -> Init {
        self.limit = Some(units);
        self
    }

    /// Most units of the variant `name` one user may hold at once
    /// (`VARIANTLIMIT name units`), besides the item's `limit` across
    /// variants; for an item made by `with_variants`. Call once per
    /// variant so capped.
    pub fn variant_limit(mut self, name: impl Into<Vec<u8>>, units: i64) -> Init {
        self.variant_limits.push((name.into(), units));
        self
    }

    /// The sale window, Unix ms; `None` leaves that side open.
    pub fn window(mut self, start: Option<i64>, end: Option<i64>) -> Init {
        self.start = start;
        self.end = end;
        self
    }

    /// The order stream (same hash tag as the item), trimmed to `maxlen`.
    pub fn stream(mut self, stream_key: impl Into<Vec<u8>>, maxlen: Option<i64>) -> Init {
        self.stream = Some((stream_key.into(), maxlen));
        self
    }

    pub fn expiry(mut self, expiry: Expiry) -> Init {
        self.expiry = Some(expiry);
        self
    }

    /// Starts the item over if it exists.
    pub fn replace(mut self) -> Init {
        self.replace = true;
        self
    }

    pub fn to_cmd(&self) -> Cmd {
        let mut cmd = redis::cmd("SECKILL.INIT");
        cmd.arg(&self.key);
        match &self.stock {
            InitStock::Single(stock) => stock_arg(&mut cmd, *stock),
            InitStock::Variants(variants) => {
                cmd.arg("VARIANTS").arg(variants.len());
                for (name, stock) in variants {
                    cmd.arg(name);
                    stock_arg(&mut cmd, *stock);
                }
            }
        }
        if let Some(limit) = self.limit {
            cmd.arg("LIMIT").arg(limit);
        }
        for (name, units) in &self.variant_limits {
            cmd.arg("VARIANTLIMIT").arg(name).arg(*units);
        }
        if let Some(start) = self.start {
            cmd.arg("START").arg(start);
        }
        if let Some(end) = self.end {
            cmd.arg("END").arg(end);
        }
        if let Some((stream, maxlen)) = &self.stream {
            cmd.arg("STREAM").arg(stream);
            if let Some(maxlen) = maxlen {
                cmd.arg("MAXLEN").arg(maxlen);
            }
        }
        match self.expiry {
            None => {}
            Some(Expiry::Seconds(s)) => {
                cmd.arg("EX").arg(s);
            }
            Some(Expiry::Milliseconds(ms)) => {
                cmd.arg("PX").arg(ms);
            }
            Some(Expiry::AtUnixSeconds(s)) => {
                cmd.arg("EXAT").arg(s);
            }
            Some(Expiry::AtUnixMilliseconds(ms)) => {
                cmd.arg("PXAT").arg(ms);
            }
        }
        if self.replace {
            cmd.arg("REPLACE");
        }
        cmd
    }
}

fn stock_arg(cmd: &mut Cmd, stock: Stock) {
    match stock {
        Stock::Units(units) => cmd.arg(units),
        Stock::Unlimited => cmd.arg("UNLIMITED"),
    };
}

/// `SECKILL.DEDUCT key user qty [ID request_id] [HOLD seconds |
/// HOLDUNTIL unix-time-milliseconds] [VARIANT name] [WITHDEADLINE]` →
/// `DeductResult`; `WITHDEADLINE` goes with a hold, so that the reply
/// carries its deadline.
#[derive(Clone, Debug)]
pub struct Deduct {
    key: Vec<u8>,
    user: Vec<u8>,
    qty: i64,
    request_id: Option<Vec<u8>>,
    hold: Option<HoldFor>,
    variant: Option<Vec<u8>>,
}

#[derive(Clone, Copy, Debug)]
enum HoldFor {
    Seconds(i64),
    UntilUnixMs(i64),
}

impl Deduct {
    pub fn new(key: impl Into<Vec<u8>>, user: impl Into<Vec<u8>>, qty: i64) -> Deduct {
        Deduct {
            key: key.into(),
            user: user.into(),
            qty,
            request_id: None,
            hold: None,
            variant: None,
        }
    }

    /// Buys from the variant `name` of an item with variants (`VARIANT
    /// name`), which needs one: `SoldOut` is that variant's stock,
    /// `LimitReached` the item's limit across variants or the variant's
    /// own, and the stock replied that variant's.
    pub fn variant(mut self, name: impl Into<Vec<u8>>) -> Deduct {
        self.variant = Some(name.into());
        self
    }

    /// Records the purchase under `request_id`: a retry gets the same
    /// reply, and the purchase can be refunded.
    pub fn request_id(mut self, request_id: impl Into<Vec<u8>>) -> Deduct {
        self.request_id = Some(request_id.into());
        self
    }

    /// Holds the units for `seconds`, until `CONFIRM` (needs a request id).
    pub fn hold(mut self, seconds: i64) -> Deduct {
        self.hold = Some(HoldFor::Seconds(seconds));
        self
    }

    /// Holds the units until a Unix time in ms (needs a request id).
    pub fn hold_until(mut self, unix_ms: i64) -> Deduct {
        self.hold = Some(HoldFor::UntilUnixMs(unix_ms));
        self
    }

    /// Waits, after the purchase, until `replicas` replicas acknowledged
    /// it or `timeout_ms` passed; send it with `seckill_durably`.
    pub fn wait_replicas(self, replicas: i64, timeout_ms: i64) -> Durably<Deduct> {
        Durably::new(self, replicas, timeout_ms)
    }

    pub fn to_cmd(&self) -> Cmd {
        let mut cmd = redis::cmd("SECKILL.DEDUCT");
        cmd.arg(&self.key).arg(&self.user).arg(self.qty);
        if let Some(request_id) = &self.request_id {
            cmd.arg("ID").arg(request_id);
        }
        match self.hold {
            None => {}
            Some(HoldFor::Seconds(s)) => {
                cmd.arg("HOLD").arg(s);
            }
            Some(HoldFor::UntilUnixMs(ms)) => {
                cmd.arg("HOLDUNTIL").arg(ms);
            }
        }
        if let Some(variant) = &self.variant {
            cmd.arg("VARIANT").arg(variant);
        }
        // Only with a hold: a purchase without one has no deadline to
        // tell, and its reply stays the plain integer.
        if self.hold.is_some() {
            cmd.arg("WITHDEADLINE");
        }
        cmd
    }
}

/// `SECKILL.MDEDUCT numlines key qty [key qty ...] user request_id [HOLD
/// seconds | HOLDUNTIL unix-time-milliseconds] [VARIANT line name ...]
/// [WITHDEADLINE]` →
/// `OrderResult`: an order of several items, every line taken or none, in
/// one step. `WITHDEADLINE` goes with a hold, as with `Deduct`.
///
/// Every key must hash to one cluster slot (give the items one hash tag,
/// `{cart:7}:phone` and `{cart:7}:case`), or the server answers
/// `CROSSSLOT`. `seckill_order` sends it to the master of the first key on
/// a redis-rs cluster connection, which by itself would route the command
/// by its first argument, `numlines`.
#[derive(Clone, Debug)]
pub struct Order {
    user: Vec<u8>,
    request_id: Vec<u8>,
    lines: Vec<(Vec<u8>, i64)>,
    /// The variant each line buys, for items with variants.
    variants: Vec<Option<Vec<u8>>>,
    hold: Option<HoldFor>,
}

impl Order {
    /// An order with no line yet: add each with `line`. The request id is
    /// not optional: it is what makes a retry of the order safe, and what
    /// confirms or refunds it later.
    pub fn new(user: impl Into<Vec<u8>>, request_id: impl Into<Vec<u8>>) -> Order {
        Order {
            user: user.into(),
            request_id: request_id.into(),
            lines: Vec::new(),
            variants: Vec::new(),
            hold: None,
        }
    }

    /// `qty` units of the item `key`; the reply has one entry per line, in
    /// the order the lines were added.
    pub fn line(mut self, key: impl Into<Vec<u8>>, qty: i64) -> Order {
        self.lines.push((key.into(), qty));
        self.variants.push(None);
        self
    }

    /// `qty` units of the variant `variant` of the item `key`, an item
    /// made with `Init::with_variants`: judged under the item's limit
    /// across its variants. An order buys one variant of an item.
    pub fn variant_line(
        mut self,
        key: impl Into<Vec<u8>>,
        variant: impl Into<Vec<u8>>,
        qty: i64,
    ) -> Order {
        self.lines.push((key.into(), qty));
        self.variants.push(Some(variant.into()));
        self
    }

    /// Holds every line for `seconds`, until the order is confirmed.
    pub fn hold(mut self, seconds: i64) -> Order {
        self.hold = Some(HoldFor::Seconds(seconds));
        self
    }

    /// Holds every line until a Unix time in ms.
    pub fn hold_until(mut self, unix_ms: i64) -> Order {
        self.hold = Some(HoldFor::UntilUnixMs(unix_ms));
        self
    }

    /// The item keys, in line order: what `seckill_confirm_order` and
    /// `seckill_refund_order` take.
    pub fn keys(&self) -> Vec<&[u8]> {
        self.lines.iter().map(|(key, _)| key.as_slice()).collect()
    }

    pub fn request_id(&self) -> &[u8] {
        &self.request_id
    }

    /// The key a cluster client routes the order by.
    pub(crate) fn first_key(&self) -> Option<Vec<u8>> {
        self.lines.first().map(|(key, _)| key.clone())
    }

    pub fn to_cmd(&self) -> Cmd {
        let mut cmd = redis::cmd("SECKILL.MDEDUCT");
        cmd.arg(self.lines.len());
        for (key, qty) in &self.lines {
            cmd.arg(key).arg(*qty);
        }
        cmd.arg(&self.user).arg(&self.request_id);
        match self.hold {
            None => {}
            Some(HoldFor::Seconds(s)) => {
                cmd.arg("HOLD").arg(s);
            }
            Some(HoldFor::UntilUnixMs(ms)) => {
                cmd.arg("HOLDUNTIL").arg(ms);
            }
        }
        for (line, variant) in (1..).zip(&self.variants) {
            if let Some(variant) = variant {
                cmd.arg("VARIANT").arg(line).arg(variant);
            }
        }
        // As with `Deduct`: the deadline is told only for a hold.
        if self.hold.is_some() {
            cmd.arg("WITHDEADLINE");
        }
        cmd
    }
}

/// `SECKILL.CONFIRM key request_id DETAIL` → `ConfirmOutcome`, as a
/// value that `wait_replicas` can follow with a `WAIT` (`confirm` builds
/// the same command).
#[derive(Clone, Debug)]
pub struct Confirm {
    key: Vec<u8>,
    request_id: Vec<u8>,
}

impl Confirm {
    pub fn new(key: impl Into<Vec<u8>>, request_id: impl Into<Vec<u8>>) -> Confirm {
        Confirm {
            key: key.into(),
            request_id: request_id.into(),
        }
    }

    /// Waits, after the confirmation, until `replicas` replicas
    /// acknowledged it or `timeout_ms` passed; send it with
    /// `seckill_durably`.
    pub fn wait_replicas(self, replicas: i64, timeout_ms: i64) -> Durably<Confirm> {
        Durably::new(self, replicas, timeout_ms)
    }

    pub fn to_cmd(&self) -> Cmd {
        confirm(&self.key, &self.request_id)
    }
}

/// `SECKILL.REFUND key request_id DETAIL` → `RefundResult`, as a value
/// that `wait_replicas` can follow with a `WAIT` (`refund` builds the
/// same command).
#[derive(Clone, Debug)]
pub struct Refund {
    key: Vec<u8>,
    request_id: Vec<u8>,
}

impl Refund {
    pub fn new(key: impl Into<Vec<u8>>, request_id: impl Into<Vec<u8>>) -> Refund {
        Refund {
            key: key.into(),
            request_id: request_id.into(),
        }
    }

    /// Waits, after the refund, until `replicas` replicas acknowledged it
    /// or `timeout_ms` passed; send it with `seckill_durably`.
    pub fn wait_replicas(self, replicas: i64, timeout_ms: i64) -> Durably<Refund> {
        Durably::new(self, replicas, timeout_ms)
    }

    pub fn to_cmd(&self) -> Cmd {
        refund(&self.key, &self.request_id)
    }
}

/// A write that `wait_replicas` can follow with a `WAIT`: `Deduct`,
/// `Confirm` and `Refund`.
pub trait Waitable: sealed::Sealed {
    /// What the write replies, as its own method returns it:
    /// `DeductResult`, `ConfirmOutcome` or `RefundResult`.
    type Reply: Send;

    #[doc(hidden)]
    fn write_cmd(&self) -> Cmd;

    #[doc(hidden)]
    fn reply(value: Value) -> Result<Self::Reply, ParsingError>;
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::Deduct {}
    impl Sealed for super::Confirm {}
    impl Sealed for super::Refund {}
}

impl Waitable for Deduct {
    type Reply = DeductResult;

    fn write_cmd(&self) -> Cmd {
        self.to_cmd()
    }

    fn reply(value: Value) -> Result<DeductResult, ParsingError> {
        DeductResult::from_redis_value(value)
    }
}

impl Waitable for Confirm {
    type Reply = ConfirmOutcome;

    fn write_cmd(&self) -> Cmd {
        self.to_cmd()
    }

    fn reply(value: Value) -> Result<ConfirmOutcome, ParsingError> {
        ConfirmOutcome::from_redis_value(value)
    }
}

impl Waitable for Refund {
    type Reply = RefundResult;

    fn write_cmd(&self) -> Cmd {
        self.to_cmd()
    }

    fn reply(value: Value) -> Result<RefundResult, ParsingError> {
        RefundResult::from_redis_value(value)
    }
}

/// A write followed by `WAIT replicas timeout_ms` on the same connection,
/// in one round trip: a plain pipeline, since `WAIT` cannot block inside
/// `MULTI`. Built by `wait_replicas` on `Deduct`, `Confirm` or `Refund`,
/// and sent by `seckill_durably`, which replies a `Durable`.
///
/// It has no `to_cmd`: it cannot be queued in a pipeline or a
/// transaction, where nothing would wait for the replicas. This does not
/// compile:
///
/// ```compile_fail
/// use seckill_client::Confirm;
///
/// let confirm = Confirm::new("sku:1", "order-1").wait_replicas(1, 1000);
/// redis::pipe().atomic().add_command(confirm.to_cmd());
/// ```
///
/// while the write alone can be queued, without a wait:
///
/// ```
/// use seckill_client::Confirm;
///
/// let confirm = Confirm::new("sku:1", "order-1");
/// redis::pipe().atomic().add_command(confirm.to_cmd());
/// ```
#[derive(Clone, Debug)]
pub struct Durably<W> {
    write: W,
    wanted: i64,
    timeout_ms: i64,
}

impl<W: Waitable> Durably<W> {
    fn new(write: W, wanted: i64, timeout_ms: i64) -> Durably<W> {
        Durably {
            write,
            wanted,
            timeout_ms,
        }
    }

    /// The write, without the wait.
    pub fn write(&self) -> &W {
        &self.write
    }

    /// How many replicas are to acknowledge the write.
    pub fn wanted(&self) -> i64 {
        self.wanted
    }

    /// How long `WAIT` waits for them at most, in ms (0: without end, as
    /// `WAIT 0` does).
    pub fn timeout_ms(&self) -> i64 {
        self.timeout_ms
    }

    /// The write and its `WAIT`, each with its own reply, errors included.
    pub(crate) fn to_pipeline(&self) -> Pipeline {
        let mut pipe = redis::pipe();
        pipe.add_command(self.write.write_cmd())
            .cmd("WAIT")
            .arg(self.wanted)
            .arg(self.timeout_ms)
            .ignore_errors();
        pipe
    }
}

fn keyed<K: ToRedisArgs>(name: &str, key: K) -> Cmd {
    let mut cmd = redis::cmd(name);
    cmd.arg(key);
    cmd
}

/// `SECKILL.CONFIRM key request_id DETAIL` → `ConfirmOutcome`: with
/// `DETAIL`, a refunded, a lapsed and an unknown request id each have
/// their own outcome, where the reply without it says `Cancelled`.
pub fn confirm<K: ToRedisArgs, I: ToRedisArgs>(key: K, request_id: I) -> Cmd {
    let mut cmd = keyed("SECKILL.CONFIRM", key);
    cmd.arg(request_id).arg("DETAIL");
    cmd
}

/// `SECKILL.RELEASE key request_id [request_id ...]` → `ItemFigure`
pub fn release<K: ToRedisArgs, I: ToRedisArgs>(key: K, request_ids: &[I]) -> Cmd {
    let mut cmd = keyed("SECKILL.RELEASE", key);
    for request_id in request_ids {
        cmd.arg(request_id);
    }
    cmd
}

/// `SECKILL.REFUND key request_id DETAIL` → `RefundResult`: with
/// `DETAIL`, a request id refunded before, a lapsed hold and an unknown
/// request id each have their own outcome, where the reply without it
/// says `Nothing` (0).
pub fn refund<K: ToRedisArgs, I: ToRedisArgs>(key: K, request_id: I) -> Cmd {
    let mut cmd = keyed("SECKILL.REFUND", key);
    cmd.arg(request_id).arg("DETAIL");
    cmd
}

/// The keys of an order, one argument each, so that `numkeys` counts
/// exactly what is sent.
pub(crate) fn order_keys<K: ToRedisArgs>(keys: &[K]) -> Vec<Vec<u8>> {
    keys.iter().flat_map(ToRedisArgs::to_redis_args).collect()
}

fn order_cmd(name: &str, keys: &[Vec<u8>], request_id: impl ToRedisArgs) -> Cmd {
    let mut cmd = redis::cmd(name);
    cmd.arg(keys.len());
    for key in keys {
        cmd.arg(key);
    }
    cmd.arg(request_id).arg("DETAIL");
    cmd
}

/// `SECKILL.MCONFIRM numkeys key [key ...] request_id DETAIL` →
/// `OrderConfirmation`: every line of the order confirmed, or none. The
/// keys are the order's, in any order; the reply has one entry per key.
pub fn confirm_order<K: ToRedisArgs, I: ToRedisArgs>(keys: &[K], request_id: I) -> Cmd {
    order_cmd("SECKILL.MCONFIRM", &order_keys(keys), request_id)
}

/// `SECKILL.MREFUND numkeys key [key ...] request_id DETAIL` →
/// `Vec<RefundResult>`, one per key: every line that can be is refunded.
pub fn refund_order<K: ToRedisArgs, I: ToRedisArgs>(keys: &[K], request_id: I) -> Cmd {
    order_cmd("SECKILL.MREFUND", &order_keys(keys), request_id)
}

/// `SECKILL.ADD key qty` → `ItemFigure`
pub fn add<K: ToRedisArgs>(key: K, qty: i64) -> Cmd {
    let mut cmd = keyed("SECKILL.ADD", key);
    cmd.arg(qty);
    cmd
}

/// `SECKILL.ADD key qty VARIANT name` → `ItemFigure` (the variant's new
/// stock)
pub fn add_variant<K: ToRedisArgs, V: ToRedisArgs>(key: K, qty: i64, variant: V) -> Cmd {
    let mut cmd = add(key, qty);
    cmd.arg("VARIANT").arg(variant);
    cmd
}

/// `SECKILL.WINDOW key start-ms end-ms` (0: open on that side) →
/// `ItemFigure` (`Some(1)`, or `None` without an item)
pub fn window<K: ToRedisArgs>(key: K, start_ms: i64, end_ms: i64) -> Cmd {
    let mut cmd = keyed("SECKILL.WINDOW", key);
    cmd.arg(start_ms).arg(end_ms);
    cmd
}

/// `SECKILL.STREAM key [stream_key [MAXLEN maxlen]]`: sets the order
/// stream, or clears it with `None` → `ItemFigure`
pub fn stream<K: ToRedisArgs, S: ToRedisArgs>(key: K, stream: Option<(S, Option<i64>)>) -> Cmd {
    let mut cmd = keyed("SECKILL.STREAM", key);
    if let Some((stream_key, maxlen)) = stream {
        cmd.arg(stream_key);
        if let Some(maxlen) = maxlen {
            cmd.arg("MAXLEN").arg(maxlen);
        }
    }
    cmd
}

/// `SECKILL.GET key` → `Option<i64>` (of an item with variants: their
/// stocks added up)
pub fn get<K: ToRedisArgs>(key: K) -> Cmd {
    keyed("SECKILL.GET", key)
}

/// `SECKILL.GET key VARIANT name` → `Option<i64>`: one variant's stock
pub fn get_variant<K: ToRedisArgs, V: ToRedisArgs>(key: K, variant: V) -> Cmd {
    let mut cmd = get(key);
    cmd.arg("VARIANT").arg(variant);
    cmd
}

/// `SECKILL.BOUGHT key user` → `Option<i64>` (of an item with variants:
/// the user's units across them)
pub fn bought<K: ToRedisArgs, U: ToRedisArgs>(key: K, user: U) -> Cmd {
    let mut cmd = keyed("SECKILL.BOUGHT", key);
    cmd.arg(user);
    cmd
}

/// `SECKILL.BOUGHT key user VARIANT name` → `Option<i64>`: the user's
/// units of one variant
pub fn bought_variant<K: ToRedisArgs, U: ToRedisArgs, V: ToRedisArgs>(
    key: K,
    user: U,
    variant: V,
) -> Cmd {
    let mut cmd = bought(key, user);
    cmd.arg("VARIANT").arg(variant);
    cmd
}

/// `SECKILL.HOLDS key [user]` → `Option<Vec<Hold>>` (on an item with
/// variants, each hold names its variant)
pub fn holds<K: ToRedisArgs, U: ToRedisArgs>(key: K, user: Option<U>) -> Cmd {
    let mut cmd = keyed("SECKILL.HOLDS", key);
    if let Some(user) = user {
        cmd.arg(user);
    }
    cmd
}

/// `SECKILL.STATUS key request_id` → `Option<OrderState>` (on an item
/// with variants, with the purchase's variant)
pub fn status<K: ToRedisArgs, I: ToRedisArgs>(key: K, request_id: I) -> Cmd {
    let mut cmd = keyed("SECKILL.STATUS", key);
    cmd.arg(request_id);
    cmd
}

/// `SECKILL.INFO key` → `Option<ItemInfo>` (of an item with variants:
/// their counters added up, and `variants` how many there are)
pub fn info<K: ToRedisArgs>(key: K) -> Cmd {
    keyed("SECKILL.INFO", key)
}

/// `SECKILL.INFO key VARIANT name` → `Option<ItemInfo>`: one variant's
/// counters
pub fn info_variant<K: ToRedisArgs, V: ToRedisArgs>(key: K, variant: V) -> Cmd {
    let mut cmd = info(key);
    cmd.arg("VARIANT").arg(variant);
    cmd
}

/// `SECKILL.SCAN key cursor [COUNT count]` → `ScanPage` (cursor 0 starts
/// a scan; the server reads at most 10,000 records a call, whatever
/// `count` asks, 10 without one)
pub fn scan<K: ToRedisArgs>(key: K, cursor: u64, count: Option<u64>) -> Cmd {
    let mut cmd = keyed("SECKILL.SCAN", key);
    cmd.arg(cursor);
    if let Some(count) = count {
        cmd.arg("COUNT").arg(count);
    }
    cmd
}

/// `SECKILL.SCAN key cursor [COUNT count] VARIANT name` → `ScanPage`: the
/// records of one variant (an item with variants is scanned a variant at
/// a time; `scan` without one is an error there)
pub fn scan_variant<K: ToRedisArgs, V: ToRedisArgs>(
    key: K,
    cursor: u64,
    count: Option<u64>,
    variant: V,
) -> Cmd {
    let mut cmd = scan(key, cursor, count);
    cmd.arg("VARIANT").arg(variant);
    cmd
}

/// `SECKILL.TAKE key qty ID transfer_id [TO destination]` → `ItemFigure`
/// (the units taken; `None` without an item)
pub fn take<K: ToRedisArgs, T: ToRedisArgs, D: ToRedisArgs>(
    key: K,
    qty: i64,
    transfer_id: T,
    destination: Option<D>,
) -> Cmd {
    let mut cmd = keyed("SECKILL.TAKE", key);
    cmd.arg(qty).arg("ID").arg(transfer_id);
    if let Some(destination) = destination {
        cmd.arg("TO").arg(destination);
    }
    cmd
}

/// `SECKILL.ADD key qty ID transfer_id` → `ItemFigure` (the stock after
/// the first call, replied again to a replay)
pub fn add_transfer<K: ToRedisArgs, T: ToRedisArgs>(key: K, qty: i64, transfer_id: T) -> Cmd {
    let mut cmd = keyed("SECKILL.ADD", key);
    cmd.arg(qty).arg("ID").arg(transfer_id);
    cmd
}

/// `SECKILL.SETTLE key transfer_id` → `SettleOutcome`
pub fn settle<K: ToRedisArgs, T: ToRedisArgs>(key: K, transfer_id: T) -> Cmd {
    let mut cmd = keyed("SECKILL.SETTLE", key);
    cmd.arg(transfer_id);
    cmd
}

/// `SECKILL.TAKE key qty ID transfer_id [TO destination] VARIANT name` →
/// `ItemFigure`: `take` out of one variant of a part with variants.
pub fn take_variant<K: ToRedisArgs, T: ToRedisArgs, D: ToRedisArgs, V: ToRedisArgs>(
    key: K,
    qty: i64,
    transfer_id: T,
    destination: Option<D>,
    variant: V,
) -> Cmd {
    let mut cmd = take(key, qty, transfer_id, destination);
    cmd.arg("VARIANT").arg(variant);
    cmd
}

/// `SECKILL.ADD key qty ID transfer_id VARIANT name` → `ItemFigure` (the
/// variant's stock after the first call)
pub fn add_transfer_variant<K: ToRedisArgs, T: ToRedisArgs, V: ToRedisArgs>(
    key: K,
    qty: i64,
    transfer_id: T,
    variant: V,
) -> Cmd {
    let mut cmd = add_transfer(key, qty, transfer_id);
    cmd.arg("VARIANT").arg(variant);
    cmd
}

/// `SECKILL.SETTLE key transfer_id VARIANT name` → `SettleOutcome`
pub fn settle_variant<K: ToRedisArgs, T: ToRedisArgs, V: ToRedisArgs>(
    key: K,
    transfer_id: T,
    variant: V,
) -> Cmd {
    let mut cmd = settle(key, transfer_id);
    cmd.arg("VARIANT").arg(variant);
    cmd
}

/// `SECKILL.VARIANTS key` → `Option<Vec<(String, i64)>>`: each variant's
/// name and stock, in the order `INIT` named them (empty for an item
/// without variants)
pub fn variants<K: ToRedisArgs>(key: K) -> Cmd {
    keyed("SECKILL.VARIANTS", key)
}

/// `SECKILL.TRANSFERS key` → `Option<Vec<Transfer>>`
pub fn transfers<K: ToRedisArgs>(key: K) -> Cmd {
    keyed("SECKILL.TRANSFERS", key)
}
