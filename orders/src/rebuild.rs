//! `seckill-orders rebuild`: an item that was lost (deleted, expired, a
//! server lost without persistence) built again from its rows in the
//! orders table, with `SECKILL.IMPORT`.
//!
//! The item is built under a temporary key in the item's cluster slot and
//! renamed onto the item's key only once complete and checked, so buyers
//! never see a half-built item. Every run starts by deleting that
//! temporary key and reads the rows in a fixed order, so a run interrupted
//! at any point and started again ends with the same item.

use crate::store::describe;
use crate::{log, postgres_config, redis_settings_from_env};
use postgres::NoTls;
use seckill_client::endpoint::{Endpoint, Setting};
use std::collections::{BTreeMap, HashMap};
use std::process::ExitCode;
use std::time::Duration;

const USAGE: &str = "usage: seckill-orders rebuild --item KEY
       (--supply N | --variant NAME:N [--variant NAME:N ...] [--variant-limit NAME:L ...])
       [--limit L] [--start MS] [--end MS] [--stream KEY [--maxlen M]] [--replace]
       [--postgres-url URL] [--redis-url URL | --sentinel HOST:PORT[,...] --master-name NAME]

Builds the item KEY again from its rows in the table seckill_orders, with
N units of supply (or, for a drop with variants, each variant NAME with its
supply N and its own limit L, in the order given), the per-user LIMIT L,
the sale window and the order stream given (as SECKILL.INIT takes them).
An item that exists is left
alone unless --replace is given. Redis and PostgreSQL are found as the
consumer finds them (SECKILL_REDIS_URL, SECKILL_SENTINELS,
SECKILL_MASTER_NAME, SECKILL_POSTGRES_URL; passwords from the environment
only). Exit status: 0 rebuilt, 1 refused or failed, 2 usage error.";

/// Records per `SECKILL.IMPORT` call: the module takes at most 10,000.
const BATCH: usize = 10_000;
const NETWORK_TIMEOUT: Duration = Duration::from_secs(10);
/// The final script imports the holds; allow for a large item.
const READ_TIMEOUT: Duration = Duration::from_secs(120);

/// Why a rebuild stopped.
#[derive(Debug)]
enum Failure {
    /// A flag missing or wrong: exit 2.
    Usage(String),
    /// Refused or failed: exit 1.
    Refused(String),
}

fn refused(message: impl Into<String>) -> Failure {
    Failure::Refused(message.into())
}

/// What the item sells: one stock, or a drop's variants.
#[derive(Debug, PartialEq, Eq)]
enum Supply {
    One(i64),
    /// Each variant's name and supply, in the order INIT names them.
    Variants(Vec<(String, i64)>),
}

struct Options {
    item: String,
    supply: Supply,
    /// A variant's own limit (`VARIANTLIMIT`), by name.
    variant_limits: Vec<(String, i64)>,
    limit: i64,
    start: Option<i64>,
    end: Option<i64>,
    stream: Option<String>,
    maxlen: Option<i64>,
    replace: bool,
    redis: Endpoint,
    postgres: postgres::Config,
}

fn number(flag: &str, value: &str) -> Result<i64, Failure> {
    value
        .parse::<i64>()
        .ok()
        .filter(|n| *n >= 0)
        .ok_or_else(|| Failure::Usage(format!("{flag}: not a non-negative integer: {value:?}")))
}

/// `NAME:N`, split at the last colon (a variant's name may have colons).
fn named_number(flag: &str, value: &str) -> Result<(String, i64), Failure> {
    let (name, count) = value
        .rsplit_once(':')
        .filter(|(name, _)| !name.is_empty())
        .ok_or_else(|| Failure::Usage(format!("{flag}: not NAME:N: {value:?}")))?;
    Ok((name.to_owned(), number(flag, count)?))
}

fn parse(args: &[String]) -> Result<Options, Failure> {
    let usage = |message: String| Failure::Usage(message);
    let mut redis = redis_settings_from_env();
    let mut postgres_from = "SECKILL_POSTGRES_URL".to_owned();
    let mut postgres_url = std::env::var("SECKILL_POSTGRES_URL").unwrap_or_default();
    let (mut item, mut supply, mut limit) = (None, None, 0);
    let (mut variants, mut variant_limits) = (Vec::new(), Vec::new());
    let (mut start, mut end, mut stream, mut maxlen) = (None, None, None, None);
    let mut replace = false;
    let mut args = args.iter();
    while let Some(flag) = args.next() {
        match flag.as_str() {
            "--help" | "-h" => return Err(usage(String::new())),
            "--replace" => {
                replace = true;
                continue;
            }
            _ => {}
        }
        let value = args
            .next()
            .ok_or_else(|| usage(format!("{flag} needs a value")))?
            .clone();
        match flag.as_str() {
            "--item" => item = Some(value),
            "--supply" => supply = Some(number(flag, &value)?),
            "--variant" => variants.push(named_number(flag, &value)?),
            "--variant-limit" => variant_limits.push(named_number(flag, &value)?),
            "--limit" => limit = number(flag, &value)?,
            "--start" => start = Some(number(flag, &value)?),
            "--end" => end = Some(number(flag, &value)?),
            "--stream" => stream = Some(value),
            "--maxlen" => maxlen = Some(number(flag, &value)?),
            "--postgres-url" => {
                postgres_from = flag.clone();
                postgres_url = value;
            }
            _ => {
                if !redis.set(flag, Setting::new(flag.clone(), value)) {
                    return Err(usage(format!("unknown flag {flag}")));
                }
            }
        }
    }
    let item = item
        .filter(|item| !item.is_empty())
        .ok_or_else(|| usage("--item is required".into()))?;
    let supply = match (supply, variants.is_empty()) {
        (Some(supply), true) => Supply::One(supply),
        (None, false) => Supply::Variants(variants),
        (Some(_), false) => {
            return Err(usage(
                "--supply and --variant do not go together: a drop's supply is its variants'"
                    .into(),
            ))
        }
        (None, true) => return Err(usage("--supply (or --variant) is required".into())),
    };
    if !variant_limits.is_empty() && matches!(supply, Supply::One(_)) {
        return Err(usage("--variant-limit needs --variant".into()));
    }
    if maxlen.is_some() && stream.is_none() {
        return Err(usage("--maxlen needs --stream".into()));
    }
    if let Some(stream) = &stream {
        if stream == &item {
            return Err(usage(
                "the order stream cannot be the item's own key".into(),
            ));
        }
        if key_slot(stream.as_bytes()) != key_slot(item.as_bytes()) {
            return Err(usage(format!(
                "the order stream {stream} must hash to the item's slot: give both keys the \
                 same hash tag, e.g. {{sku:1}} and {{sku:1}}:orders"
            )));
        }
    }
    if postgres_url.is_empty() {
        return Err(usage(
            "a PostgreSQL URL is required (--postgres-url, SECKILL_POSTGRES_URL)".into(),
        ));
    }
    let postgres = postgres_config(&postgres_url, &postgres_from).map_err(usage)?;
    let redis = Endpoint::from_settings(&redis, Some("redis://127.0.0.1:6379/")).map_err(usage)?;
    Ok(Options {
        item,
        supply,
        variant_limits,
        limit,
        start,
        end,
        stream,
        maxlen,
        replace,
        redis,
        postgres,
    })
}

/// CRC16/XMODEM (polynomial 0x1021, initial 0), as Redis Cluster hashes
/// keys.
pub fn crc16(bytes: &[u8]) -> u16 {
    bytes.iter().fold(0u16, |crc, byte| {
        (0..8).fold(crc ^ (u16::from(*byte) << 8), |crc, _| {
            if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            }
        })
    })
}

/// The key's non-empty hash tag (`{...}`, the first one), if it has one.
fn hash_tag(key: &[u8]) -> Option<&[u8]> {
    let open = key.iter().position(|b| *b == b'{')?;
    let rest = &key[open + 1..];
    let close = rest.iter().position(|b| *b == b'}')?;
    (close > 0).then(|| &rest[..close])
}

/// Redis Cluster's slot of a key.
pub fn key_slot(key: &[u8]) -> u16 {
    crc16(hash_tag(key).unwrap_or(key)) % 16384
}

/// The shortest string of digits and lower-case letters (the first in
/// counting order) whose slot is `slot`: a hash tag for a key in that slot.
fn tag_for_slot(slot: u16) -> String {
    const DIGITS: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    (0u64..)
        .map(|mut n| {
            let mut tag = vec![DIGITS[(n % 36) as usize]];
            n /= 36;
            while n > 0 {
                n -= 1;
                tag.push(DIGITS[(n % 36) as usize]);
                n /= 36;
            }
            tag
        })
        .find(|tag| crc16(tag) % 16384 == slot)
        .map(|tag| String::from_utf8(tag).unwrap_or_default())
        .unwrap_or_default()
}

/// The temporary key an item is built under: in the item's slot (its own
/// hash tag, or one found for its slot), named after the item.
pub fn temporary_key(item: &str) -> String {
    let tag = match hash_tag(item.as_bytes()) {
        Some(tag) => String::from_utf8_lossy(tag).into_owned(),
        None => tag_for_slot(key_slot(item.as_bytes())),
    };
    format!("{{{tag}}}:rebuild:{item}")
}

/// One row of the table, as read.
struct Row {
    /// The variant the order is of, on a drop; `None` on an item without.
    variant: Option<String>,
    order_id: String,
    user_id: String,
    qty: i64,
    status: String,
    stock_after: i64,
    hold_until_ms: Option<i64>,
}

/// A `REQUEST` record's arguments after the keyword.
struct Request {
    id: String,
    user: String,
    qty: i64,
    status: &'static str,
    deadline: i64,
    reply: i64,
}

impl Request {
    fn args(&self) -> [String; 6] {
        [
            self.id.clone(),
            self.user.clone(),
            self.qty.to_string(),
            self.status.to_owned(),
            self.deadline.to_string(),
            self.reply.to_string(),
        ]
    }
}

/// What the rows give: the records, and the totals the item must show.
#[derive(Default)]
struct Plan {
    /// Units bought without a request id, per user.
    buyers: BTreeMap<String, i64>,
    /// Every request record but the held ones, in order_id order.
    settled: Vec<Request>,
    /// The held ones, imported last (see `FINISH`).
    held: Vec<Request>,
    /// Units kept for good: bought without id, purchased, confirmed.
    kept: i64,
    held_units: i64,
    refunded: i64,
    lapsed: i64,
    /// Held records without a deadline in the table (imported lapsing now).
    held_without_deadline: usize,
    /// Confirmed records whose hold entry is not in the order stream: their
    /// reply is the stock after their confirmation.
    confirmed_without_hold_entry: usize,
}

impl Plan {
    fn sold(&self) -> i64 {
        self.kept + self.held_units + self.refunded + self.lapsed
    }

    fn records(&self) -> usize {
        self.buyers.len() + self.settled.len() + self.held.len()
    }
}

/// `replies`: the original reply of confirmed orders (their hold's), by
/// request id, as found in the order stream; the others get the row's
/// `stock_after`, the stock after the order's latest entry.
fn plan(rows: Vec<Row>, supply: i64, replies: &HashMap<String, i64>) -> Result<Plan, Failure> {
    let mut plan = Plan::default();
    let mut too_high = Vec::new();
    for row in rows {
        if row.qty <= 0 {
            return Err(refused(format!(
                "order {}: qty {} is not a positive number of units",
                row.order_id, row.qty
            )));
        }
        let add = |total: &mut i64| {
            *total = total
                .checked_add(row.qty)
                .ok_or_else(|| refused("the rows' units overflow a 64-bit integer"))?;
            Ok::<(), Failure>(())
        };
        if row.order_id.starts_with("entry:") {
            // A purchase without a request id: only its units count.
            match row.status.as_str() {
                "purchased" | "confirmed" => {}
                other => {
                    return Err(refused(format!(
                        "order {}: a purchase without a request id cannot be {other}",
                        row.order_id
                    )))
                }
            }
            add(plan.buyers.entry(row.user_id.clone()).or_insert(0))?;
            add(&mut plan.kept)?;
            continue;
        }
        let (status, deadline) = match row.status.as_str() {
            "purchased" => ("purchased", row.hold_until_ms.unwrap_or(0)),
            "confirmed" => ("confirmed", row.hold_until_ms.unwrap_or(1)),
            "refunded" => ("refunded", row.hold_until_ms.unwrap_or(0)),
            "expired" => ("lapsed", row.hold_until_ms.unwrap_or(0)),
            "held" => {
                if row.hold_until_ms.is_none() {
                    plan.held_without_deadline += 1;
                }
                ("held", row.hold_until_ms.unwrap_or(1))
            }
            other => {
                return Err(refused(format!(
                    "order {}: unknown status {other:?} in the table",
                    row.order_id
                )))
            }
        };
        match status {
            "purchased" | "confirmed" => add(&mut plan.kept)?,
            "held" => add(&mut plan.held_units)?,
            "refunded" => add(&mut plan.refunded)?,
            _ => add(&mut plan.lapsed)?,
        }
        let mut reply = row.stock_after;
        if status == "confirmed" {
            match replies.get(&row.order_id) {
                Some(original) => reply = *original,
                None => plan.confirmed_without_hold_entry += 1,
            }
        }
        if reply > supply || reply < 0 {
            too_high.push(format!("{} ({reply})", row.order_id));
        }
        let request = Request {
            id: row.order_id,
            user: row.user_id,
            qty: row.qty,
            status,
            deadline,
            reply,
        };
        match status {
            "held" => plan.held.push(request),
            _ => plan.settled.push(request),
        }
    }
    let holding = plan.kept + plan.held_units;
    if holding > supply {
        return Err(refused(format!(
            "the rows hold {holding} units ({} kept, {} in pending holds), more than the \
             supply {supply}",
            plan.kept, plan.held_units
        )));
    }
    if !too_high.is_empty() {
        let shown: Vec<_> = too_high.iter().take(5).cloned().collect();
        return Err(refused(format!(
            "{} orders have a reply (stock_after) that is not a stock an item of supply \
             {supply} can have, which SECKILL.IMPORT refuses: {}{}; give the item's whole \
             supply (initial and added units) with --supply",
            too_high.len(),
            shown.join(", "),
            if too_high.len() > 5 { ", ..." } else { "" }
        )));
    }
    Ok(plan)
}

fn read_rows(options: &Options) -> Result<Vec<Row>, Failure> {
    let mut client = options
        .postgres
        .connect(NoTls)
        .map_err(|err| refused(format!("cannot connect to PostgreSQL: {}", describe(&err))))?;
    // A fixed order (bytewise, whatever the database's collation), so
    // that every run imports the same records in the same calls.
    let rows = client
        .query(
            "SELECT order_id, user_id, qty, status, stock_after, hold_until_ms, variant \
             FROM seckill_orders WHERE item = $1 ORDER BY order_id COLLATE \"C\"",
            &[&options.item],
        )
        .map_err(|err| {
            refused(format!(
                "cannot read the orders of {}: {}",
                options.item,
                describe(&err)
            ))
        })?;
    Ok(rows
        .iter()
        .map(|row| Row {
            order_id: row.get(0),
            user_id: row.get(1),
            qty: row.get(2),
            status: row.get(3),
            stock_after: row.get(4),
            hold_until_ms: row.get(5),
            variant: row.get(6),
        })
        .collect())
}

/// The last step, atomic: the held records imported (so that none can
/// lapse, and write its `expire` event, before the item has its name and
/// its order stream), the counters checked against the rows' totals, part
/// by part (the item's own stock, or each variant of a drop), the order
/// stream set, and the temporary key renamed onto the item's.
///
/// KEYS: temporary key, item, [stream]. ARGV: replace (0/1), maxlen, the
/// number of parts, then per part: its variant ('' for the item's own
/// stock), the expected sold, refunded, held + expired, stock + held,
/// requests, the number of its held records and their six fields each.
const FINISH: &str = r#"
local tmp, item, stream = KEYS[1], KEYS[2], KEYS[3]
local replace = ARGV[1] == '1'
if not replace and redis.call('EXISTS', item) == 1 then
  return {'exists'}
end
local parts = tonumber(ARGV[3])
local at = 4
for _ = 1, parts do
  local variant = ARGV[at]
  local expected = {ARGV[at + 1], ARGV[at + 2], ARGV[at + 3], ARGV[at + 4], ARGV[at + 5]}
  local count = tonumber(ARGV[at + 6])
  at = at + 7
  -- 1,000 records a call: a Lua call takes at most about 8,000 arguments.
  while count > 0 do
    local batch = math.min(count, 1000)
    local call = {'SECKILL.IMPORT', tmp}
    if variant ~= '' then
      call[#call + 1] = 'VARIANT'
      call[#call + 1] = variant
    end
    for _ = 1, batch do
      call[#call + 1] = 'REQUEST'
      for field = 0, 5 do
        call[#call + 1] = ARGV[at + field]
      end
      at = at + 6
    end
    redis.call(unpack(call))
    count = count - batch
  end
  local reply
  if variant == '' then
    reply = redis.call('SECKILL.INFO', tmp)
  else
    reply = redis.call('SECKILL.INFO', tmp, 'VARIANT', variant)
  end
  local info = {}
  for i = 1, #reply, 2 do
    info[reply[i]] = reply[i + 1]
  end
  local got = {info['sold'], info['refunded'], info['held'] + info['expired'],
               info['stock'] + info['held'], info['requests']}
  for i = 1, 5 do
    if got[i] ~= tonumber(expected[i]) then
      return {'mismatch', variant, got[1], got[2], got[3], got[4], got[5]}
    end
  end
end
if stream then
  if ARGV[2] == '' then
    redis.call('SECKILL.STREAM', tmp, stream)
  else
    redis.call('SECKILL.STREAM', tmp, stream, 'MAXLEN', ARGV[2])
  end
end
local whole = redis.call('SECKILL.INFO', tmp)
local info = {}
for i = 1, #whole, 2 do
  info[whole[i]] = whole[i + 1]
end
if replace then
  redis.call('RENAME', tmp, item)
else
  redis.call('RENAMENX', tmp, item)
end
return {'done', info['stock'], info['held']}
"#;

fn connect(options: &Options) -> Result<redis::Connection, Failure> {
    let client = options.redis.master().map_err(refused)?;
    let shown = options.redis.shown();
    let con = client
        .get_connection_with_timeout(NETWORK_TIMEOUT)
        .map_err(|err| refused(format!("cannot connect to {shown}: {err}")))?;
    con.set_read_timeout(Some(READ_TIMEOUT))
        .and_then(|()| con.set_write_timeout(Some(NETWORK_TIMEOUT)))
        .map_err(|err| refused(format!("cannot set timeouts on {shown}: {err}")))?;
    Ok(con)
}

fn redis_error(what: &str, err: redis::RedisError) -> Failure {
    refused(format!("{what}: {err}"))
}

/// The summary printed when done.
struct Done {
    records: usize,
    held: i64,
    stock: i64,
}

/// The stock each hold of `item` left, by request id, from the `hold`
/// entries still in the order stream (none if it is missing or trimmed).
fn hold_replies(
    con: &mut redis::Connection,
    stream: &str,
    item: &str,
) -> Result<HashMap<String, i64>, Failure> {
    let mut replies = HashMap::new();
    let kind: String = redis::cmd("TYPE")
        .arg(stream)
        .query(con)
        .map_err(|err| redis_error(&format!("TYPE {stream}"), err))?;
    if kind != "stream" {
        return Ok(replies);
    }
    let mut start = "-".to_owned();
    loop {
        type Page = Vec<(String, HashMap<String, Vec<u8>>)>;
        let page: Page = redis::cmd("XRANGE")
            .arg(stream)
            .arg(&start)
            .arg("+")
            .arg("COUNT")
            .arg(BATCH)
            .query(con)
            .map_err(|err| redis_error(&format!("XRANGE {stream}"), err))?;
        let Some((last, _)) = page.last() else {
            return Ok(replies);
        };
        start = format!("({last}");
        for (_, fields) in &page {
            let field = |name: &str| fields.get(name).map(|value| value.as_slice());
            if field("event") != Some(b"hold") || field("item") != Some(item.as_bytes()) {
                continue;
            }
            let request = field("request").map(String::from_utf8_lossy);
            let stock = field("stock")
                .and_then(|stock| std::str::from_utf8(stock).ok())
                .and_then(|stock| stock.parse::<i64>().ok());
            if let (Some(request), Some(stock)) = (request, stock) {
                replies.insert(request.into_owned(), stock);
            }
        }
        if page.len() < BATCH {
            return Ok(replies);
        }
    }
}

/// One part of the item to import: its own stock (`variant` `None`), or
/// one variant of a drop, with its supply and the plan of its rows.
struct Part {
    variant: Option<String>,
    supply: i64,
    plan: Plan,
}

impl Part {
    fn name(&self) -> String {
        self.variant
            .as_ref()
            .map_or_else(String::new, |variant| format!(" (variant {variant})"))
    }
}

/// One part's variant (`None`: the item's own stock), supply and rows.
type PartRows = (Option<String>, i64, Vec<Row>);

/// The rows of each part of the item, in the order `supply` names the
/// parts. Every row of a drop names one of its variants, and no row of an
/// item without variants names one.
fn parts_of(rows: Vec<Row>, supply: &Supply) -> Result<Vec<PartRows>, Failure> {
    let mut parts: Vec<PartRows> = match supply {
        Supply::One(units) => vec![(None, *units, Vec::new())],
        Supply::Variants(variants) => variants
            .iter()
            .map(|(name, units)| (Some(name.clone()), *units, Vec::new()))
            .collect(),
    };
    for row in rows {
        let Some(part) = parts
            .iter_mut()
            .find(|(variant, _, _)| *variant == row.variant)
        else {
            return Err(refused(match (&row.variant, supply) {
                (Some(variant), Supply::One(_)) => format!(
                    "order {} is of variant {variant}: rebuild a drop with --variant \
                     NAME:SUPPLY for each of its variants",
                    row.order_id
                ),
                (Some(variant), Supply::Variants(_)) => format!(
                    "order {} is of variant {variant}, which no --variant names",
                    row.order_id
                ),
                (None, _) => format!(
                    "order {} names no variant, and the item is rebuilt with variants",
                    row.order_id
                ),
            }));
        };
        part.2.push(row);
    }
    Ok(parts)
}

fn rebuild(options: &Options) -> Result<Done, Failure> {
    let rows = read_rows(options)?;
    let item = options.item.as_str();
    let mut con = connect(options)?;
    let replies = match &options.stream {
        Some(stream) => hold_replies(&mut con, stream, item)?,
        None => HashMap::new(),
    };
    let mut parts = Vec::new();
    for (variant, supply, rows) in parts_of(rows, &options.supply)? {
        let plan = plan(rows, supply, &replies).map_err(|failure| match (failure, &variant) {
            (Failure::Refused(why), Some(variant)) => refused(format!("variant {variant}: {why}")),
            (failure, _) => failure,
        })?;
        parts.push(Part {
            variant,
            supply,
            plan,
        });
    }
    let confirmed_without_hold_entry: usize = parts
        .iter()
        .map(|part| part.plan.confirmed_without_hold_entry)
        .sum();
    if confirmed_without_hold_entry > 0 {
        log(&format!(
            "{confirmed_without_hold_entry} confirmed orders have no hold entry in the order \
             stream: a retry of one gets the stock after its confirmation, not its hold's reply"
        ));
    }
    let held_without_deadline: usize = parts
        .iter()
        .map(|part| part.plan.held_without_deadline)
        .sum();
    if held_without_deadline > 0 {
        log(&format!(
            "{held_without_deadline} held orders have no deadline in the table (hold_until_ms \
             NULL): they are imported as holds lapsing now"
        ));
    }
    let tmp = temporary_key(item);
    if !options.replace {
        let exists: i64 = redis::cmd("EXISTS")
            .arg(item)
            .query(&mut con)
            .map_err(|err| redis_error("EXISTS", err))?;
        if exists == 1 {
            return Err(refused(format!(
                "{item} exists: it is left as it is (give --replace to overwrite it)"
            )));
        }
    }
    // Whatever an interrupted run left.
    redis::cmd("DEL")
        .arg(&tmp)
        .query::<i64>(&mut con)
        .map_err(|err| redis_error(&format!("DEL {tmp}"), err))?;
    let mut init = redis::cmd("SECKILL.INIT");
    init.arg(&tmp);
    match &options.supply {
        Supply::One(units) => {
            init.arg(units);
        }
        Supply::Variants(variants) => {
            init.arg("VARIANTS").arg(variants.len());
            for (name, units) in variants {
                init.arg(name).arg(units);
            }
        }
    }
    if options.limit > 0 {
        init.arg("LIMIT").arg(options.limit);
    }
    for (name, limit) in &options.variant_limits {
        init.arg("VARIANTLIMIT").arg(name).arg(limit);
    }
    if let Some(start) = options.start {
        init.arg("START").arg(start);
    }
    if let Some(end) = options.end {
        init.arg("END").arg(end);
    }
    let created: i64 = init
        .query(&mut con)
        .map_err(|err| redis_error("SECKILL.INIT", err))?;
    if created != 1 {
        return Err(refused(format!("SECKILL.INIT {tmp} did not create it")));
    }
    // Part by part: buyers without request ids first, then the settled
    // requests, in order_id order; the holds go last, with the rename.
    for part in &parts {
        let plan = &part.plan;
        let mut records: Vec<Vec<String>> = plan
            .buyers
            .iter()
            .map(|(user, units)| vec!["BUYER".to_owned(), user.clone(), units.to_string()])
            .collect();
        records.extend(plan.settled.iter().map(|request| {
            let mut record = vec!["REQUEST".to_owned()];
            record.extend(request.args());
            record
        }));
        for batch in records.chunks(BATCH) {
            let mut import = redis::cmd("SECKILL.IMPORT");
            import.arg(&tmp);
            if let Some(variant) = &part.variant {
                import.arg("VARIANT").arg(variant);
            }
            for record in batch {
                import.arg(record);
            }
            import.query::<i64>(&mut con).map_err(|err| {
                redis_error(&format!("SECKILL.IMPORT into {tmp}{}", part.name()), err)
            })?;
        }
    }
    let mut finish = redis::cmd("EVAL");
    finish.arg(FINISH);
    match &options.stream {
        Some(stream) => finish.arg(3).arg(&tmp).arg(item).arg(stream),
        None => finish.arg(2).arg(&tmp).arg(item),
    };
    finish
        .arg(if options.replace { "1" } else { "0" })
        .arg(options.maxlen.map(|m| m.to_string()).unwrap_or_default())
        .arg(parts.len());
    for part in &parts {
        let plan = &part.plan;
        finish
            .arg(part.variant.as_deref().unwrap_or(""))
            .arg(plan.sold())
            .arg(plan.refunded)
            .arg(plan.held_units + plan.lapsed)
            .arg(part.supply - plan.kept)
            .arg(plan.settled.len() + plan.held.len())
            .arg(plan.held.len());
        for request in &plan.held {
            finish.arg(&request.args()[..]);
        }
    }
    let reply: Vec<redis::Value> = finish
        .query(&mut con)
        .map_err(|err| redis_error(&format!("importing the holds into {tmp}"), err))?;
    let word = |value: Option<&redis::Value>| match value {
        Some(redis::Value::BulkString(bytes)) => String::from_utf8_lossy(bytes).into_owned(),
        Some(redis::Value::SimpleString(text)) => text.clone(),
        _ => String::new(),
    };
    let int = |value: Option<&redis::Value>| match value {
        Some(redis::Value::Int(n)) => *n,
        _ => -1,
    };
    match word(reply.first()).as_str() {
        "done" => Ok(Done {
            records: parts.iter().map(|part| part.plan.records()).sum(),
            stock: int(reply.get(1)),
            held: int(reply.get(2)),
        }),
        "exists" => {
            redis::cmd("DEL")
                .arg(&tmp)
                .query::<i64>(&mut con)
                .map_err(|err| redis_error(&format!("DEL {tmp}"), err))?;
            Err(refused(format!(
                "{item} was created while it was rebuilt: it is left as it is"
            )))
        }
        "mismatch" => {
            let variant = word(reply.get(1));
            let part = parts
                .iter()
                .find(|part| part.variant.as_deref().unwrap_or("") == variant)
                .ok_or_else(|| {
                    refused(format!("unexpected reply from the last step: {reply:?}"))
                })?;
            let plan = &part.plan;
            Err(refused(format!(
                "the rebuilt item does not add up{}, so {item} was not created (left as \
                 {tmp}): sold {} (the rows give {}), refunded {} ({}), held + expired {} \
                 ({}), stock + held {} ({}), requests {} ({})",
                part.name(),
                int(reply.get(2)),
                plan.sold(),
                int(reply.get(3)),
                plan.refunded,
                int(reply.get(4)),
                plan.held_units + plan.lapsed,
                int(reply.get(5)),
                part.supply - plan.kept,
                int(reply.get(6)),
                plan.settled.len() + plan.held.len()
            )))
        }
        _ => Err(refused(format!(
            "unexpected reply from the last step: {reply:?}"
        ))),
    }
}

pub fn main(args: Vec<String>) -> ExitCode {
    let result = parse(&args).and_then(|options| {
        let done = rebuild(&options)?;
        Ok((options, done))
    });
    match result {
        Ok((options, done)) => {
            println!(
                "rebuilt {}: {} records imported, {} units held, stock {}",
                options.item, done.records, done.held, done.stock
            );
            ExitCode::SUCCESS
        }
        Err(Failure::Usage(problem)) => {
            if !problem.is_empty() {
                log(&format!("rebuild: usage error: {problem}"));
            }
            eprintln!("{USAGE}");
            ExitCode::from(2)
        }
        Err(Failure::Refused(problem)) => {
            log(&format!("rebuild refused: {problem}"));
            ExitCode::from(1)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc16_is_xmodem() {
        assert_eq!(crc16(b"123456789"), 0x31C3);
    }

    #[test]
    fn slots_are_redis_clusters() {
        // CLUSTER KEYSLOT on a real cluster.
        assert_eq!(key_slot(b"foo"), 12182);
        assert_eq!(key_slot(b"123456789"), 12739);
        assert_eq!(key_slot(b"bar"), 5061);
        assert_eq!(key_slot(b"{user1000}.following"), key_slot(b"user1000"));
        assert_eq!(key_slot(b"foo{}{bar}"), crc16(b"foo{}{bar}") % 16384);
        assert_eq!(key_slot(b"foo{{bar}}zap"), key_slot(b"{bar"));
    }

    #[test]
    fn the_temporary_key_shares_the_items_slot() {
        assert_eq!(temporary_key("{sku:1}"), "{sku:1}:rebuild:{sku:1}");
        for item in ["sku:1", "foo", "", "a{}b", "x{", "123456789", "item:99999"] {
            let tmp = temporary_key(item);
            assert_eq!(
                key_slot(tmp.as_bytes()),
                key_slot(item.as_bytes()),
                "{item}"
            );
            assert_ne!(tmp, item);
        }
        // Short tags: a few characters.
        for slot in (0..16384).step_by(97) {
            let tag = tag_for_slot(slot);
            assert!(!tag.is_empty() && tag.len() <= 4, "{slot}: {tag}");
            assert_eq!(crc16(tag.as_bytes()) % 16384, slot);
        }
    }

    fn row(id: &str, user: &str, qty: i64, status: &str, stock: i64, until: Option<i64>) -> Row {
        Row {
            order_id: id.into(),
            user_id: user.into(),
            qty,
            status: status.into(),
            stock_after: stock,
            hold_until_ms: until,
            variant: None,
        }
    }

    fn of(variant: &str, mut row: Row) -> Row {
        row.variant = Some(variant.into());
        row
    }

    #[test]
    fn a_drop_s_rows_go_to_their_variants_and_nowhere_else() {
        let sizes = Supply::Variants(vec![("42".into(), 5), ("43".into(), 3)]);
        let rows = vec![
            of("43", row("a", "ann", 1, "purchased", 2, None)),
            of("42", row("b", "bob", 1, "held", 4, Some(9))),
            of("43", row("c", "cy", 1, "refunded", 1, None)),
        ];
        let parts = parts_of(rows, &sizes)
            .map_err(|f| format!("{f:?}"))
            .unwrap();
        let ids: Vec<(Option<String>, i64, Vec<String>)> = parts
            .into_iter()
            .map(|(variant, supply, rows)| {
                (
                    variant,
                    supply,
                    rows.into_iter().map(|row| row.order_id).collect(),
                )
            })
            .collect();
        assert_eq!(
            ids,
            [
                (Some("42".into()), 5, vec!["b".to_owned()]),
                (Some("43".into()), 3, vec!["a".to_owned(), "c".to_owned()]),
            ]
        );
        // A row of a size no --variant names, a row of no size on a drop,
        // and a row of a size on an item rebuilt without variants.
        for (rows, supply) in [
            (
                vec![of("44", row("a", "ann", 1, "purchased", 2, None))],
                &sizes,
            ),
            (vec![row("a", "ann", 1, "purchased", 2, None)], &sizes),
            (
                vec![of("42", row("a", "ann", 1, "purchased", 2, None))],
                &Supply::One(5),
            ),
        ] {
            assert!(matches!(parts_of(rows, supply), Err(Failure::Refused(_))));
        }
    }

    #[test]
    fn a_drop_is_named_variant_by_variant() {
        let args = |list: &[&str]| list.iter().map(|arg| arg.to_string()).collect::<Vec<_>>();
        let base = [
            "--item",
            "{d}",
            "--postgres-url",
            "postgres://u@127.0.0.1/db",
        ];
        let parsed = parse(&args(
            &[
                &base[..],
                &[
                    "--variant",
                    "a:b:42:5",
                    "--variant",
                    "43:0",
                    "--variant-limit",
                    "43:1",
                ],
            ]
            .concat(),
        ))
        .map_err(|f| format!("{f:?}"))
        .unwrap();
        assert_eq!(
            parsed.supply,
            Supply::Variants(vec![("a:b:42".into(), 5), ("43".into(), 0)])
        );
        assert_eq!(parsed.variant_limits, [("43".to_owned(), 1)]);
        for wrong in [
            &["--variant", "43"][..],
            &["--variant", ":5"],
            &["--variant", "43:-1"],
            &["--supply", "5", "--variant", "43:1"],
            &["--supply", "5", "--variant-limit", "43:1"],
            &[],
        ] {
            assert!(
                matches!(
                    parse(&args(&[&base[..], wrong].concat())),
                    Err(Failure::Usage(_))
                ),
                "{wrong:?}"
            );
        }
    }

    #[test]
    fn rows_become_records() {
        let rows = vec![
            row("a", "ann", 2, "purchased", 8, None),
            row("b", "bob", 1, "held", 7, None),
            row("c", "cy", 1, "confirmed", 6, None),
            row("d", "dee", 1, "expired", 5, Some(123)),
            row("e", "eve", 1, "refunded", 4, None),
            row("entry:1-0", "ann", 1, "purchased", 3, None),
            row("entry:2-0", "ann", 1, "purchased", 2, None),
        ];
        let plan = plan(rows, 10, &HashMap::new())
            .map_err(|f| format!("{f:?}"))
            .unwrap();
        assert_eq!(plan.buyers.get("ann"), Some(&2));
        assert_eq!(plan.held.len(), 1);
        assert_eq!(plan.held[0].deadline, 1);
        assert_eq!(plan.held_without_deadline, 1);
        let statuses: Vec<_> = plan
            .settled
            .iter()
            .map(|r| (r.status, r.deadline))
            .collect();
        assert_eq!(
            statuses,
            [
                ("purchased", 0),
                ("confirmed", 1),
                ("lapsed", 123),
                ("refunded", 0)
            ]
        );
        assert_eq!((plan.kept, plan.held_units), (5, 1));
        assert_eq!(plan.sold(), 8);
        // A confirmed order answers with its hold's reply when the stream
        // still has it.
        let replies = HashMap::from([("c".to_owned(), 9)]);
        let rows = vec![row("c", "cy", 1, "confirmed", 6, Some(5))];
        let plan = super::plan(rows, 10, &replies)
            .map_err(|f| format!("{f:?}"))
            .unwrap();
        assert_eq!((plan.settled[0].reply, plan.settled[0].deadline), (9, 5));
        assert_eq!(plan.confirmed_without_hold_entry, 0);
        assert!(matches!(
            super::plan(
                vec![row("a", "ann", 11, "purchased", 0, None)],
                10,
                &HashMap::new()
            ),
            Err(Failure::Refused(_))
        ));
        assert!(matches!(
            super::plan(
                vec![row("a", "ann", 1, "purchased", 11, None)],
                10,
                &HashMap::new()
            ),
            Err(Failure::Refused(_))
        ));
    }

    #[test]
    fn rows_the_module_could_not_have_written_are_refused() {
        let refusal = |rows: Vec<Row>| match plan(rows, 100, &HashMap::new()) {
            Err(Failure::Refused(reason)) => reason,
            other => panic!("not refused: {:?}", other.map(|plan| plan.sold())),
        };
        // A status the module does not know.
        let reason = refusal(vec![row("a", "ann", 1, "shipped", 9, None)]);
        assert!(reason.contains("unknown status \"shipped\""), "{reason}");
        // A purchase without a request id cannot have been held.
        let reason = refusal(vec![row("entry:1-0", "ann", 1, "held", 9, None)]);
        assert!(reason.contains("cannot be held"), "{reason}");
        // Units that do not fit in a 64-bit integer.
        let reason = refusal(vec![
            row("a", "ann", i64::MAX, "purchased", 0, None),
            row("b", "bob", i64::MAX, "purchased", 0, None),
        ]);
        assert!(reason.contains("overflow"), "{reason}");
    }
}
