//! `seckill-orders reconcile`: compares items in Redis with their rows in
//! `seckill_orders`, order by order, and says every difference.
//!
//! The item is read with `SECKILL.SCAN` a page at a time and `SECKILL.INFO`
//! (no long call, no lock held across calls), the table with one `SELECT`
//! per item. What the consumer has not committed yet is not drift: the
//! orders of the entries still pending in the group, of those after its
//! last-delivered ID, and of those written while the check ran, are left
//! out and counted; so are holds that lapsed a moment ago whose `expire`
//! entry the module has not written yet.

use crate::store::describe;
use crate::{postgres_config, redis_settings_from_env, NETWORK_TIMEOUT};
use postgres::NoTls;
use redis::{Connection, Value};
use seckill_client::endpoint::{Endpoint, Setting};
use serde_json::{json, Value as Json};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::process::ExitCode;

const USAGE: &str =
    "usage: seckill-orders reconcile (--item KEY | --stream KEY) [--item KEY | --stream KEY ...]
       [--redis-url URL | --sentinel HOST:PORT[,...] --master-name NAME]
       [--postgres-url URL] [--group NAME] [--lapse-grace-ms MS] [--json]

Compares each item with its rows in seckill_orders and lists every order
that differs: a row with no record in the item, a record with no row, a
different status, user or quantity; for purchases made without a request
id (rows keyed entry:<id>), each buyer's units. Then the units sold, held,
refunded and lapsed on both sides. --stream KEY checks every item whose
SECKILL.INFO names KEY as its order stream, among the items with rows in
the table and the items named by the stream's entries. Without --item or
--stream, SECKILL_STREAMS (comma-separated) gives the streams, as for the
consumer.

Orders the consumer group (--group, default seckill-orders) has not
committed yet are left out and counted: those of entries pending in the
group, of entries after its last-delivered ID, and of entries written
while the check runs. A hold that lapsed less than --lapse-grace-ms ago
(default 60000) and is still held in the table is left out too: its
expire entry is written when the module releases it.

Redis and PostgreSQL are found as the consumer finds them, from the same
flags or environment variables (SECKILL_REDIS_URL, SECKILL_SENTINELS,
SECKILL_MASTER_NAME, SECKILL_POSTGRES_URL, SECKILL_GROUP); passwords only
from the environment (SECKILL_REDIS_PASSWORD, SECKILL_SENTINEL_PASSWORD
and their _USERNAME). --json prints one JSON document instead of tables.
Exit status: 0 when every item agrees with the table, 1 when any differs,
2 for a usage error, 3 when Redis or PostgreSQL could not be read.";

/// Records asked for per `SECKILL.SCAN`, entries per `XRANGE` or
/// `XPENDING`.
const PAGE: usize = 1000;

struct Options {
    redis: Endpoint,
    postgres: postgres::Config,
    items: Vec<String>,
    streams: Vec<String>,
    group: String,
    json: bool,
    lapse_grace_ms: i64,
}

fn parse(args: &[String]) -> Result<Option<Options>, String> {
    let env = |name: &str| std::env::var(name).ok().filter(|value| !value.is_empty());
    let mut redis = redis_settings_from_env();
    let mut postgres_from = "SECKILL_POSTGRES_URL";
    let mut postgres_url = env("SECKILL_POSTGRES_URL").unwrap_or_default();
    let mut group = env("SECKILL_GROUP").unwrap_or_else(|| "seckill-orders".into());
    let mut items = Vec::new();
    let mut streams = Vec::new();
    let mut json = false;
    let mut lapse_grace_ms = 60_000;
    let mut args = args.iter();
    while let Some(flag) = args.next() {
        match flag.as_str() {
            "--help" | "-h" => return Ok(None),
            "--json" => {
                json = true;
                continue;
            }
            _ => {}
        }
        let value = args
            .next()
            .ok_or_else(|| format!("{flag} needs a value"))?
            .clone();
        match flag.as_str() {
            "--redis-url" | "--sentinel" | "--master-name" => {
                redis.set(flag, Setting::new(flag.as_str(), value));
            }
            "--postgres-url" => {
                postgres_from = "--postgres-url";
                postgres_url = value;
            }
            "--item" => items.push(value),
            "--stream" => streams.push(value),
            "--group" => group = value,
            "--lapse-grace-ms" => {
                lapse_grace_ms = value
                    .parse::<u32>()
                    .map_err(|_| format!("{flag}: not a number: {value:?}"))?
                    .into()
            }
            _ => return Err(format!("unknown flag {flag}")),
        }
    }
    if items.is_empty() && streams.is_empty() {
        streams = env("SECKILL_STREAMS")
            .map(|streams| streams.split(',').map(str::to_owned).collect())
            .unwrap_or_default();
    }
    items.retain(|item| !item.is_empty());
    streams.retain(|stream| !stream.is_empty());
    if items.is_empty() && streams.is_empty() {
        return Err("at least one --item or --stream is required".into());
    }
    if postgres_url.is_empty() {
        return Err("a PostgreSQL URL is required".into());
    }
    Ok(Some(Options {
        redis: Endpoint::from_settings(&redis, Some("redis://127.0.0.1:6379/"))?,
        postgres: postgres_config(&postgres_url, postgres_from)?,
        items,
        streams,
        group,
        json,
        lapse_grace_ms,
    }))
}

/// An order as one side has it; the status in the table's words.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Order {
    user: String,
    qty: i64,
    status: String,
    /// The variant the order is of, on an item with variants.
    variant: Option<String>,
}

impl Order {
    fn to_json(&self) -> Json {
        let mut order = json!({"user": self.user, "qty": self.qty, "status": self.status});
        if let (Some(variant), Some(fields)) = (&self.variant, order.as_object_mut()) {
            fields.insert("variant".into(), json!(variant));
        }
        order
    }

    fn shown(&self) -> String {
        match &self.variant {
            Some(variant) => format!("{} {} {} ({variant})", self.user, self.qty, self.status),
            None => format!("{} {} {}", self.user, self.qty, self.status),
        }
    }
}

/// A `SECKILL.SCAN` status in the table's words: a lapsed hold is an
/// `expired` row; the others have the same name on both sides.
fn table_status(scan_status: &str) -> String {
    match scan_status {
        "lapsed" => "expired".to_owned(),
        other => other.to_owned(),
    }
}

/// Units sold (every order, whatever became of it), held, refunded and
/// lapsed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Totals {
    sold: i64,
    held: i64,
    refunded: i64,
    lapsed: i64,
}

impl Totals {
    fn add(&mut self, order: &Order) {
        self.sold += order.qty;
        match order.status.as_str() {
            "held" => self.held += order.qty,
            "refunded" => self.refunded += order.qty,
            "expired" => self.lapsed += order.qty,
            _ => {}
        }
    }

    fn to_json(self) -> Json {
        json!({"sold": self.sold, "held": self.held, "refunded": self.refunded, "lapsed": self.lapsed})
    }
}

fn text(value: &Value) -> Option<String> {
    redis::from_redis_value(value.clone()).ok()
}

fn int(value: &Value) -> Option<i64> {
    redis::from_redis_value(value.clone()).ok()
}

fn query<T: redis::FromRedisValue>(con: &mut Connection, cmd: &redis::Cmd) -> Result<T, String> {
    cmd.query(con).map_err(|err| err.to_string())
}

/// Stream entries `[[id, [field, value, ...] | nil], ...]`, fields as text.
fn entries(value: &Value) -> Vec<(String, HashMap<String, String>)> {
    let Value::Array(items) = value else {
        return Vec::new();
    };
    items
        .iter()
        .filter_map(|item| {
            let Value::Array(parts) = item else {
                return None;
            };
            let id = text(parts.first()?)?;
            let mut fields = HashMap::new();
            if let Some(Value::Array(pairs)) = parts.get(1) {
                for pair in pairs.chunks(2) {
                    if let [field, value] = pair {
                        if let (Some(field), Some(value)) = (text(field), text(value)) {
                            fields.insert(field, value);
                        }
                    }
                }
            }
            Some((id, fields))
        })
        .collect()
}

/// Calls `each` for every entry of `stream` after `after`, a page at a
/// time; returns the last ID read (`after` if none).
fn read_after(
    con: &mut Connection,
    stream: &str,
    after: &str,
    mut each: impl FnMut(&str, &HashMap<String, String>),
) -> Result<String, String> {
    let mut after = after.to_owned();
    loop {
        let mut range = redis::cmd("XRANGE");
        range
            .arg(stream)
            .arg(format!("({after}"))
            .arg("+")
            .arg("COUNT")
            .arg(PAGE);
        let page = entries(&query::<Value>(con, &range)?);
        for (id, fields) in &page {
            each(id, fields);
        }
        match page.last() {
            Some((id, _)) if page.len() == PAGE => after = id.clone(),
            Some((id, _)) => return Ok(id.clone()),
            None => return Ok(after),
        }
    }
}

/// The item's records: request ids, and each buyer's units.
/// A buyer's units bought without a request id: by user, and by variant
/// on an item with variants.
type BuyerKey = (String, Option<String>);

#[derive(Default)]
struct Records {
    requests: HashMap<String, (Order, i64)>,
    buyers: HashMap<BuyerKey, i64>,
}

/// Every record of the item, or of each of its variants (`variants`, as
/// `SECKILL.VARIANTS` names them) on an item with variants.
fn scan_all(con: &mut Connection, item: &str, variants: &[String]) -> Result<Records, String> {
    if variants.is_empty() {
        return scan(con, item, None);
    }
    let mut records = Records::default();
    for variant in variants {
        let part = scan(con, item, Some(variant))?;
        records.requests.extend(part.requests);
        records.buyers.extend(part.buyers);
    }
    Ok(records)
}

/// The variants of an item with variants, by name.
fn variant_names(con: &mut Connection, item: &str) -> Result<Vec<String>, String> {
    let mut call = redis::cmd("SECKILL.VARIANTS");
    call.arg(item);
    let listed: Option<Vec<(String, i64)>> =
        query(con, &call).map_err(|err| format!("SECKILL.VARIANTS {item}: {err}"))?;
    Ok(listed
        .unwrap_or_default()
        .into_iter()
        .map(|(name, _)| name)
        .collect())
}

fn scan(con: &mut Connection, item: &str, variant: Option<&str>) -> Result<Records, String> {
    let mut restarts = 0;
    'scan: loop {
        let mut records = Records::default();
        let mut cursor = "0".to_owned();
        loop {
            let mut call = redis::cmd("SECKILL.SCAN");
            call.arg(item).arg(&cursor).arg("COUNT").arg(PAGE);
            if let Some(variant) = variant {
                call.arg("VARIANT").arg(variant);
            }
            let reply = match query::<Value>(con, &call) {
                Ok(reply) => reply,
                // A cursor is lost with a restart of the server: start over.
                Err(err) if err.contains("invalid cursor") && restarts < 3 => {
                    restarts += 1;
                    continue 'scan;
                }
                Err(err) => return Err(format!("SECKILL.SCAN {item}: {err}")),
            };
            let Value::Array(parts) = reply else {
                return Err(format!("SECKILL.SCAN {item}: unexpected reply {reply:?}"));
            };
            let next = parts.first().and_then(text).unwrap_or_else(|| "0".into());
            if let Some(Value::Array(list)) = parts.get(1) {
                for record in list {
                    let Value::Array(fields) = record else {
                        continue;
                    };
                    let kind = fields.first().and_then(text).unwrap_or_default();
                    match (kind.as_str(), fields.len()) {
                        ("buyer", 3) => {
                            let user = text(&fields[1]).unwrap_or_default();
                            let units = int(&fields[2]).unwrap_or(0);
                            records
                                .buyers
                                .insert((user, variant.map(str::to_owned)), units);
                        }
                        ("request", 6) => {
                            let id = text(&fields[1]).unwrap_or_default();
                            let order = Order {
                                user: text(&fields[2]).unwrap_or_default(),
                                qty: int(&fields[3]).unwrap_or(0),
                                status: table_status(&text(&fields[4]).unwrap_or_default()),
                                variant: variant.map(str::to_owned),
                            };
                            let deadline = int(&fields[5]).unwrap_or(0);
                            records.requests.insert(id, (order, deadline));
                        }
                        _ => {}
                    }
                }
            }
            if next == "0" {
                return Ok(records);
            }
            cursor = next;
        }
    }
}

/// An item's `SECKILL.INFO`: its integer fields, and its order stream.
type Info = (BTreeMap<String, i64>, Option<String>);

/// `SECKILL.INFO`; `None` if there is no such item.
fn info(con: &mut Connection, item: &str) -> Result<Option<Info>, String> {
    let mut call = redis::cmd("SECKILL.INFO");
    call.arg(item);
    let reply: Value = query(con, &call).map_err(|err| format!("SECKILL.INFO {item}: {err}"))?;
    let pairs: Vec<(Value, Value)> = match reply {
        Value::Nil => return Ok(None),
        Value::Array(items) => items
            .chunks(2)
            .filter_map(|pair| match pair {
                [field, value] => Some((field.clone(), value.clone())),
                _ => None,
            })
            .collect(),
        Value::Map(pairs) => pairs,
        other => return Err(format!("SECKILL.INFO {item}: unexpected reply {other:?}")),
    };
    let mut numbers = BTreeMap::new();
    let mut stream = None;
    for (field, value) in pairs {
        let Some(field) = text(&field) else { continue };
        if field == "stream" {
            stream = text(&value).filter(|stream| !stream.is_empty());
        } else if let Some(number) = int(&value) {
            numbers.insert(field, number);
        }
    }
    Ok(Some((numbers, stream)))
}

/// The orders left out of the comparison, and why.
#[derive(Default)]
struct LeftOut {
    orders: BTreeSet<String>,
    /// Buyers with a left-out entry: their units bought without an id are
    /// not compared.
    users: HashSet<String>,
    pending: usize,
    undelivered: usize,
    during_check: usize,
    lapses: usize,
}

impl LeftOut {
    /// Leaves out the order of an entry of `item`; false for another
    /// item's entry (items may share a stream).
    fn entry(&mut self, item: &str, id: &str, fields: &HashMap<String, String>) -> bool {
        if fields.get("item").map(String::as_str) != Some(item) {
            return false;
        }
        let order = match fields.get("request") {
            Some(request) if !request.is_empty() => request.clone(),
            _ => format!("entry:{id}"),
        };
        self.orders.insert(order);
        if let Some(user) = fields.get("user") {
            self.users.insert(user.clone());
        }
        true
    }
}

/// The last entry ID of `stream`, `0-0` when empty or missing.
fn last_entry(con: &mut Connection, stream: &str) -> Result<String, String> {
    let mut call = redis::cmd("XREVRANGE");
    call.arg(stream).arg("+").arg("-").arg("COUNT").arg(1);
    let page = entries(&query::<Value>(con, &call)?);
    Ok(page
        .first()
        .map_or_else(|| "0-0".to_owned(), |(id, _)| id.clone()))
}

/// Leaves out the orders of the entries the group has not committed:
/// pending ones (delivered, not acknowledged), and those after its
/// last-delivered ID (all of them if there is no group yet).
fn uncommitted(
    con: &mut Connection,
    item: &str,
    stream: &str,
    group: &str,
    left: &mut LeftOut,
) -> Result<(), String> {
    let mut groups = redis::cmd("XINFO");
    groups.arg("GROUPS").arg(stream);
    let groups: Vec<HashMap<String, Value>> = match query(con, &groups) {
        Ok(groups) => groups,
        // No stream (yet): nothing was written, nothing is pending.
        Err(err) if err.to_lowercase().contains("no such key") => return Ok(()),
        Err(err) => return Err(format!("XINFO GROUPS {stream}: {err}")),
    };
    let found = groups
        .iter()
        .find(|info| info.get("name").and_then(text).as_deref() == Some(group));
    let last_delivered = found
        .and_then(|info| info.get("last-delivered-id"))
        .and_then(text)
        .unwrap_or_else(|| "0-0".to_owned());
    read_after(con, stream, &last_delivered, |id, fields| {
        if left.entry(item, id, fields) {
            left.undelivered += 1;
        }
    })?;
    if found.is_none() {
        return Ok(());
    }
    let mut start = "-".to_owned();
    loop {
        let mut pending = redis::cmd("XPENDING");
        pending
            .arg(stream)
            .arg(group)
            .arg(&start)
            .arg("+")
            .arg(PAGE);
        let page: Vec<Value> =
            query(con, &pending).map_err(|err| format!("XPENDING {stream}: {err}"))?;
        let ids: Vec<String> = page
            .iter()
            .filter_map(|entry| match entry {
                Value::Array(parts) => parts.first().and_then(text),
                _ => None,
            })
            .collect();
        if !ids.is_empty() {
            let mut pipe = redis::pipe();
            for id in &ids {
                pipe.cmd("XRANGE").arg(stream).arg(id).arg(id);
            }
            let replies: Vec<Value> = pipe
                .query(con)
                .map_err(|err| format!("XRANGE {stream}: {err}"))?;
            for reply in &replies {
                // A pending entry deleted from the stream has nothing left
                // to write: nothing to leave out.
                for (id, fields) in entries(reply) {
                    if left.entry(item, &id, &fields) {
                        left.pending += 1;
                    }
                }
            }
        }
        match ids.last() {
            Some(last) if ids.len() == PAGE => start = format!("({last}"),
            _ => return Ok(()),
        }
    }
}

/// One item's comparison.
struct Report {
    item: String,
    stream: Option<String>,
    exists: bool,
    compared: usize,
    /// Buyers whose units bought without a request id were compared.
    buyers: usize,
    left: LeftOut,
    differences: Vec<Json>,
    table: Totals,
    module: Totals,
    info: BTreeMap<String, i64>,
}

fn reconcile_item(
    con: &mut Connection,
    pg: &mut postgres::Client,
    options: &Options,
    item: &str,
) -> Result<Report, String> {
    let described = info(con, item)?;
    let exists = described.is_some();
    let (info, stream) = described.unwrap_or_default();
    // Entries after this one are written during the check: their orders
    // may be seen by one side and not the other.
    let before = match &stream {
        Some(stream) => Some(last_entry(con, stream)?),
        None => None,
    };
    let records = if !exists {
        Records::default()
    } else if info.get("variants").is_some_and(|count| *count > 0) {
        let variants = variant_names(con, item)?;
        scan_all(con, item, &variants)?
    } else {
        scan_all(con, item, &[])?
    };
    let time: Vec<i64> = query(con, &redis::cmd("TIME"))?;
    let now_ms =
        time.first().copied().unwrap_or(0) * 1000 + time.get(1).copied().unwrap_or(0) / 1000;
    let mut left = LeftOut::default();
    if let Some(stream) = &stream {
        uncommitted(con, item, stream, &options.group, &mut left)?;
    }
    // Read after the group's state: an entry acknowledged by then was
    // committed before, so its row is there.
    let rows = pg
        .query(
            "SELECT order_id, user_id, qty, status, variant FROM seckill_orders WHERE item = $1",
            &[&item],
        )
        .map_err(|err| format!("reading seckill_orders: {}", describe(&err)))?;
    let rows: BTreeMap<String, Order> = rows
        .iter()
        .map(|row| {
            (
                row.get::<_, String>(0),
                Order {
                    user: row.get(1),
                    qty: row.get(2),
                    status: row.get(3),
                    variant: row.get(4),
                },
            )
        })
        .collect();
    if let (Some(stream), Some(before)) = (&stream, &before) {
        let already = left.orders.clone();
        read_after(con, stream, before, |id, fields| {
            if left.entry(item, id, fields) && !already.contains(&order_of(id, fields)) {
                left.during_check += 1;
            }
        })?;
    }

    let mut differences = Vec::new();
    let mut table = Totals::default();
    let mut module = Totals::default();
    let mut compared = 0;
    let mut ids: BTreeSet<&String> = records.requests.keys().collect();
    ids.extend(rows.keys().filter(|id| !id.starts_with("entry:")));
    for id in ids {
        if left.orders.contains(id) {
            continue;
        }
        let record = records.requests.get(id);
        let row = rows.get(id);
        if let (Some((record, deadline)), Some(row)) = (record, row) {
            // Lapsed a moment ago, not released yet: its expire entry is
            // still to come.
            if record.status == "expired"
                && row.status == "held"
                && *deadline > 0
                && now_ms - deadline <= options.lapse_grace_ms
            {
                left.orders.insert(id.clone());
                left.users.insert(record.user.clone());
                left.lapses += 1;
                continue;
            }
        }
        compared += 1;
        if let Some((record, _)) = record {
            module.add(record);
        }
        if let Some(row) = row {
            table.add(row);
        }
        match (record, row) {
            (Some((record, _)), Some(row)) => {
                let fields: Vec<&str> = [
                    ("status", record.status != row.status),
                    ("user", record.user != row.user),
                    ("qty", record.qty != row.qty),
                    ("variant", record.variant != row.variant),
                ]
                .into_iter()
                .filter_map(|(field, differs)| differs.then_some(field))
                .collect();
                if !fields.is_empty() {
                    differences.push(json!({
                        "order_id": id, "kind": "mismatch", "fields": fields,
                        "table": row.to_json(), "module": record.to_json(),
                    }));
                }
            }
            (None, Some(row)) => differences.push(json!({
                "order_id": id, "kind": "row_without_record", "fields": [],
                "table": row.to_json(), "module": null,
            })),
            (Some((record, _)), None) => differences.push(json!({
                "order_id": id, "kind": "record_without_row", "fields": [],
                "table": null, "module": record.to_json(),
            })),
            (None, None) => {}
        }
    }

    // Purchases without a request id: the module keeps only each buyer's
    // units, so they are compared per buyer: its units less its live
    // requests, against its entry:<id> rows.
    // On an item with variants, per buyer and variant.
    type Anonymous<'a> = BTreeMap<(&'a str, Option<&'a str>), i64>;
    let mut anonymous_module: Anonymous = BTreeMap::new();
    for ((user, variant), units) in &records.buyers {
        anonymous_module.insert((user, variant.as_deref()), *units);
    }
    for (order, _) in records.requests.values() {
        if matches!(order.status.as_str(), "purchased" | "held" | "confirmed") {
            *anonymous_module
                .entry((&order.user, order.variant.as_deref()))
                .or_default() -= order.qty;
        }
    }
    let mut anonymous_table: Anonymous = BTreeMap::new();
    for (id, row) in rows.iter().filter(|(id, _)| id.starts_with("entry:")) {
        if left.orders.contains(id) || left.users.contains(&row.user) {
            continue;
        }
        *anonymous_table
            .entry((&row.user, row.variant.as_deref()))
            .or_default() += row.qty;
        table.add(row);
        if row.status != "purchased" {
            let record = Order {
                status: "purchased".into(),
                ..row.clone()
            };
            differences.push(json!({
                "order_id": id, "kind": "mismatch", "fields": ["status"],
                "table": row.to_json(), "module": record.to_json(),
            }));
        }
    }
    let users: BTreeSet<(&str, Option<&str>)> = anonymous_module
        .keys()
        .chain(anonymous_table.keys())
        .copied()
        .filter(|(user, _)| !left.users.contains(*user))
        .collect();
    let buyers = users.len();
    for key in users {
        let in_module = anonymous_module.get(&key).copied().unwrap_or(0);
        let in_table = anonymous_table.get(&key).copied().unwrap_or(0);
        module.sold += in_module;
        if in_module != in_table {
            let (user, variant) = key;
            let mut difference = json!({
                "order_id": null, "kind": "anonymous_units", "user": user,
                "table": in_table, "module": in_module,
            });
            if let (Some(variant), Some(fields)) = (variant, difference.as_object_mut()) {
                fields.insert("variant".into(), json!(variant));
            }
            differences.push(difference);
        }
    }
    Ok(Report {
        item: item.to_owned(),
        stream,
        exists,
        compared,
        buyers,
        left,
        differences,
        table,
        module,
        info,
    })
}

fn order_of(id: &str, fields: &HashMap<String, String>) -> String {
    match fields.get("request") {
        Some(request) if !request.is_empty() => request.clone(),
        _ => format!("entry:{id}"),
    }
}

/// The items `--stream` means: those with rows in the table or entries in
/// the stream whose `SECKILL.INFO` names the stream, and those named by
/// the stream's entries that no longer exist.
fn items_of_stream(
    con: &mut Connection,
    pg: &mut postgres::Client,
    stream: &str,
) -> Result<Vec<String>, String> {
    let mut named = BTreeSet::new();
    read_after(con, stream, "0-0", |_, fields| {
        if let Some(item) = fields.get("item") {
            named.insert(item.clone());
        }
    })?;
    let mut candidates = named.clone();
    for row in pg
        .query("SELECT DISTINCT item FROM seckill_orders", &[])
        .map_err(|err| format!("reading seckill_orders: {}", describe(&err)))?
    {
        candidates.insert(row.get::<_, String>(0));
    }
    let mut items = Vec::new();
    for item in candidates {
        let keep = match info(con, &item)? {
            Some((_, Some(its))) => its == stream,
            Some((_, None)) => false,
            None => named.contains(&item),
        };
        if keep {
            items.push(item);
        }
    }
    Ok(items)
}

fn report_json(report: &Report, group: &str) -> Json {
    json!({
        "item": report.item,
        "stream": report.stream,
        "group": group,
        "exists": report.exists,
        "agree": report.differences.is_empty(),
        "compared": report.compared,
        "buyers_compared": report.buyers,
        "left_out": {
            "orders": report.left.orders.len(),
            "pending_entries": report.left.pending,
            "undelivered_entries": report.left.undelivered,
            "entries_during_check": report.left.during_check,
            "lapses_unreleased": report.left.lapses,
            "order_ids": report.left.orders.iter().collect::<Vec<_>>(),
        },
        "differences": report.differences,
        "totals": {
            "table": report.table.to_json(),
            "module": report.module.to_json(),
            "info": {
                "sold": report.info.get("sold"),
                "held": report.info.get("held"),
                "refunded": report.info.get("refunded"),
                "lapsed": report.info.get("expired"),
            },
        },
    })
}

/// Lines padded into columns.
fn columns(rows: &[Vec<String>]) -> String {
    let widths: Vec<usize> = (0..rows.iter().map(Vec::len).max().unwrap_or(0))
        .map(|column| {
            rows.iter()
                .filter_map(|row| row.get(column))
                .map(|cell| cell.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for row in rows {
        let mut line = String::from("  ");
        for (column, cell) in row.iter().enumerate() {
            line.push_str(cell);
            if column + 1 < row.len() {
                let pad = widths[column] + 2 - cell.chars().count();
                line.push_str(&" ".repeat(pad));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

fn report_text(report: &Report, group: &str) -> String {
    let mut out = format!(
        "item {} ({})\n",
        report.item,
        match (&report.stream, report.exists) {
            (Some(stream), _) => format!("stream {stream}, group {group}"),
            (None, true) => "no order stream".to_owned(),
            (None, false) => "no such item in Redis".to_owned(),
        }
    );
    let left = &report.left;
    out.push_str(&format!(
        "  compared: {} orders with a request id, and the units {} buyers bought without one\n  \
         left out: {} orders not committed by the consumer yet ({} pending entries, \
         {} undelivered, {} written during the check) or lapsed and not released yet ({})\n",
        report.compared,
        report.buyers,
        left.orders.len(),
        left.pending,
        left.undelivered,
        left.during_check,
        left.lapses
    ));
    if !report.differences.is_empty() {
        let mut rows = vec![vec![
            "order".to_owned(),
            "difference".to_owned(),
            "table".to_owned(),
            "module".to_owned(),
        ]];
        let order = |value: &Json| -> String {
            match value {
                Json::Null => "-".to_owned(),
                Json::Object(_) => Order {
                    user: value["user"].as_str().unwrap_or_default().to_owned(),
                    qty: value["qty"].as_i64().unwrap_or(0),
                    status: value["status"].as_str().unwrap_or_default().to_owned(),
                    variant: value["variant"].as_str().map(str::to_owned),
                }
                .shown(),
                other => other.to_string(),
            }
        };
        for difference in &report.differences {
            let kind = difference["kind"].as_str().unwrap_or_default();
            let (id, what) = match kind {
                "anonymous_units" => (
                    match difference["variant"].as_str() {
                        Some(variant) => format!(
                            "(no id) {} ({variant})",
                            difference["user"].as_str().unwrap_or_default()
                        ),
                        None => format!(
                            "(no id) {}",
                            difference["user"].as_str().unwrap_or_default()
                        ),
                    },
                    "units bought without id".to_owned(),
                ),
                "mismatch" => (
                    difference["order_id"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned(),
                    difference["fields"]
                        .as_array()
                        .map(|fields| {
                            fields
                                .iter()
                                .filter_map(Json::as_str)
                                .collect::<Vec<_>>()
                                .join(", ")
                        })
                        .unwrap_or_default(),
                ),
                other => (
                    difference["order_id"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned(),
                    other.replace('_', " "),
                ),
            };
            rows.push(vec![
                id,
                what,
                order(&difference["table"]),
                order(&difference["module"]),
            ]);
        }
        out.push_str(&columns(&rows));
    }
    let info = |field: &str| {
        report
            .info
            .get(field)
            .map_or_else(|| "-".to_owned(), i64::to_string)
    };
    let mut rows = vec![vec![
        "units".to_owned(),
        "table".to_owned(),
        "module".to_owned(),
        "item INFO".to_owned(),
    ]];
    for (name, table, module, field) in [
        ("sold", report.table.sold, report.module.sold, "sold"),
        ("held", report.table.held, report.module.held, "held"),
        (
            "refunded",
            report.table.refunded,
            report.module.refunded,
            "refunded",
        ),
        (
            "lapsed",
            report.table.lapsed,
            report.module.lapsed,
            "expired",
        ),
    ] {
        rows.push(vec![
            name.to_owned(),
            table.to_string(),
            module.to_string(),
            info(field),
        ]);
    }
    out.push_str(&columns(&rows));
    out.push_str(&match report.differences.len() {
        0 => "  agrees with the table\n".to_owned(),
        1 => "  1 difference\n".to_owned(),
        n => format!("  {n} differences\n"),
    });
    out
}

fn run(options: &Options) -> Result<Vec<Report>, String> {
    let client = options.redis.master()?;
    let mut con = client
        .get_connection_with_timeout(NETWORK_TIMEOUT)
        .map_err(|err| format!("cannot connect to Redis {}: {err}", options.redis.shown()))?;
    con.set_read_timeout(Some(NETWORK_TIMEOUT))
        .and_then(|()| con.set_write_timeout(Some(NETWORK_TIMEOUT)))
        .map_err(|err| format!("cannot set timeouts: {err}"))?;
    let mut pg = options
        .postgres
        .connect(NoTls)
        .map_err(|err| format!("cannot connect to PostgreSQL: {}", describe(&err)))?;
    let mut items = options.items.clone();
    for stream in &options.streams {
        for item in items_of_stream(&mut con, &mut pg, stream)? {
            if !items.contains(&item) {
                items.push(item);
            }
        }
    }
    items
        .iter()
        .map(|item| reconcile_item(&mut con, &mut pg, options, item))
        .collect()
}

pub fn main(args: Vec<String>) -> ExitCode {
    let options = match parse(&args) {
        Ok(Some(options)) => options,
        Ok(None) => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(problem) => {
            eprintln!("seckill-orders reconcile: usage error: {problem}");
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    let reports = match run(&options) {
        Ok(reports) => reports,
        Err(problem) => {
            eprintln!("seckill-orders reconcile: {problem}");
            return ExitCode::from(3);
        }
    };
    let agree = reports.iter().all(|report| report.differences.is_empty());
    if options.json {
        let document = json!({
            "agree": agree,
            "items": reports.iter().map(|report| report_json(report, &options.group)).collect::<Vec<_>>(),
        });
        println!("{document:#}");
    } else {
        for report in &reports {
            print!("{}", report_text(report, &options.group));
        }
        if reports.is_empty() {
            println!("no items to compare");
        }
        println!(
            "{}",
            if agree {
                "reconcile: Redis and the table agree"
            } else {
                "reconcile: Redis and the table differ"
            }
        );
    }
    if agree {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}
