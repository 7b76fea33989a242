//! Bytes from outside never take the server down, nor build an item whose
//! bookkeeping is off. A DUMP payload only carries a checksum its sender
//! computes, so these tests damage real payloads in many ways, seal them
//! with a valid CRC and RESTORE them; and they write the same damaged chunks
//! into AOF files as SECKILL.LOADCHUNK commands and start servers on them.
//! Whatever a server accepts must add up, keep working, and save into
//! something that loads again.

mod common;

use common::dump::Crc64;
use common::*;
use redis::{Connection, Value};
use std::collections::HashMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// xorshift64*: the same seed gives the same damage on every run, so a
/// failure reproduces.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    fn percent(&mut self, chance: u64) -> bool {
        self.next() % 100 < chance
    }

    fn bytes(&mut self, len: usize) -> Vec<u8> {
        (0..len).map(|_| self.next() as u8).collect()
    }

    /// A value a counter is likely to be checked against: bounds, its
    /// neighbours, or anything.
    fn interesting(&mut self, current: i64) -> i64 {
        match self.below(10) {
            0 => 0,
            1 => 1,
            2 => -1,
            3 => current.wrapping_add(1),
            4 => current.wrapping_sub(1),
            5 => current.wrapping_mul(2),
            6 => i64::MAX,
            7 => i64::MIN,
            8 => self.below(50) as i64,
            _ => self.next() as i64,
        }
    }
}

/// RDB value type of a module value with an end marker (`RDB_TYPE_MODULE_2`).
const MODULE_TYPE: u8 = 7;
/// What precedes each string a module saves (`RDB_MODULE_OPCODE_STRING`).
const OPCODE_STRING: u8 = 5;
/// The module value's end marker (`RDB_MODULE_OPCODE_EOF`).
const OPCODE_EOF: u8 = 0;

/// A DUMP payload of a sale item, taken apart: the module id (its low 10
/// bits are the encoding version), the item's chunks, the RDB version.
#[derive(Clone, Debug)]
struct Payload {
    module_id: u64,
    chunks: Vec<Vec<u8>>,
    rdb_version: [u8; 2],
}

/// Reads an RDB length: 6 bits, 14 bits, or a 32- or 64-bit big-endian
/// number after a marker byte. Strings are never compressed here: the
/// server runs with `rdbcompression no`.
fn read_len(bytes: &[u8], at: &mut usize) -> u64 {
    let first = bytes[*at];
    *at += 1;
    match first >> 6 {
        0 => u64::from(first & 0x3f),
        1 => {
            let low = bytes[*at];
            *at += 1;
            (u64::from(first & 0x3f) << 8) | u64::from(low)
        }
        _ if first == 0x80 => {
            let value = u32::from_be_bytes(bytes[*at..*at + 4].try_into().unwrap());
            *at += 4;
            u64::from(value)
        }
        _ if first == 0x81 => {
            let value = u64::from_be_bytes(bytes[*at..*at + 8].try_into().unwrap());
            *at += 8;
            value
        }
        _ => panic!("unexpected RDB length marker {first:#x}"),
    }
}

/// Writes an RDB length the way Redis does, in the fewest bytes.
fn write_len(out: &mut Vec<u8>, len: u64) {
    if len < 1 << 6 {
        out.push(len as u8);
    } else if len < 1 << 14 {
        out.extend_from_slice(&[0x40 | (len >> 8) as u8, len as u8]);
    } else if len <= u64::from(u32::MAX) {
        out.push(0x80);
        out.extend_from_slice(&(len as u32).to_be_bytes());
    } else {
        out.push(0x81);
        out.extend_from_slice(&len.to_be_bytes());
    }
}

impl Payload {
    fn parse(dump: &[u8]) -> Payload {
        let (value, trailer) = dump.split_at(dump.len() - 10);
        assert_eq!(value[0], MODULE_TYPE, "not a module value");
        let mut at = 1;
        let module_id = read_len(value, &mut at);
        let mut chunks = Vec::new();
        loop {
            match read_len(value, &mut at) {
                0 => break,
                5 => {
                    let len = read_len(value, &mut at) as usize;
                    chunks.push(value[at..at + len].to_vec());
                    at += len;
                }
                opcode => panic!("unexpected module opcode {opcode}"),
            }
        }
        assert_eq!(at, value.len(), "bytes after the module value");
        Payload {
            module_id,
            chunks,
            rdb_version: [trailer[0], trailer[1]],
        }
    }

    /// The RDB value bytes: type, module id, each chunk as a string, end
    /// marker.
    fn value(&self) -> Vec<u8> {
        let mut out = vec![MODULE_TYPE];
        write_len(&mut out, self.module_id);
        for chunk in &self.chunks {
            out.push(OPCODE_STRING);
            write_len(&mut out, chunk.len() as u64);
            out.extend_from_slice(chunk);
        }
        out.push(OPCODE_EOF);
        out
    }
}

/// A payload RESTORE accepts the checksum of: value bytes, RDB version,
/// CRC-64 of both.
fn seal(crc: &Crc64, mut value: Vec<u8>, rdb_version: [u8; 2]) -> Vec<u8> {
    value.extend_from_slice(&rdb_version);
    let checksum = crc.checksum(&value);
    value.extend_from_slice(&checksum.to_le_bytes());
    value
}

/// A number of a record: where it starts, its width in bytes, and whether
/// it is a varint (group chunks) rather than a fixed-width integer.
#[derive(Clone, Copy)]
struct Field {
    at: usize,
    width: usize,
    varint: bool,
}

/// The numbers (and state bytes, width 1) of the records of a buyers
/// ('B'), requests ('Q') or groups ('G') chunk, as the codec lays them out.
fn record_fields(chunk: &[u8]) -> Vec<Field> {
    let mut fields = Vec::new();
    let mut at = 5;
    let id = |at: &mut usize| -> Option<()> {
        let byte = *chunk.get(*at)?;
        *at += 1 + usize::from(byte);
        Some(())
    };
    let fixed = |fields: &mut Vec<Field>, at: usize, width: usize| {
        fields.push(Field {
            at,
            width,
            varint: false,
        })
    };
    // A varint's field, and its value.
    let varint = |fields: &mut Vec<Field>, at: &mut usize| -> Option<u64> {
        let start = *at;
        let mut value = 0u64;
        for shift in (0..70).step_by(7) {
            let byte = *chunk.get(*at)?;
            *at += 1;
            value |= u64::from(byte & 0x7f).checked_shl(shift).unwrap_or(0);
            if byte & 0x80 == 0 {
                fields.push(Field {
                    at: start,
                    width: *at - start,
                    varint: true,
                });
                return Some(value);
            }
        }
        None
    };
    while at < chunk.len() {
        let walked = match chunk[0] {
            b'B' => id(&mut at).map(|_| {
                fixed(&mut fields, at, 8);
                at += 8;
            }),
            b'Q' => id(&mut at).and_then(|_| id(&mut at)).map(|_| {
                // qty, reply, state, deadline
                for (offset, width) in [(0, 8), (8, 8), (16, 1), (17, 8)] {
                    fixed(&mut fields, at + offset, width);
                }
                at += 25;
            }),
            b'G' => (|| {
                id(&mut at)?;
                varint(&mut fields, &mut at)?; // units
                let requests = varint(&mut fields, &mut at)?;
                for _ in 0..requests.min(1024) {
                    id(&mut at)?;
                    varint(&mut fields, &mut at)?; // qty
                    varint(&mut fields, &mut at)?; // reply
                    fixed(&mut fields, at, 1); // state
                    at += 1;
                    varint(&mut fields, &mut at)?; // deadline
                }
                Some(())
            })(),
            _ => None,
        };
        if walked.is_none() {
            break;
        }
    }
    fields.retain(|field| field.at + field.width <= chunk.len());
    fields
}

fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8 & 0x7f) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

fn read_varint(bytes: &[u8]) -> u64 {
    bytes
        .iter()
        .enumerate()
        .map(|(n, byte)| {
            u64::from(byte & 0x7f)
                .checked_shl(7 * n as u32)
                .unwrap_or(0)
        })
        .fold(0, |value, bits| value | bits)
}

fn read_i64(bytes: &[u8], at: usize) -> i64 {
    i64::from_le_bytes(bytes[at..at + 8].try_into().unwrap())
}

fn write_i64(bytes: &mut [u8], at: usize, value: i64) {
    bytes[at..at + 8].copy_from_slice(&value.to_le_bytes());
}

/// The order stream SECKILL.INFO names for `key`, if any.
fn stream_of(con: &mut Connection, key: &str) -> Option<Vec<u8>> {
    let Value::Array(fields) = ok::<Value>(con, &["SECKILL.INFO", key]) else {
        return None;
    };
    let at = fields
        .chunks(2)
        .position(|pair| matches!(&pair[0], Value::BulkString(name) if name == b"stream"))?;
    match &fields[2 * at + 1] {
        Value::BulkString(name) => Some(name.clone()),
        _ => None,
    }
}

/// Where the header's order stream flag is: after the tag, the version, the
/// unlimited flag and nine counters.
const STREAM_AT: usize = 3 + 8 * 9;

/// Damages the chunks of an item in one of many ways, each aimed at a
/// check of the loader: counters, record counts, record fields, framing,
/// records from another item.
fn damage_chunks(rng: &mut Rng, chunks: &mut Vec<Vec<u8>>, others: &[Payload]) {
    let which = rng.below(chunks.len());
    match rng.below(15) {
        // A counter of the header (stock, limit, initial, added, sold,
        // refunded, window start and end, expired), at its version 4
        // offset.
        0..=2 if chunks[0].len() >= 75 => {
            let at = 3 + 8 * rng.below(9);
            let value = rng.interesting(read_i64(&chunks[0], at));
            write_i64(&mut chunks[0], at, value);
        }
        // The record counts the header announces.
        3 if chunks[0].len() >= 16 => {
            let at = chunks[0].len() - 16 + 8 * rng.below(2);
            let value = rng.interesting(read_i64(&chunks[0], at));
            write_i64(&mut chunks[0], at, value);
        }
        // One number of one record: units, qty, reply, state, deadline.
        4..=6 => {
            let chunk = &mut chunks[which];
            let fields = record_fields(chunk);
            if fields.is_empty() {
                return;
            }
            let Field { at, width, varint } = fields[rng.below(fields.len())];
            if varint {
                let old = read_varint(&chunk[at..at + width]) as i64;
                let mut encoded = Vec::new();
                put_varint(&mut encoded, rng.interesting(old) as u64);
                chunk.splice(at..at + width, encoded);
            } else if width == 1 {
                chunk[at] = rng.below(5) as u8;
            } else {
                let value = rng.interesting(read_i64(chunk, at));
                write_i64(chunk, at, value);
            }
        }
        // The record count of a record chunk.
        7 if chunks[which].len() >= 5 && which > 0 => {
            let count = u32::from_le_bytes(chunks[which][1..5].try_into().unwrap());
            let count = [
                0,
                1,
                1025,
                u32::MAX,
                count.wrapping_add(1),
                count.wrapping_sub(1),
            ][rng.below(6)];
            chunks[which][1..5].copy_from_slice(&count.to_le_bytes());
        }
        8 if !chunks[which].is_empty() => {
            let chunk = &mut chunks[which];
            let at = rng.below(chunk.len());
            chunk[at] ^= 1 << rng.below(8);
        }
        9 => {
            let len = rng.below(chunks[which].len());
            chunks[which].truncate(len);
        }
        10 => {
            let chunk = &mut chunks[which];
            let at = rng.below(chunk.len() + 1);
            let len = 1 + rng.below(9);
            let inserted = rng.bytes(len);
            chunk.splice(at..at, inserted);
        }
        11 => {
            let copy = chunks[which].clone();
            chunks.insert(rng.below(chunks.len() + 1), copy);
        }
        12 if chunks.len() > 1 => {
            let a = rng.below(chunks.len());
            let b = rng.below(chunks.len());
            if rng.percent(50) {
                chunks.swap(a, b);
            } else {
                chunks.remove(a);
            }
        }
        // The order stream's flag or name, as an attacker would change it
        // to make the item write another key: any name, any length, with
        // its length field right or wrong.
        13 if chunks[0].len() > STREAM_AT + 5 && chunks[0][STREAM_AT] != 0 => {
            let header = &mut chunks[0];
            let len = u32::from_le_bytes(header[STREAM_AT + 1..STREAM_AT + 5].try_into().unwrap());
            let name_at = STREAM_AT + 5;
            let old_end = (name_at + len as usize).min(header.len());
            match rng.below(4) {
                0 => header[STREAM_AT] = rng.below(4) as u8,
                1 => {
                    // Same length: the length field stays right.
                    for byte in &mut header[name_at..old_end] {
                        *byte = b'a' + rng.below(26) as u8;
                    }
                }
                _ => {
                    let suffix_len = rng.below(12);
                    let name = [&b"orders:"[..], &rng.bytes(suffix_len)].concat();
                    let told = if rng.percent(80) {
                        name.len() as u32
                    } else {
                        rng.interesting(i64::from(len)) as u32
                    };
                    header.splice(name_at..old_end, name);
                    header[STREAM_AT + 1..STREAM_AT + 5].copy_from_slice(&told.to_le_bytes());
                }
            }
        }
        // A chunk of another item, in place of one of this item's or
        // added to them.
        _ => {
            let other = &others[rng.below(others.len())];
            let spliced = other.chunks[rng.below(other.chunks.len())].clone();
            if rng.percent(50) {
                chunks[which] = spliced;
            } else {
                chunks.insert(rng.below(chunks.len() + 1), spliced);
            }
        }
    }
    chunks.retain(|chunk| !chunk.is_empty() || rng.percent(20));
    if chunks.is_empty() {
        chunks.push(Vec::new());
    }
}

/// A damaged payload of `shape`, sealed with a valid CRC.
fn damaged_payload(rng: &mut Rng, crc: &Crc64, shape: &Payload, shapes: &[Payload]) -> Vec<u8> {
    let mut payload = shape.clone();
    let mut raw_damage = false;
    for _ in 0..1 + rng.below(3) {
        match rng.below(20) {
            // The encoding version Redis hands to the loader.
            0 => {
                payload.module_id =
                    (payload.module_id & !1023) | [0, 1, 2, 3, 5, 1023][rng.below(6)]
            }
            // The format version inside the header, or its unlimited flag.
            1 if payload.chunks[0].len() > 2 => {
                payload.chunks[0][1 + rng.below(2)] = rng.below(6) as u8
            }
            2 => raw_damage = true,
            _ => damage_chunks(rng, &mut payload.chunks, shapes),
        }
    }
    let mut value = payload.value();
    if raw_damage {
        // The framing Redis reads before the module: lengths, opcodes,
        // the end marker.
        match rng.below(3) {
            0 => value.truncate(1 + rng.below(value.len() - 1)),
            1 => {
                let at = rng.below(value.len());
                value[at] ^= 1 << rng.below(8);
            }
            _ => {
                let at = rng.below(value.len() + 1);
                let len = 1 + rng.below(4);
                let inserted = rng.bytes(len);
                value.splice(at..at, inserted);
            }
        }
    }
    seal(crc, value, payload.rdb_version)
}

fn unix_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_millis() as i64)
}

/// Items of every shape the fuzzing starts from, by key: small, with holds
/// (pending, confirmed, lapsed), with refunds and a restock, unlimited,
/// with an order stream, and large enough for several chunks of each kind.
fn build_shapes(con: &mut Connection) -> Vec<&'static str> {
    ok::<i64>(con, &["SECKILL.INIT", "{k}small", "10", "LIMIT", "3"]);
    ok::<i64>(con, &["SECKILL.DEDUCT", "{k}small", "a", "1", "ID", "r1"]);
    ok::<i64>(con, &["SECKILL.DEDUCT", "{k}small", "b", "2"]);
    // An order stream, for payloads that rename it.
    ok::<i64>(con, &["SECKILL.STREAM", "{k}small", "{k}small:o"]);

    let soon = (unix_ms() + 300).to_string();
    ok::<i64>(con, &["SECKILL.INIT", "{k}holds", "20", "LIMIT", "5"]);
    for (user, id) in [("u1", "h1"), ("u2", "h2"), ("u3", "h3")] {
        let reply: i64 = ok(
            con,
            &[
                "SECKILL.DEDUCT",
                "{k}holds",
                user,
                "1",
                "ID",
                id,
                "HOLD",
                "100",
            ],
        );
        assert!(reply >= 0);
    }
    ok::<i64>(con, &["SECKILL.CONFIRM", "{k}holds", "h2"]);
    ok::<i64>(
        con,
        &[
            "SECKILL.DEDUCT",
            "{k}holds",
            "u4",
            "2",
            "ID",
            "h4",
            "HOLDUNTIL",
            &soon,
        ],
    );
    ok::<i64>(con, &["SECKILL.DEDUCT", "{k}holds", "u1", "1"]);

    ok::<i64>(con, &["SECKILL.INIT", "{k}refunds", "10"]);
    ok::<i64>(con, &["SECKILL.DEDUCT", "{k}refunds", "a", "2", "ID", "r1"]);
    ok::<i64>(con, &["SECKILL.DEDUCT", "{k}refunds", "b", "1", "ID", "r2"]);
    ok::<i64>(con, &["SECKILL.REFUND", "{k}refunds", "r1"]);
    ok::<i64>(con, &["SECKILL.ADD", "{k}refunds", "5"]);

    ok::<i64>(con, &["SECKILL.INIT", "{k}u", "UNLIMITED", "LIMIT", "4"]);
    ok::<i64>(con, &["SECKILL.DEDUCT", "{k}u", "a", "3", "ID", "u1"]);
    ok::<i64>(con, &["SECKILL.DEDUCT", "{k}u", "b", "1"]);

    ok::<i64>(con, &["SECKILL.INIT", "{k}x", "10", "STREAM", "{k}x:o"]);
    ok::<i64>(con, &["SECKILL.DEDUCT", "{k}x", "a", "1", "ID", "s1"]);
    ok::<i64>(
        con,
        &[
            "SECKILL.DEDUCT",
            "{k}x",
            "b",
            "1",
            "ID",
            "s2",
            "HOLD",
            "100",
        ],
    );

    fill_mixed(con, "{k}big", 2_500);

    // A part of a split item, with transfers both ways, open and settled.
    ok::<i64>(con, &["SECKILL.INIT", "{k}moves", "30", "LIMIT", "2"]);
    ok::<i64>(
        con,
        &["SECKILL.TAKE", "{k}moves", "5", "ID", "t1", "TO", "{k}p2"],
    );
    ok::<i64>(con, &["SECKILL.TAKE", "{k}moves", "3", "ID", "t2"]);
    ok::<i64>(con, &["SECKILL.SETTLE", "{k}moves", "t1"]);
    ok::<i64>(con, &["SECKILL.ADD", "{k}moves", "4", "ID", "t3"]);
    ok::<i64>(con, &["SECKILL.DEDUCT", "{k}moves", "a", "1", "ID", "r1"]);

    // An item with variants: purchases, a hold and a refund in each.
    ok::<i64>(
        con,
        &[
            "SECKILL.INIT",
            "{k}drop",
            "VARIANTS",
            "2",
            "s",
            "6",
            "m",
            "4",
            "LIMIT",
            "2",
            "STREAM",
            "{k}drop:o",
        ],
    );
    for (user, id, variant) in [("a", "d1", "s"), ("b", "d2", "m"), ("a", "d3", "m")] {
        ok::<i64>(
            con,
            &[
                "SECKILL.DEDUCT",
                "{k}drop",
                user,
                "1",
                "ID",
                id,
                "VARIANT",
                variant,
            ],
        );
    }
    ok::<i64>(
        con,
        &[
            "SECKILL.DEDUCT",
            "{k}drop",
            "c",
            "1",
            "ID",
            "d4",
            "VARIANT",
            "s",
            "HOLD",
            "600",
        ],
    );
    ok::<i64>(con, &["SECKILL.REFUND", "{k}drop", "d2"]);

    // h4 lapses; a write releases it, so the item holds an expired request.
    std::thread::sleep(Duration::from_millis(400));
    ok::<i64>(con, &["SECKILL.ADD", "{k}holds", "1"]);
    assert_eq!(info_field(con, "{k}holds", "expired"), 2);
    vec![
        "{k}small",
        "{k}holds",
        "{k}refunds",
        "{k}u",
        "{k}x",
        "{k}big",
        "{k}moves",
        "{k}drop",
    ]
}

/// The counters SECKILL.INFO reports add up.
fn assert_bookkeeping(con: &mut Connection, key: &str, context: &str) {
    let info: HashMap<String, i64> = info(con, key).into_iter().collect();
    let field = |name: &str| i128::from(info[name]);
    let net_sold = field("sold") - field("refunded") - field("expired");
    for name in [
        "stock",
        "sold",
        "refunded",
        "expired",
        "held",
        "initial",
        "added",
        "moved_out",
        "moved_in",
    ] {
        assert!(field(name) >= 0, "{context}: negative {name}: {info:?}");
    }
    assert!(
        net_sold >= 0,
        "{context}: more given back than sold: {info:?}"
    );
    if field("unlimited") == 0 {
        assert_eq!(
            field("stock") + net_sold + field("moved_out") - field("moved_in"),
            field("initial") + field("added"),
            "{context}: stock + sold - refunded - expired + moved_out - moved_in != initial + added: {info:?}"
        );
    }
    assert!(
        field("held") <= net_sold,
        "{context}: held beyond sold: {info:?}"
    );
    assert!(
        field("buyers") <= net_sold,
        "{context}: buyers beyond sold: {info:?}"
    );
    assert!(
        field("holds") <= field("held"),
        "{context}: empty holds: {info:?}"
    );
    assert!(field("holds") <= field("requests"), "{context}: {info:?}");
}

/// Runs a command that may fail, but only with an error reply: a dropped
/// connection means the server died.
fn survive(con: &mut Connection, args: &[&str], context: &str) -> Option<Value> {
    match run::<Value>(con, args) {
        Ok(value) => Some(value),
        Err(err) if err.code().is_some() => None,
        Err(err) => panic!("{context}: {args:?} did not get a reply: {err}"),
    }
}

/// Reads, writes and copies an item the server accepted, checking its
/// bookkeeping before and after: it must behave like any item, and save
/// into something that loads again.
fn exercise(con: &mut Connection, key: &str, round: usize, context: &str) {
    assert_bookkeeping(con, key, context);
    let id = format!("fuzz-{round}");
    let calls: [&[&str]; 11] = [
        &["SECKILL.GET", key],
        &["SECKILL.BOUGHT", key, "user:1"],
        &["SECKILL.HOLDS", key],
        &["SECKILL.DEDUCT", key, "fuzzer", "1", "ID", &id],
        &["SECKILL.DEDUCT", key, "user:2", "1", "ID", "order:2"],
        &["SECKILL.DEDUCT", key, "a", "1"],
        &["SECKILL.REFUND", key, &id],
        &["SECKILL.REFUND", key, "r1"],
        &["SECKILL.REFUND", key, "order:3"],
        &["SECKILL.CONFIRM", key, "h3"],
        &["SECKILL.RELEASE", key, "h1", "s2"],
    ];
    for call in calls {
        survive(con, call, context);
    }
    assert_bookkeeping(con, key, context);
    let dump: Vec<u8> = ok(con, &["DUMP", key]);
    let copied = redis::cmd("RESTORE")
        .arg("{k}copy")
        .arg(0)
        .arg(&dump)
        .arg("REPLACE")
        .query::<String>(con);
    assert_eq!(
        copied.as_deref(),
        Ok("OK"),
        "{context}: an accepted item must save into something that loads"
    );
    ok::<i64>(con, &["DEL", "{k}copy"]);
}

#[test]
fn the_crc_is_redis_crc64() {
    // The check value in Redis's crc64.c.
    assert_eq!(Crc64::new().checksum(b"123456789"), 0xe9c6_d914_c4b8_d9ca);
}

#[test]
fn damaged_dump_payloads_are_refused_or_restore_a_consistent_item() {
    let server = Server::start_with(&["--rdbcompression", "no"]);
    let mut con = server.client();
    let crc = Crc64::new();
    let keys = build_shapes(&mut con);
    let shapes: Vec<Payload> = keys
        .iter()
        .map(|key| {
            let dump: Vec<u8> = ok(&mut con, &["DUMP", key]);
            let payload = Payload::parse(&dump);
            // The CRC and the framing are understood: rebuilding the
            // payload gives the very bytes Redis wrote.
            assert_eq!(
                seal(&crc, payload.value(), payload.rdb_version),
                dump,
                "{key}"
            );
            payload
        })
        .collect();
    assert!(shapes[5].chunks.len() >= 5, "the big item spans chunks");

    let mut rng = Rng(0x5eed_f00d);
    let (mut accepted, mut refused, mut kept) = (0, 0, 0);
    let mut restored_streams = 0;
    for round in 0..3_000 {
        // The big item is slower to restore: damage it less often.
        let shape = if rng.percent(10) {
            &shapes[5]
        } else {
            &shapes[rng.below(5)]
        };
        let payload = damaged_payload(&mut rng, &crc, shape, &shapes);
        let context = format!("round {round}");
        let restored = redis::cmd("RESTORE")
            .arg("{k}fuzz")
            .arg(0)
            .arg(&payload)
            .arg("REPLACE")
            .query::<String>(&mut con);
        match restored {
            Ok(_) => {
                accepted += 1;
                // Whatever stream a payload names, RESTORE vouches for none.
                let confirmed = common::info_field(&mut con, "{k}fuzz", "stream_confirmed");
                assert_eq!(
                    confirmed, 0,
                    "{context}: a restored stream came back confirmed"
                );
                if stream_of(&mut con, "{k}fuzz").is_some() {
                    restored_streams += 1;
                }
                exercise(&mut con, "{k}fuzz", round, &context);
                // Some are kept for the reload at the end.
                if kept < 40 {
                    let name = format!("{{k}}kept:{kept}");
                    ok::<String>(&mut con, &["RENAME", "{k}fuzz", &name]);
                    kept += 1;
                } else {
                    ok::<i64>(&mut con, &["DEL", "{k}fuzz"]);
                }
            }
            Err(err) if err.code().is_some() => refused += 1,
            Err(err) => panic!("{context}: RESTORE got no reply: {err}"),
        }
        assert_eq!(ok::<String>(&mut con, &["PING"]), "PONG", "{context}");
    }
    assert!(
        accepted > 20 && refused > 1_000,
        "{accepted} accepted, {refused} refused"
    );
    assert!(
        restored_streams > 0,
        "no payload with a stream was accepted"
    );
    assert!(
        server.log().contains("seckill: cannot load sale item"),
        "damage reached the module's loader"
    );
    // Let the sweep release whatever holds lapsed, then save and load all.
    std::thread::sleep(Duration::from_millis(250));
    ok::<String>(&mut con, &["DEBUG", "RELOAD"]);
    for n in 0..kept {
        assert_bookkeeping(&mut con, &format!("{{k}}kept:{n}"), "after reload");
    }
    eprintln!("{accepted} payloads accepted, {refused} refused");
}

/// An AOF file of SECKILL.LOADCHUNK commands, as a rewrite without an RDB
/// preamble writes them.
fn aof_of(items: &[(String, Vec<Vec<u8>>)]) -> Vec<u8> {
    let mut aof = Vec::new();
    for (key, chunks) in items {
        for chunk in chunks {
            let args: [&[u8]; 3] = [b"SECKILL.LOADCHUNK", key.as_bytes(), chunk];
            aof.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
            for arg in args {
                aof.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
                aof.extend_from_slice(arg);
                aof.extend_from_slice(b"\r\n");
            }
        }
    }
    aof
}

#[test]
fn crafted_aof_files_are_refused_or_load_consistent_items() {
    let shapes: Vec<Payload> = {
        let server = Server::start_with(&["--rdbcompression", "no"]);
        let mut con = server.client();
        build_shapes(&mut con)
            .iter()
            .map(|key| Payload::parse(&ok::<Vec<u8>>(&mut con, &["DUMP", key])))
            .collect()
    };
    let mut rng = Rng(0x0a0f_f11e);
    let (mut started, mut refused) = (0, 0);
    for round in 0..50 {
        let items: Vec<(String, Vec<Vec<u8>>)> = (0..1 + rng.below(2))
            .map(|n| {
                let shape = &shapes[rng.below(shapes.len())];
                let mut chunks = shape.chunks.clone();
                for _ in 0..1 + rng.below(3) {
                    damage_chunks(&mut rng, &mut chunks, &shapes);
                }
                (format!("{{k}}item:{n}"), chunks)
            })
            .collect();
        let mut aof = aof_of(&items);
        if rng.percent(10) {
            // Cut short, as a crash while appending leaves it.
            aof.truncate(rng.below(aof.len()));
        }
        let context = format!("round {round}");
        let files: [(&str, &[u8]); 1] = [("appendonly.aof", &aof)];
        match Server::try_start_with_files(&files, &["--appendonly", "yes"]) {
            Ok(server) => {
                started += 1;
                let mut con = server.client();
                for (key, _) in &items {
                    if ok::<String>(&mut con, &["TYPE", key]) == "seckill--" {
                        exercise(&mut con, key, round, &format!("{context} {key}"));
                    }
                }
                assert_eq!(ok::<String>(&mut con, &["PING"]), "PONG", "{context}");
            }
            Err(failure) => {
                assert!(
                    !failure.crashed() && failure.status.code() == Some(1),
                    "{context}: did not refuse cleanly ({})\n{}",
                    failure.status,
                    failure.log
                );
                refused += 1;
            }
        }
    }
    eprintln!("{started} AOF files loaded, {refused} refused");
}

/// An AOF that stops short of an item's records, and then renames, moves,
/// copies or swaps it: the records that came are checked when loading
/// ends wherever the item went, and an item they do not add up for is
/// dropped rather than left to break the next RDB load.
#[test]
fn an_item_cut_short_in_the_aof_is_checked_wherever_it_was_moved() {
    // Buyers and requests chunks as versions before 5 wrote them, which an
    // AOF may still hold.
    let buyers = {
        let mut chunk = vec![b'B'];
        chunk.extend_from_slice(&2u32.to_le_bytes());
        for user in ["alice", "bob"] {
            chunk.push(user.len() as u8);
            chunk.extend_from_slice(user.as_bytes());
            chunk.extend_from_slice(&2i64.to_le_bytes());
        }
        chunk
    };
    // Requests r1 and r2 of 2 units each, both alice's: 4 units against
    // her 2.
    let requests = {
        let mut chunk = vec![b'Q'];
        chunk.extend_from_slice(&2u32.to_le_bytes());
        for (id, reply) in [("r1", 8i64), ("r2", 6)] {
            chunk.push(id.len() as u8);
            chunk.extend_from_slice(id.as_bytes());
            chunk.push(5);
            chunk.extend_from_slice(b"alice");
            chunk.extend_from_slice(&2i64.to_le_bytes());
            chunk.extend_from_slice(&reply.to_le_bytes());
            chunk.push(0); // purchased
            chunk.extend_from_slice(&0i64.to_le_bytes());
        }
        chunk
    };
    let header = {
        let server = Server::start_with(&["--rdbcompression", "no"]);
        let mut con = server.client();
        // Alice and Bob hold 2 each.
        ok::<i64>(&mut con, &["SECKILL.INIT", "a", "10"]);
        ok::<i64>(&mut con, &["SECKILL.DEDUCT", "a", "alice", "2", "ID", "r1"]);
        ok::<i64>(&mut con, &["SECKILL.DEDUCT", "a", "bob", "2", "ID", "rb"]);
        let a = Payload::parse(&ok::<Vec<u8>>(&mut con, &["DUMP", "a"]));
        // Item a's header, announcing a third request that never comes.
        let mut header = a.chunks[0].clone();
        let at = header.len() - 8;
        header[at..].copy_from_slice(&3u64.to_le_bytes());
        header
    };
    let moves: [&[&str]; 4] = [
        &["RENAME", "k", "k2"],
        &["MOVE", "k", "1"],
        &["COPY", "k", "k2"],
        &["SWAPDB", "0", "1"],
    ];
    for then in moves {
        let mut aof = aof_of(&[(
            "k".to_owned(),
            vec![header.clone(), buyers.clone(), requests.clone()],
        )]);
        aof.extend_from_slice(format!("*{}\r\n", then.len()).as_bytes());
        for arg in then {
            aof.extend_from_slice(format!("${}\r\n{arg}\r\n", arg.len()).as_bytes());
        }
        let files: [(&str, &[u8]); 1] = [("appendonly.aof", &aof)];
        let server = Server::try_start_with_files(&files, &["--appendonly", "yes"])
            .unwrap_or_else(|failure| panic!("after {then:?}: {}", failure.log));
        let mut con = server.client();
        for db in ["0", "1"] {
            ok::<String>(&mut con, &["SELECT", db]);
            let keys: Vec<String> = ok(&mut con, &["KEYS", "*"]);
            assert!(keys.is_empty(), "after {then:?}, db {db} kept {keys:?}");
        }
        assert!(
            server.log().contains("dropped the sale item"),
            "after {then:?}: {}",
            server.log()
        );
        assert_eq!(ok::<String>(&mut con, &["DEBUG", "RELOAD"]), "OK");
    }
}
