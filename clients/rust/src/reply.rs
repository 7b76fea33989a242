//! Typed replies. Each implements `FromRedisValue`, so it also decodes the
//! replies of a pipeline or a transaction, under RESP2 and RESP3 alike.

use redis::{FromRedisValue, ParsingError, Value};

/// The stock an unlimited item reports everywhere: the largest 64-bit
/// integer.
pub const UNLIMITED_STOCK: i64 = i64::MAX;

/// What a `SECKILL.DEDUCT` did. A replayed request id gets the very reply
/// of its first call, on purpose (that is what makes retries safe), so a
/// replay is not told apart from the first purchase.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// Sold (or held); the reply was the remaining stock.
    Bought,
    /// `-1`: not enough stock for the quantity.
    SoldOut,
    /// `-2`: the user would hold more than the item's limit.
    LimitReached,
    /// `-3`: no such item (never initialised, expired or deleted).
    NoItem,
    /// `-4`: this request id was refunded, or its hold lapsed.
    Cancelled,
    /// `-5`: before the sale's start.
    NotStarted,
    /// `-6`: at or after the sale's end.
    Ended,
}

impl Outcome {
    /// The outcome of a DEDUCT reply.
    pub fn of_reply(reply: i64) -> Option<Outcome> {
        Some(match reply {
            0.. => Outcome::Bought,
            -1 => Outcome::SoldOut,
            -2 => Outcome::LimitReached,
            -3 => Outcome::NoItem,
            -4 => Outcome::Cancelled,
            -5 => Outcome::NotStarted,
            -6 => Outcome::Ended,
            _ => return None,
        })
    }

    /// The name all seckill client libraries use (`SOLD_OUT`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Bought => "BOUGHT",
            Outcome::SoldOut => "SOLD_OUT",
            Outcome::LimitReached => "LIMIT_REACHED",
            Outcome::NoItem => "NO_ITEM",
            Outcome::Cancelled => "CANCELLED",
            Outcome::NotStarted => "NOT_STARTED",
            Outcome::Ended => "ENDED",
        }
    }
}

/// The reply of `SECKILL.DEDUCT`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeductResult {
    pub outcome: Outcome,
    /// The remaining stock after the purchase; `None` unless bought.
    pub stock: Option<i64>,
    /// The hold's deadline, Unix milliseconds, when the call made a hold
    /// (or replayed one still pending): the time to pay by, with no
    /// second round trip to `SECKILL.STATUS`. `None` for a purchase
    /// without a hold, a refusal, a hold confirmed since, and a reply to
    /// a command sent without `WITHDEADLINE` (`Deduct` sends it with a
    /// hold).
    pub deadline: Option<i64>,
}

impl DeductResult {
    pub fn bought(&self) -> bool {
        self.outcome == Outcome::Bought
    }
}

fn integer(value: &Value) -> Result<i64, ParsingError> {
    match value {
        Value::Int(n) => Ok(*n),
        other => Err(format!("expected an integer reply, got {other:?}").into()),
    }
}

impl FromRedisValue for DeductResult {
    /// Either form of the reply: the integer `code`, or `[code, deadline]`
    /// when the command was sent with `WITHDEADLINE` (the same array under
    /// RESP2 and RESP3), so that a pipeline decodes a `Deduct` with a hold
    /// and one without alike.
    fn from_redis_value(value: Value) -> Result<Self, ParsingError> {
        let (reply, deadline) = match value {
            Value::Array(_) => <(i64, Option<i64>)>::from_redis_value(value)?,
            value => (integer(&value)?, None),
        };
        let outcome = Outcome::of_reply(reply)
            .ok_or_else(|| ParsingError::from(format!("unknown DEDUCT reply {reply}")))?;
        Ok(DeductResult {
            outcome,
            stock: (outcome == Outcome::Bought).then_some(reply),
            deadline,
        })
    }
}

/// The reply of `SECKILL.CONFIRM`. `seckill_confirm` and `Confirm` send
/// `DETAIL`, which tells a refunded, a lapsed and an unknown request id
/// apart; a reply to a command sent without it says `Cancelled` for all
/// three.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ConfirmOutcome {
    /// `1`: the hold is a final purchase now.
    Confirmed,
    /// `0`: it was final already (confirmed before, or bought without a hold).
    AlreadyFinal,
    /// `-4`, without `DETAIL`: refunded, lapsed, or an unknown id.
    Cancelled,
    /// `-3`: no such item.
    NoItem,
    /// `-7`, with `DETAIL`: the purchase was refunded.
    Refunded,
    /// `-8`, with `DETAIL`: the hold lapsed unconfirmed (its units are for
    /// sale again).
    Lapsed,
    /// `-9`, with `DETAIL`: the item never saw this request id.
    UnknownRequest,
}

impl ConfirmOutcome {
    /// The name all seckill client libraries use (`CONFIRMED`, ...).
    pub fn name(self) -> &'static str {
        match self {
            ConfirmOutcome::Confirmed => "CONFIRMED",
            ConfirmOutcome::AlreadyFinal => "ALREADY_FINAL",
            ConfirmOutcome::Cancelled => "CANCELLED",
            ConfirmOutcome::NoItem => "NO_ITEM",
            ConfirmOutcome::Refunded => "REFUNDED",
            ConfirmOutcome::Lapsed => "LAPSED",
            ConfirmOutcome::UnknownRequest => "UNKNOWN_REQUEST",
        }
    }
}

impl FromRedisValue for ConfirmOutcome {
    fn from_redis_value(value: Value) -> Result<Self, ParsingError> {
        Ok(match integer(&value)? {
            1 => ConfirmOutcome::Confirmed,
            0 => ConfirmOutcome::AlreadyFinal,
            -4 => ConfirmOutcome::Cancelled,
            -3 => ConfirmOutcome::NoItem,
            -7 => ConfirmOutcome::Refunded,
            -8 => ConfirmOutcome::Lapsed,
            -9 => ConfirmOutcome::UnknownRequest,
            other => return Err(format!("unknown CONFIRM reply {other}").into()),
        })
    }
}

/// What a `SECKILL.REFUND` did. `seckill_refund` and `Refund` send
/// `DETAIL`, which tells why nothing was given back; a reply to a command
/// sent without it says `Nothing` for all those cases.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RefundOutcome {
    /// The units were given back; the reply was how many (1 or more).
    Refunded,
    /// `0`, without `DETAIL`: an unknown request id, one refunded already,
    /// or a hold that lapsed.
    Nothing,
    /// `-3`: no such item.
    NoItem,
    /// `-7`, with `DETAIL`: refunded before (a retry of the refund).
    AlreadyRefunded,
    /// `-8`, with `DETAIL`: the hold lapsed, and its units went back then.
    Lapsed,
    /// `-9`, with `DETAIL`: the item never saw this request id.
    UnknownRequest,
}

impl RefundOutcome {
    /// The outcome of a REFUND reply.
    pub fn of_reply(reply: i64) -> Option<RefundOutcome> {
        Some(match reply {
            1.. => RefundOutcome::Refunded,
            0 => RefundOutcome::Nothing,
            -3 => RefundOutcome::NoItem,
            -7 => RefundOutcome::AlreadyRefunded,
            -8 => RefundOutcome::Lapsed,
            -9 => RefundOutcome::UnknownRequest,
            _ => return None,
        })
    }

    /// The name all seckill client libraries use (`REFUNDED`, ...).
    pub fn name(self) -> &'static str {
        match self {
            RefundOutcome::Refunded => "REFUNDED",
            RefundOutcome::Nothing => "NOTHING",
            RefundOutcome::NoItem => "NO_ITEM",
            RefundOutcome::AlreadyRefunded => "ALREADY_REFUNDED",
            RefundOutcome::Lapsed => "LAPSED",
            RefundOutcome::UnknownRequest => "UNKNOWN_REQUEST",
        }
    }
}

/// The reply of `SECKILL.REFUND`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RefundResult {
    pub outcome: RefundOutcome,
    /// The units given back by this call; `None` unless refunded.
    pub units: Option<i64>,
}

impl RefundResult {
    pub fn refunded(&self) -> bool {
        self.outcome == RefundOutcome::Refunded
    }
}

impl FromRedisValue for RefundResult {
    fn from_redis_value(value: Value) -> Result<Self, ParsingError> {
        let reply = integer(&value)?;
        let outcome = RefundOutcome::of_reply(reply)
            .ok_or_else(|| ParsingError::from(format!("unknown REFUND reply {reply}")))?;
        Ok(RefundResult {
            outcome,
            units: (outcome == RefundOutcome::Refunded).then_some(reply),
        })
    }
}

/// One line of an order's reply (`SECKILL.MDEDUCT`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OrderLine {
    /// `Bought` on every line of an order taken; on an order refused, the
    /// outcome of each line that refused it, and `None` on each line that
    /// would have been taken: it was not, since the order is all or
    /// nothing.
    pub outcome: Option<Outcome>,
    /// The item's remaining stock after the order; `None` unless taken.
    pub stock: Option<i64>,
}

impl OrderLine {
    /// True when this line refused the order.
    pub fn refused(&self) -> bool {
        self.outcome
            .is_some_and(|outcome| outcome != Outcome::Bought)
    }
}

/// The reply of `SECKILL.MDEDUCT`. A retry of the same order gets the
/// reply of its first call, as `DEDUCT` does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OrderResult {
    /// True when every line was taken; false when nothing was.
    pub taken: bool,
    /// One per line, in the order's line order.
    pub lines: Vec<OrderLine>,
    /// The deadline of the held lines (one for the whole order), Unix ms,
    /// when the order was held (or replayed while still pending); `None`
    /// without a hold, for an order refused, or one confirmed since.
    pub deadline: Option<i64>,
}

impl OrderResult {
    /// The lines that refused the order: each one's index and outcome.
    pub fn refusals(&self) -> impl Iterator<Item = (usize, Outcome)> + '_ {
        self.lines.iter().enumerate().filter_map(|(index, line)| {
            let outcome = line.outcome.filter(|outcome| *outcome != Outcome::Bought)?;
            Some((index, outcome))
        })
    }
}

/// The entries of an order's reply, with `nil` as `None`.
fn order_entries(value: Value, command: &str) -> Result<Vec<Option<i64>>, ParsingError> {
    match value {
        Value::Array(entries) => entries
            .into_iter()
            .map(|entry| match entry {
                Value::Nil => Ok(None),
                entry => integer(&entry).map(Some),
            })
            .collect(),
        other => Err(format!("expected {command}'s lines, got {other:?}").into()),
    }
}

impl FromRedisValue for OrderResult {
    /// Either form of the reply: the array of lines, or `[lines,
    /// deadline]` when the command was sent with `WITHDEADLINE`. They are
    /// told apart by the first entry: a line is an integer or nil, never
    /// an array.
    fn from_redis_value(value: Value) -> Result<Self, ParsingError> {
        let (lines, deadline) = match value {
            Value::Array(entries) if matches!(entries.first(), Some(Value::Array(_))) => {
                let (lines, deadline): (Value, Option<i64>) =
                    FromRedisValue::from_redis_value(Value::Array(entries))?;
                (lines, deadline)
            }
            value => (value, None),
        };
        let lines = order_entries(lines, "MDEDUCT")?
            .into_iter()
            .map(|entry| {
                let Some(reply) = entry else {
                    return Ok(OrderLine {
                        outcome: None,
                        stock: None,
                    });
                };
                let outcome = Outcome::of_reply(reply)
                    .ok_or_else(|| ParsingError::from(format!("unknown MDEDUCT reply {reply}")))?;
                Ok(OrderLine {
                    outcome: Some(outcome),
                    stock: (outcome == Outcome::Bought).then_some(reply),
                })
            })
            .collect::<Result<Vec<_>, ParsingError>>()?;
        Ok(OrderResult {
            taken: !lines.is_empty()
                && lines
                    .iter()
                    .all(|line| line.outcome == Some(Outcome::Bought)),
            lines,
            deadline,
        })
    }
}

/// The reply of `SECKILL.MCONFIRM`, sent with `DETAIL` by
/// `seckill_confirm_order` and `command::confirm_order`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OrderConfirmation {
    /// True when every line is a final purchase now (`Confirmed` or
    /// `AlreadyFinal`); false when none was confirmed by the call.
    pub confirmed: bool,
    /// One per key, in the order the keys were given: each line's
    /// outcome, or `None` on a line that was not confirmed only because
    /// another line refused (a line refunded, lapsed, unknown, or no item).
    pub lines: Vec<Option<ConfirmOutcome>>,
}

impl OrderConfirmation {
    /// The lines that refused the confirmation: each one's index and
    /// outcome.
    pub fn refusals(&self) -> impl Iterator<Item = (usize, ConfirmOutcome)> + '_ {
        self.lines
            .iter()
            .enumerate()
            .filter_map(|(index, line)| Some((index, (*line)?)))
            .filter(|(_, outcome)| {
                !matches!(
                    outcome,
                    ConfirmOutcome::Confirmed | ConfirmOutcome::AlreadyFinal
                )
            })
    }
}

impl FromRedisValue for OrderConfirmation {
    fn from_redis_value(value: Value) -> Result<Self, ParsingError> {
        let lines = order_entries(value, "MCONFIRM")?
            .into_iter()
            .map(|entry| {
                entry
                    .map(|reply| ConfirmOutcome::from_redis_value(Value::Int(reply)))
                    .transpose()
            })
            .collect::<Result<Vec<_>, ParsingError>>()?;
        let confirmed = !lines.is_empty()
            && lines.iter().all(|line| {
                matches!(
                    line,
                    Some(ConfirmOutcome::Confirmed | ConfirmOutcome::AlreadyFinal)
                )
            });
        Ok(OrderConfirmation { confirmed, lines })
    }
}

/// A figure replied by a write to an item (`ADD`'s new stock, `RELEASE`'s
/// count), `None` when there was no item (`-3`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ItemFigure(pub Option<i64>);

impl FromRedisValue for ItemFigure {
    fn from_redis_value(value: Value) -> Result<Self, ParsingError> {
        let reply = integer(&value)?;
        Ok(ItemFigure((reply != -3).then_some(reply)))
    }
}

/// A pending hold, as `SECKILL.HOLDS` lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hold {
    pub request_id: String,
    pub user: String,
    pub qty: i64,
    /// Unix milliseconds.
    pub deadline: i64,
    /// The variant held, on an item with variants; `None` on an item
    /// without (and from a module older than variants).
    pub variant: Option<String>,
}

impl FromRedisValue for Hold {
    /// `[request_id, user, qty, deadline]`, or on an item with variants
    /// `[request_id, user, qty, deadline, variant]`.
    fn from_redis_value(value: Value) -> Result<Self, ParsingError> {
        let (value, variant) = match value {
            Value::Array(mut fields) if fields.len() == 5 => {
                let variant = fields.pop().map(FromRedisValue::from_redis_value);
                (Value::Array(fields), variant.transpose()?)
            }
            value => (value, None),
        };
        let (request_id, user, qty, deadline) = FromRedisValue::from_redis_value(value)?;
        Ok(Hold {
            request_id,
            user,
            qty,
            deadline,
            variant,
        })
    }
}

/// The status of a request id, as `SECKILL.SCAN` and `SECKILL.STATUS`
/// report it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RequestStatus {
    /// Bought without a hold.
    Purchased,
    /// A pending hold.
    Held,
    /// A hold that was confirmed.
    Confirmed,
    Refunded,
    /// A hold whose deadline passed unconfirmed (released or not yet).
    Lapsed,
    /// The item never saw this request id (`SECKILL.STATUS` only).
    Unknown,
}

impl RequestStatus {
    /// The server's word for it (`purchased`, ...), the same in every
    /// client library.
    pub fn name(self) -> &'static str {
        match self {
            RequestStatus::Purchased => "purchased",
            RequestStatus::Held => "held",
            RequestStatus::Confirmed => "confirmed",
            RequestStatus::Refunded => "refunded",
            RequestStatus::Lapsed => "lapsed",
            RequestStatus::Unknown => "unknown",
        }
    }

    /// The status the server names `word`.
    pub fn of_name(word: &str) -> Option<RequestStatus> {
        Some(match word {
            "purchased" => RequestStatus::Purchased,
            "held" => RequestStatus::Held,
            "confirmed" => RequestStatus::Confirmed,
            "refunded" => RequestStatus::Refunded,
            "lapsed" => RequestStatus::Lapsed,
            "unknown" => RequestStatus::Unknown,
            _ => return None,
        })
    }
}

impl FromRedisValue for RequestStatus {
    fn from_redis_value(value: Value) -> Result<Self, ParsingError> {
        let word: String = FromRedisValue::from_redis_value(value)?;
        RequestStatus::of_name(&word)
            .ok_or_else(|| format!("unknown request status {word:?} in a reply").into())
    }
}

/// Where one purchase stands, as `SECKILL.STATUS` reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OrderState {
    pub status: RequestStatus,
    /// The buyer; `None` when the status is `Unknown`.
    pub user: Option<String>,
    /// The units; 0 when `Unknown`.
    pub qty: i64,
    /// A hold's deadline (Unix ms); 0 for a purchase made without one.
    pub deadline: i64,
    /// The variant the purchase is of, on an item with variants; `None`
    /// on an item without (and from a module older than variants).
    pub variant: Option<String>,
}

/// The fields of a reply that is a map under RESP3 and a flat
/// `field, value, ...` array under RESP2 (INFO, STATUS), as pairs.
fn field_pairs(value: Value, command: &str) -> Result<Vec<(Value, Value)>, ParsingError> {
    match value {
        Value::Map(pairs) => Ok(pairs),
        Value::Array(items) if items.len() % 2 == 0 => {
            let mut items = items.into_iter();
            Ok(std::iter::from_fn(|| Some((items.next()?, items.next()?))).collect())
        }
        other => Err(format!("expected {command}'s fields, got {other:?}").into()),
    }
}

impl FromRedisValue for OrderState {
    fn from_redis_value(value: Value) -> Result<Self, ParsingError> {
        let pairs = field_pairs(value, "STATUS")?;
        let mut state = OrderState {
            status: RequestStatus::Unknown,
            user: None,
            qty: 0,
            deadline: 0,
            variant: None,
        };
        for (field, value) in pairs {
            let field: String = FromRedisValue::from_redis_value(field)?;
            match field.as_str() {
                "status" => state.status = FromRedisValue::from_redis_value(value)?,
                "user" => state.user = FromRedisValue::from_redis_value(value)?,
                "qty" => state.qty = integer(&value)?,
                "deadline" => state.deadline = integer(&value)?,
                "variant" => state.variant = FromRedisValue::from_redis_value(value)?,
                // A field a newer module adds.
                _ => {}
            }
        }
        Ok(state)
    }
}

/// A buyer, as `SECKILL.SCAN` lists it: the units it holds now, as
/// `SECKILL.BOUGHT` reports them (0 once it gave everything back).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BuyerRecord {
    pub user: String,
    pub units: i64,
}

/// A purchase made with a request id, as `SECKILL.SCAN` lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestRecord {
    pub request_id: String,
    pub user: String,
    pub qty: i64,
    pub status: RequestStatus,
    /// The hold's deadline, Unix milliseconds; 0 for a purchase made
    /// without a hold.
    pub deadline: i64,
}

/// One record of `SECKILL.SCAN`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ScanRecord {
    Buyer(BuyerRecord),
    Request(RequestRecord),
}

impl FromRedisValue for ScanRecord {
    fn from_redis_value(value: Value) -> Result<Self, ParsingError> {
        let Value::Array(mut fields) = value else {
            return Err(format!("expected a SCAN record, got {value:?}").into());
        };
        if fields.is_empty() {
            return Err("expected a SCAN record, got an empty array".into());
        }
        let kind: String = FromRedisValue::from_redis_value(fields.remove(0))?;
        let fields = Value::Array(fields);
        match kind.as_str() {
            "buyer" => {
                let (user, units) = FromRedisValue::from_redis_value(fields)?;
                Ok(ScanRecord::Buyer(BuyerRecord { user, units }))
            }
            "request" => {
                let (request_id, user, qty, status, deadline) =
                    FromRedisValue::from_redis_value(fields)?;
                Ok(ScanRecord::Request(RequestRecord {
                    request_id,
                    user,
                    qty,
                    status,
                    deadline,
                }))
            }
            other => Err(format!("unknown SCAN record {other:?}").into()),
        }
    }
}

/// One page of `SECKILL.SCAN`: the cursor of the next page (0 when the
/// scan is over) and this page's records. A missing item replies an empty
/// page with cursor 0.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ScanPage {
    pub cursor: u64,
    pub records: Vec<ScanRecord>,
}

impl FromRedisValue for ScanPage {
    fn from_redis_value(value: Value) -> Result<Self, ParsingError> {
        let (cursor, records): (String, Vec<ScanRecord>) = FromRedisValue::from_redis_value(value)?;
        let cursor = cursor
            .parse()
            .map_err(|_| ParsingError::from(format!("expected a SCAN cursor, got {cursor:?}")))?;
        Ok(ScanPage { cursor, records })
    }
}

/// The counters of one item, as `SECKILL.INFO` replies them (a flat
/// field/value array under RESP2, a map under RESP3: the same value here).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ItemInfo {
    /// Remaining stock; `UNLIMITED_STOCK` if unlimited.
    pub stock: i64,
    pub unlimited: bool,
    /// Most units one user may hold; 0 = no cap.
    pub limit: i64,
    pub initial: i64,
    pub added: i64,
    pub sold: i64,
    pub refunded: i64,
    pub held: i64,
    pub holds: i64,
    pub expired: i64,
    pub buyers: i64,
    pub requests: i64,
    /// Sale window, Unix ms; 0 = open on that side.
    pub start: i64,
    pub end: i64,
    pub stream: Option<String>,
    pub stream_maxlen: i64,
    /// Units moved to, and received from, other parts of a split item (0
    /// from a module older than transfers).
    pub moved_out: i64,
    pub moved_in: i64,
    /// False when the order stream came with a `RESTORE` and no user
    /// allowed to write it has confirmed it yet, or there is none (true
    /// from a module older than that check, which trusted every stream).
    pub stream_confirmed: bool,
    /// How many variants the item sells (its other counters then add
    /// theirs up); 0 for an item without, or from a module older than
    /// variants.
    pub variants: i64,
}

impl FromRedisValue for ItemInfo {
    fn from_redis_value(value: Value) -> Result<Self, ParsingError> {
        let pairs = field_pairs(value, "INFO")?;
        let mut info = ItemInfo {
            stream_confirmed: true,
            ..ItemInfo::default()
        };
        for (field, value) in pairs {
            let field: String = FromRedisValue::from_redis_value(field)?;
            if field == "stream" {
                info.stream = FromRedisValue::from_redis_value(value)?;
                continue;
            }
            let number = integer(&value)?;
            let slot = match field.as_str() {
                "stock" => &mut info.stock,
                "unlimited" => {
                    info.unlimited = number != 0;
                    continue;
                }
                "stream_confirmed" => {
                    info.stream_confirmed = number != 0;
                    continue;
                }
                "limit" => &mut info.limit,
                "initial" => &mut info.initial,
                "added" => &mut info.added,
                "sold" => &mut info.sold,
                "refunded" => &mut info.refunded,
                "held" => &mut info.held,
                "holds" => &mut info.holds,
                "expired" => &mut info.expired,
                "buyers" => &mut info.buyers,
                "requests" => &mut info.requests,
                "variants" => &mut info.variants,
                "start" => &mut info.start,
                "end" => &mut info.end,
                "stream_maxlen" => &mut info.stream_maxlen,
                "moved_out" => &mut info.moved_out,
                "moved_in" => &mut info.moved_in,
                // A newer module may add fields: older clients skip them.
                _ => continue,
            };
            *slot = number;
        }
        Ok(info)
    }
}

/// The reply of `SECKILL.SETTLE`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SettleOutcome {
    /// `1`: the transfer is closed now.
    Settled,
    /// `0`: it was closed before.
    AlreadySettled,
    /// `-4`: this part gave out no transfer under that id.
    Unknown,
    /// `-3`: no such item.
    NoItem,
}

impl SettleOutcome {
    /// The name all seckill client libraries use (`SETTLED`, ...).
    pub fn name(self) -> &'static str {
        match self {
            SettleOutcome::Settled => "SETTLED",
            SettleOutcome::AlreadySettled => "ALREADY_SETTLED",
            SettleOutcome::Unknown => "UNKNOWN",
            SettleOutcome::NoItem => "NO_ITEM",
        }
    }
}

impl FromRedisValue for SettleOutcome {
    fn from_redis_value(value: Value) -> Result<Self, ParsingError> {
        Ok(match integer(&value)? {
            1 => SettleOutcome::Settled,
            0 => SettleOutcome::AlreadySettled,
            -4 => SettleOutcome::Unknown,
            -3 => SettleOutcome::NoItem,
            other => return Err(format!("unknown SETTLE reply {other}").into()),
        })
    }
}

/// A transfer given out and not settled, as `SECKILL.TRANSFERS` lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Transfer {
    pub transfer_id: String,
    pub units: i64,
    pub destination: Option<String>,
    /// The variant the units came out of, on an item with variants.
    pub variant: Option<String>,
}

impl FromRedisValue for Transfer {
    fn from_redis_value(value: Value) -> Result<Self, ParsingError> {
        let fields: Vec<Value> = FromRedisValue::from_redis_value(value)?;
        let mut fields = fields.into_iter();
        let (Some(transfer_id), Some(units), Some(destination)) =
            (fields.next(), fields.next(), fields.next())
        else {
            return Err(ParsingError::from("a TRANSFERS entry has 3 or 4 fields"));
        };
        let variant = fields.next().map(String::from_redis_value).transpose()?;
        if fields.next().is_some() {
            return Err(ParsingError::from("a TRANSFERS entry has 3 or 4 fields"));
        }
        Ok(Transfer {
            transfer_id: String::from_redis_value(transfer_id)?,
            units: i64::from_redis_value(units)?,
            destination: Option::<String>::from_redis_value(destination)?,
            variant,
        })
    }
}

/// The reply of a write sent with `wait_replicas`: the write's own typed
/// reply, and what the `WAIT` after it answered.
///
/// A `WAIT` covers every write its connection made before it. A write that
/// changed nothing (a replayed `DEDUCT`, a `CONFIRM` answering
/// `AlreadyFinal`, a `REFUND` answering `AlreadyRefunded`) adds none of
/// its own, so its `WAIT` still covers the first call only when it is sent
/// on the connection that made that call; on a connection that made no
/// write yet it answers at once with every connected replica, which
/// proves nothing about the first call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Durable<T> {
    /// The write's reply, as its own method returns it.
    pub result: T,
    /// How many replicas acknowledged the write (`WAIT`'s answer).
    pub replicas: i64,
    /// How many were asked for.
    pub wanted: i64,
}

impl<T> Durable<T> {
    /// True when as many replicas as asked for acknowledged the write.
    pub fn durable(&self) -> bool {
        self.replicas >= self.wanted
    }

    /// From the replies of a write and its `WAIT`: the write's error, typed,
    /// if it failed (`WAIT`'s answer is then dropped); `WAIT`'s error, as
    /// the client's own, if only that failed (the write ran).
    pub(crate) fn of_replies(
        replies: Vec<Value>,
        wanted: i64,
        decode: fn(Value) -> Result<T, ParsingError>,
    ) -> crate::Result<Durable<T>> {
        let [write, wait]: [Value; 2] = replies.try_into().map_err(|replies: Vec<Value>| {
            redis::RedisError::from(ParsingError::from(format!(
                "expected the replies of a write and its WAIT, got {replies:?}"
            )))
        })?;
        if matches!(&write, Value::SimpleString(status) if status == "QUEUED") {
            return Err(crate::Error::Redis(redis::RedisError::from((
                redis::ErrorKind::InvalidClientConfig,
                "a write with a wait for replicas was sent inside MULTI",
                "the write and its WAIT are queued in the open transaction, where WAIT does \
                 not wait: DISCARD it, or EXEC it and send the write again outside MULTI"
                    .to_owned(),
            ))));
        }
        let result = decode(write.extract_error()?).map_err(redis::RedisError::from)?;
        let replicas = wait
            .extract_error()
            .and_then(|answer| Ok(integer(&answer)?))
            .map_err(crate::Error::Redis)?;
        Ok(Durable {
            result,
            replicas,
            wanted,
        })
    }
}
