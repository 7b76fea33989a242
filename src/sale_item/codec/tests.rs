use super::encode::put_id;
use super::reader::Reader;
use super::*;
use crate::sale_item::ledger::put_varint;
use crate::sale_item::{Moment, RequestState};
use crate::sale_item::{SaleItem, Stock, StreamSetting, Window, UNLIMITED_STOCK};
use proptest::prelude::*;
use std::collections::HashMap;

/// Every chunk of `item`, header first.
fn chunks_of(item: &SaleItem) -> Vec<Vec<u8>> {
    let mut chunks = Vec::new();
    item.encode_chunks(|chunk| chunks.push(chunk.to_vec()));
    chunks
}

/// Loads chunks as `rdb_load` does: the header, then records until the
/// header's counts are met, then the full check. Chunks left over are
/// refused too, as Redis refuses a module value without its end marker.
///
/// The tally the load gathers and a walk over the loaded item must
/// agree on whether it holds: the loader checks with the first, every
/// other path with the second.
fn load(chunks: &[Vec<u8>]) -> Result<SaleItem, DecodeError> {
    let (header, records) = chunks.split_first().ok_or(DecodeError("no chunks"))?;
    let mut load = WholeLoad::begin(header)?;
    let mut records = records.iter();
    while !load.is_complete() {
        load.add_chunk(records.next().ok_or(DecodeError("short read"))?)?;
    }
    if records.next().is_some() {
        return Err(DecodeError("chunks after the item"));
    }
    let (item, expected, tally) = load.finish_unchecked()?;
    let walked = item.check_loaded(expected);
    let tallied = item.check_loaded_tally(expected, tally);
    assert_eq!(
        walked.is_ok(),
        tallied.is_ok(),
        "walk {walked:?}, tally {tallied:?}"
    );
    walked?;
    Ok(item)
}

/// The bookkeeping every accepted item keeps, checked through the public
/// view of the item only, independently of `check_bookkeeping`.
fn assert_consistent(item: &SaleItem) {
    let stats = item.stats();
    let (sold, refunded, expired) = (
        i128::from(stats.sold),
        i128::from(stats.refunded),
        i128::from(stats.expired),
    );
    let net_sold = sold - refunded - expired;
    assert!(net_sold >= 0, "more given back than sold: {stats:?}");
    if stats.unlimited {
        assert_eq!((stats.initial, stats.added), (0, 0));
    } else {
        assert!(stats.stock >= 0);
        assert_eq!(
            i128::from(stats.stock) + net_sold + i128::from(stats.moved_out)
                - i128::from(stats.moved_in),
            i128::from(stats.initial) + i128::from(stats.added),
            "stock + sold - refunded - expired is what was supplied: {stats:?}"
        );
        assert!(stats.initial.checked_add(stats.added).is_some());
    }
    let units: i128 = item.buyers().map(|(_, units)| i128::from(units)).sum();
    assert!(units <= net_sold, "buyers hold more than was sold");
    assert!(item.buyers().all(|(_, units)| units > 0));
    if stats.limit > 0 {
        // A buyer's record keeps its lapsed holds until they are released:
        // its units beyond those in holds are within the limit.
        let mut in_holds: HashMap<&[u8], i64> = HashMap::new();
        for (_, request) in item.requests() {
            if request.state == RequestState::Held {
                *in_holds.entry(request.user).or_default() += request.qty;
            }
        }
        assert!(item.buyers().all(|(user, units)| {
            units - in_holds.get(user).copied().unwrap_or(0) <= stats.limit
        }));
    }
    let mut live: HashMap<&[u8], i128> = HashMap::new();
    let (mut refunds, mut lapses, mut held, mut holds) = (0i128, 0i128, 0i128, 0usize);
    for (_, request) in item.requests() {
        assert!(request.qty > 0);
        match request.state {
            RequestState::Refunded => refunds += i128::from(request.qty),
            RequestState::Expired => lapses += i128::from(request.qty),
            RequestState::Purchased | RequestState::Held => {
                *live.entry(request.user).or_default() += i128::from(request.qty);
            }
        }
        if request.state == RequestState::Held {
            assert!(request.deadline > 0);
            held += i128::from(request.qty);
            holds += 1;
        }
    }
    assert!(refunds <= refunded && lapses <= expired);
    assert_eq!((held, holds), (i128::from(stats.held), stats.holds));
    assert!(held <= net_sold);
    for (user, units) in live {
        assert!(
            units <= i128::from(item.bought(user)),
            "requests beyond units"
        );
    }
}

/// What a sale keeps exactly, beyond the bounds the loader checks.
fn assert_exact(item: &SaleItem) {
    let stats = item.stats();
    let units: i128 = item.buyers().map(|(_, units)| i128::from(units)).sum();
    let sum_of = |state| -> i128 {
        item.requests()
            .filter(|(_, request)| request.state == state)
            .map(|(_, request)| i128::from(request.qty))
            .sum()
    };
    assert_eq!(
        units,
        i128::from(stats.sold) - i128::from(stats.refunded) - i128::from(stats.expired)
    );
    assert_eq!(sum_of(RequestState::Refunded), i128::from(stats.refunded));
    assert_eq!(sum_of(RequestState::Expired), i128::from(stats.expired));
}

#[derive(Clone, Debug)]
enum Op {
    Add(i64),
    Deduct {
        user: u8,
        qty: i64,
        request: Option<u8>,
        /// Hold for this many ms from the current time.
        hold: Option<i64>,
        /// Applied as a replica or an AOF replay would: window not judged.
        decided: bool,
    },
    Refund(u8),
    Confirm(u8),
    /// Time passes, then due holds are released, as the sweep does.
    Wait(i64),
    /// Holds released by name, as a replica applies its master's.
    Release(Vec<u8>),
    Window(i64, i64),
    /// A transfer given out, received, or settled (ids 0..8).
    Take(u8, i64),
    Receive(u8, i64),
    Settle(u8),
}

fn quantity() -> impl Strategy<Value = i64> {
    prop_oneof![8 => 1i64..4, 1 => Just(i64::MAX / 2), 1 => Just(i64::MAX)]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        1 => quantity().prop_map(Op::Add),
        6 => (0u8..6, quantity(), proptest::option::of(0u8..16),
              proptest::option::of(1i64..50), any::<bool>())
            .prop_map(|(user, qty, request, hold, decided)| Op::Deduct {
                user, qty, request, hold, decided,
            }),
        2 => (0u8..16).prop_map(Op::Refund),
        2 => (0u8..16).prop_map(Op::Confirm),
        2 => (0i64..40).prop_map(Op::Wait),
        1 => proptest::collection::vec(0u8..16, 1..4).prop_map(Op::Release),
        1 => (0i64..3_000, 0i64..3_000).prop_map(|(start, end)| Op::Window(start, end)),
        1 => (0u8..8, quantity()).prop_map(|(id, qty)| Op::Take(id, qty)),
        1 => (0u8..8, quantity()).prop_map(|(id, qty)| Op::Receive(id, qty)),
        1 => (0u8..8).prop_map(Op::Settle),
    ]
}

fn user(n: u8) -> Vec<u8> {
    format!("user{n}").into_bytes()
}

fn request(n: u8) -> Vec<u8> {
    format!("req{n}").into_bytes()
}

/// Applies `op` at `now` as the command layer would, ignoring refusals:
/// they change nothing.
fn apply(item: &mut SaleItem, op: &Op, now: &mut i64) {
    match op {
        Op::Add(qty) => {
            let _ = item.add(*qty);
        }
        Op::Deduct {
            user: n,
            qty,
            request: id,
            hold,
            decided,
        } => {
            let id = id.map(request);
            let hold = hold.filter(|_| id.is_some()).map(|ms| *now + ms);
            let moment = if *decided {
                Moment::Untimed
            } else {
                Moment::Now(*now)
            };
            let _ = item.deduct(&user(*n), *qty, id.as_deref(), moment, hold);
        }
        Op::Refund(n) => {
            let _ = item.refund(&request(*n));
        }
        Op::Confirm(n) => {
            item.confirm(&request(*n));
        }
        Op::Wait(ms) => {
            *now += ms;
            item.release_due(*now, usize::MAX);
        }
        Op::Release(ids) => {
            let ids: Vec<Vec<u8>> = ids.iter().map(|n| request(*n)).collect();
            let ids: Vec<&[u8]> = ids.iter().map(Vec::as_slice).collect();
            item.release(&ids);
        }
        Op::Window(start, end) => {
            if let Ok(window) = Window::new(*start, *end) {
                item.set_window(window);
            }
        }
        Op::Take(id, qty) => {
            let id = format!("move{id}");
            let _ = item.take(crate::sale_item::Take {
                transfer_id: id.as_bytes(),
                requested: *qty,
                destination: Some(b"part:2".as_slice()),
                decided: None,
            });
        }
        Op::Receive(id, qty) => {
            let _ = item.receive(format!("move{id}").as_bytes(), *qty);
        }
        Op::Settle(id) => {
            item.settle(format!("move{id}").as_bytes());
        }
    }
}

fn new_item(stock: Option<i64>, limit: i64, stream: bool) -> SaleItem {
    let mut item = SaleItem::new(stock.map_or(Stock::Unlimited, Stock::Limited), limit);
    if stream {
        item.set_order_stream(Some(StreamSetting {
            stream: b"{sku}:orders".as_slice().into(),
            maxlen: 100,
            confirmed: true,
        }));
    }
    item
}

fn stock() -> impl Strategy<Value = Option<i64>> {
    prop_oneof![
        4 => (0i64..30).prop_map(Some),
        1 => Just(Some(i64::MAX - 2)),
        2 => Just(None),
    ]
}

/// Every prefix of `chunks` (the header and the first record chunks)
/// loads into an item that passes the bookkeeping check: what an AOF
/// cut short rebuilds still saves into something that loads.
fn assert_every_prefix_loads(chunks: &[Vec<u8>]) {
    for end in 1..=chunks.len() {
        let (mut item, _) = SaleItem::decode_header(&chunks[0]).unwrap();
        for chunk in &chunks[1..end] {
            item.load_chunk(chunk).unwrap();
        }
        assert_eq!(item.check_bookkeeping(), Ok(()), "prefix of {end} chunks");
        assert_consistent(&item);
        assert_eq!(load(&chunks_of(&item)), Ok(item));
    }
}

proptest! {
    #[test]
    fn every_item_built_by_sales_round_trips_and_passes_the_checks(
        stock in stock(),
        limit in prop_oneof![Just(0i64), 1i64..4],
        stream in any::<bool>(),
        ops in proptest::collection::vec(op(), 0..120),
    ) {
        let mut item = new_item(stock, limit, stream);
        let mut now = 1_000i64;
        for op in &ops {
            apply(&mut item, op, &mut now);
            prop_assert_eq!(item.check_bookkeeping(), Ok(()));
            assert_consistent(&item);
            assert_exact(&item);
        }
        let chunks = chunks_of(&item);
        prop_assert_eq!(load(&chunks), Ok(item.clone()));
        // The running figures of lapsed holds are rebuilt as they were,
        // whatever the order the records load in.
        let loaded = load(&chunks).unwrap();
        for at in [now - 1, now, now + 50, now + 1_000, i64::MAX] {
            prop_assert_eq!(loaded.stats_at(at), item.stats_at(at));
            for n in 0..8 {
                prop_assert_eq!(loaded.bought_at(&user(n), at), item.bought_at(&user(n), at));
            }
        }
        assert_every_prefix_loads(&chunks);
    }

    #[test]
    fn a_damaged_encoding_is_refused_or_loads_a_consistent_item(
        stock in stock(),
        limit in prop_oneof![Just(0i64), 1i64..4],
        ops in proptest::collection::vec(op(), 0..60),
        damage in proptest::collection::vec(damage(), 1..4),
        after in proptest::collection::vec(op(), 0..30),
    ) {
        let mut item = new_item(stock, limit, false);
        let mut now = 1_000i64;
        for op in &ops {
            apply(&mut item, op, &mut now);
        }
        let mut chunks = chunks_of(&item);
        for damage in &damage {
            damage.apply(&mut chunks);
        }
        if let Ok(mut loaded) = load(&chunks) {
            assert_consistent(&loaded);
            // Whatever happens to an accepted item next, it still saves
            // into something that loads: a server that took it can
            // restart.
            for op in &after {
                apply(&mut loaded, op, &mut now);
                assert_consistent(&loaded);
            }
            prop_assert_eq!(load(&chunks_of(&loaded)), Ok(loaded));
        }
    }
}

/// One way to damage an encoded item.
#[derive(Clone, Debug)]
enum Damage {
    /// Sets the i64 at `field` (0 stock .. 8 expired) of the header.
    HeaderField {
        field: usize,
        value: i64,
    },
    /// Sets one of the header's record counts (0 buyers, 1 requests).
    HeaderCount {
        which: usize,
        value: u64,
    },
    /// XORs one byte of one chunk.
    Flip {
        chunk: usize,
        at: usize,
        mask: u8,
    },
    /// Writes an i64 at some byte of one chunk.
    Overwrite {
        chunk: usize,
        at: usize,
        value: i64,
    },
    Duplicate(usize),
    Drop(usize),
    Swap(usize, usize),
}

fn interesting() -> impl Strategy<Value = i64> {
    prop_oneof![
        Just(0i64),
        Just(1),
        Just(2),
        Just(i64::MAX),
        Just(i64::MAX - 1),
        Just(-1),
        0i64..40,
        any::<i64>(),
    ]
}

fn damage() -> impl Strategy<Value = Damage> {
    prop_oneof![
        3 => (0usize..9, interesting())
            .prop_map(|(field, value)| Damage::HeaderField { field, value }),
        1 => (0usize..2, 0u64..20)
            .prop_map(|(which, value)| Damage::HeaderCount { which, value }),
        2 => (0usize..8, any::<usize>(), 1u8..=255)
            .prop_map(|(chunk, at, mask)| Damage::Flip { chunk, at, mask }),
        2 => (1usize..8, any::<usize>(), interesting())
            .prop_map(|(chunk, at, value)| Damage::Overwrite { chunk, at, value }),
        1 => (1usize..8).prop_map(Damage::Duplicate),
        1 => (1usize..8).prop_map(Damage::Drop),
        1 => (1usize..8, 1usize..8).prop_map(|(a, b)| Damage::Swap(a, b)),
    ]
}

/// Where the i64 `field` sits in a version 4 header: after the tag, the
/// version and the unlimited flag.
fn field_at(field: usize) -> usize {
    3 + 8 * field
}

impl Damage {
    fn apply(&self, chunks: &mut Vec<Vec<u8>>) {
        let len = chunks.len();
        match *self {
            // Earlier damage may have put a short chunk first.
            Damage::HeaderField { field, value } if chunks[0].len() >= field_at(9) => {
                let at = field_at(field);
                chunks[0][at..at + 8].copy_from_slice(&value.to_le_bytes());
            }
            Damage::HeaderCount { which, value } if chunks[0].len() >= 16 => {
                let header = &mut chunks[0];
                let at = header.len() - 16 + 8 * which;
                header[at..at + 8].copy_from_slice(&value.to_le_bytes());
            }
            Damage::HeaderField { .. } | Damage::HeaderCount { .. } => {}
            Damage::Flip { chunk, at, mask } => {
                let chunk = &mut chunks[chunk % len];
                let at = at % chunk.len();
                chunk[at] ^= mask;
            }
            Damage::Overwrite { chunk, at, value } => {
                let chunk = &mut chunks[chunk % len];
                if chunk.len() >= 8 {
                    let at = at % (chunk.len() - 7);
                    chunk[at..at + 8].copy_from_slice(&value.to_le_bytes());
                }
            }
            Damage::Duplicate(chunk) => {
                let copy = chunks[chunk % len].clone();
                chunks.insert(chunk % len, copy);
            }
            Damage::Drop(chunk) if len > 1 => {
                chunks.remove(chunk % len);
            }
            Damage::Drop(_) => {}
            Damage::Swap(a, b) => chunks.swap(a % len, b % len),
        }
    }
}

/// A sale with every kind of record: alice 2 units (r1, and one unit
/// without a request id), bob 1 unit held (r2), a refund (r3) and a
/// lapsed hold (r4). Limit 3, 10 units.
fn sample() -> SaleItem {
    let mut item = SaleItem::new(Stock::Limited(10), 3);
    let at = Moment::Now(1_000);
    item.deduct(b"alice", 1, Some(b"r1"), at, None).unwrap();
    item.deduct(b"alice", 1, None, at, None).unwrap();
    item.deduct(b"bob", 1, Some(b"r2"), at, Some(5_000))
        .unwrap();
    item.deduct(b"carol", 2, Some(b"r3"), at, None).unwrap();
    item.refund(b"r3").unwrap();
    item.deduct(b"dave", 1, Some(b"r4"), at, Some(2_000))
        .unwrap();
    item.release_due(2_000, usize::MAX);
    item
}

fn with_field(mut header: Vec<u8>, field: usize, value: i64) -> Vec<u8> {
    let at = field_at(field);
    header[at..at + 8].copy_from_slice(&value.to_le_bytes());
    header
}

const STOCK: usize = 0;
const INITIAL: usize = 2;
const ADDED: usize = 3;
const SOLD: usize = 4;
const REFUNDED: usize = 5;
const EXPIRED: usize = 8;

#[test]
fn the_sample_is_a_sale_that_loads() {
    let item = sample();
    let stats = item.stats();
    assert_eq!(
        (
            stats.stock,
            stats.sold,
            stats.refunded,
            stats.expired,
            stats.held
        ),
        (7, 6, 2, 1, 1)
    );
    assert_eq!(load(&chunks_of(&item)), Ok(item));
}

#[test]
fn headers_whose_counters_disagree_are_refused() {
    let header = chunks_of(&sample()).remove(0);
    let refused = |field, value| SaleItem::decode_header(&with_field(header.clone(), field, value));
    assert!(refused(STOCK, 7).is_ok(), "the header itself is fine");
    for (field, value, reason) in [
        (STOCK, 8, "stock and units sold differ from units supplied"),
        (SOLD, 7, "stock and units sold differ from units supplied"),
        (
            INITIAL,
            11,
            "stock and units sold differ from units supplied",
        ),
        (REFUNDED, 7, "more units given back than sold"),
        (EXPIRED, 7, "more units given back than sold"),
        (REFUNDED, i64::MAX, "more units given back than sold"),
        (ADDED, i64::MAX, "units supplied overflow"),
        (STOCK, i64::MAX, "limited stock at the unlimited figure"),
    ] {
        assert_eq!(
            refused(field, value).map(|_| ()),
            Err(DecodeError(reason)),
            "field {field} = {value}"
        );
    }
    // Refunded plus expired beyond sold, each of them below it.
    let both = with_field(with_field(header.clone(), REFUNDED, 4), EXPIRED, 3);
    assert_eq!(
        SaleItem::decode_header(&both).map(|_| ()),
        Err(DecodeError("more units given back than sold"))
    );
}

#[test]
fn a_header_announcing_more_buyers_than_units_sold_is_refused() {
    let mut header = chunks_of(&sample()).remove(0);
    let at = header.len() - 16;
    header[at..at + 8].copy_from_slice(&4u64.to_le_bytes());
    assert_eq!(
        SaleItem::decode_header(&header).map(|_| ()),
        Err(DecodeError("more buyers than units sold"))
    );
}

#[test]
fn an_unlimited_item_with_units_supplied_is_refused() {
    let header = chunks_of(&SaleItem::new(Stock::Unlimited, 0)).remove(0);
    assert!(SaleItem::decode_header(&header).is_ok());
    for field in [INITIAL, ADDED] {
        assert_eq!(
            SaleItem::decode_header(&with_field(header.clone(), field, 5)).map(|_| ()),
            Err(DecodeError("unlimited item with units supplied"))
        );
    }
}

/// A buyers chunk, as the encoder writes one.
fn buyers_chunk(buyers: &[(&[u8], i64)]) -> Vec<u8> {
    let mut chunk = vec![BUYERS_TAG];
    chunk.extend_from_slice(&(buyers.len() as u32).to_le_bytes());
    for (user, units) in buyers {
        put_id(&mut chunk, user);
        chunk.extend_from_slice(&units.to_le_bytes());
    }
    chunk
}

/// A request record: id, user, qty, reply, state, deadline.
type Record<'a> = (&'a [u8], &'a [u8], i64, i64, RequestState, i64);

/// A requests chunk, as the encoder writes one.
fn requests_chunk(requests: &[Record]) -> Vec<u8> {
    let mut chunk = vec![REQUESTS_TAG];
    chunk.extend_from_slice(&(requests.len() as u32).to_le_bytes());
    for (id, user, qty, reply, state, deadline) in requests {
        put_id(&mut chunk, id);
        put_id(&mut chunk, user);
        chunk.extend_from_slice(&qty.to_le_bytes());
        chunk.extend_from_slice(&reply.to_le_bytes());
        chunk.push(state.code());
        chunk.extend_from_slice(&deadline.to_le_bytes());
    }
    chunk
}

/// A group chunk: each buyer with its units and its requests (id, qty,
/// reply, state, deadline); `count` as announced.
type Group<'a> = (&'a [u8], u64, &'a [(&'a [u8], u64, u64, u8, u64)]);

fn groups_chunk(count: u32, groups: &[Group]) -> Vec<u8> {
    let mut chunk = vec![GROUPS_TAG];
    chunk.extend_from_slice(&count.to_le_bytes());
    for (user, units, requests) in groups {
        put_id(&mut chunk, user);
        put_varint(&mut chunk, *units);
        put_varint(&mut chunk, requests.len() as u64);
        for (id, qty, reply, state, deadline) in *requests {
            put_id(&mut chunk, id);
            put_varint(&mut chunk, *qty);
            put_varint(&mut chunk, *reply);
            chunk.push(*state);
            put_varint(&mut chunk, *deadline);
        }
    }
    chunk
}

#[test]
fn a_buyer_with_more_requests_than_a_chunk_holds_continues_in_the_next() {
    let mut item = SaleItem::new(Stock::Unlimited, 0);
    for n in 0..2_500 {
        let id = format!("order:{n}");
        item.deduct(b"whale", 1, Some(id.as_bytes()), Moment::Now(1_000), None)
            .unwrap();
    }
    item.deduct(b"minnow", 1, Some(b"last"), Moment::Now(1_000), None)
        .unwrap();
    let chunks = chunks_of(&item);
    // 2,503 records (two buyers, 2,501 requests) in chunks of 1,024.
    assert_eq!(chunks.len(), 4);
    assert!(chunks[1..].iter().all(|chunk| chunk[0] == GROUPS_TAG));
    assert_eq!(load(&chunks), Ok(item));
}

/// The (units, request count) of each group of a group chunk.
fn group_heads(chunk: &[u8]) -> Vec<(u64, u64)> {
    let mut input = Reader(chunk.get(5..).unwrap_or(&[]));
    let mut heads = Vec::new();
    while !input.0.is_empty() {
        input.id().unwrap();
        let head = (input.varint().unwrap(), input.varint().unwrap());
        for _ in 0..head.1 {
            input.id().unwrap();
            input.varint().unwrap();
            input.varint().unwrap();
            input.u8().unwrap();
            input.varint().unwrap();
        }
        heads.push(head);
    }
    heads
}

/// A buyer whose units were all refunded still has its requests saved,
/// wherever its group falls against a chunk's end.
#[test]
fn a_buyer_holding_nothing_at_a_chunk_boundary_round_trips() {
    let at = Moment::Now(1_000);
    for padding in 0..6 {
        let mut item = SaleItem::new(Stock::Unlimited, 0);
        for n in 0..padding {
            let user = format!("plain:{n}");
            item.deduct(user.as_bytes(), 1, None, at, None).unwrap();
        }
        for n in 0..510 {
            let (user, id) = (format!("user:{n}"), format!("order:{n}"));
            item.deduct(user.as_bytes(), 1, Some(id.as_bytes()), at, None)
                .unwrap();
        }
        item.deduct(b"z", 1, Some(b"oz"), at, None).unwrap();
        item.refund(b"oz").unwrap();
        let chunks = chunks_of(&item);
        for chunk in &chunks[1..] {
            assert!(
                group_heads(chunk)
                    .iter()
                    .all(|(units, requests)| units + requests > 0),
                "{padding} plain buyers first: a group that says nothing"
            );
        }
        assert_eq!(load(&chunks), Ok(item), "{padding} plain buyers first");
    }
    // What the first release of format 5 wrote at a chunk's end, a
    // group with neither units nor requests, loads: its requests come
    // in the next chunk.
    let mut item = counters_only();
    let refunded = RequestState::Refunded.code();
    item.load_chunk(&groups_chunk(1, &[(b"a", 0, &[])]))
        .unwrap();
    item.load_chunk(&groups_chunk(
        2,
        &[(b"a", 0, &[(b"r1", 1, 5, refunded, 0)])],
    ))
    .unwrap();
    assert_eq!(
        item.check_loaded(Expected {
            buyers: 0,
            requests: 1
        }),
        Ok(())
    );
}

/// A group holding nothing at a chunk's end (what the first release of
/// format 5 wrote before a buyer's requests went on in the next chunk)
/// stores nothing, however many chunks of them come: found by an attack
/// that made 200,000 of them hold 5 MB no count or save showed.
#[test]
fn groups_holding_nothing_at_chunk_ends_store_nothing() {
    let item = counters_only();
    let refunded = RequestState::Refunded.code();
    let mut chunks: Vec<Vec<u8>> = (0..100)
        .map(|n| groups_chunk(1, &[(format!("p{n}").as_bytes(), 0, &[])]))
        .collect();
    chunks.push(groups_chunk(2, &[(b"a", 1, &[]), (b"z", 0, &[])]));
    chunks.push(groups_chunk(2, &[(b"z", 0, &[(b"r1", 1, 5, refunded, 0)])]));
    let loaded = load_both_ways(&item, &chunks);
    // a, and z for its refunded request.
    assert_eq!(loaded.ledger.buyer_count(), 2);
    assert_eq!(
        loaded.request(b"r1").map(|request| request.user),
        Some(&b"z"[..])
    );
    assert_eq!(
        loaded.check_loaded(Expected {
            buyers: 1,
            requests: 1
        }),
        Ok(())
    );
}

#[test]
fn group_chunks_that_no_save_writes_are_refused() {
    let item = counters_only();
    let purchased = RequestState::Purchased.code();
    let cases: Vec<(Vec<u8>, &str)> = vec![
        // More requests than the chunk announces records.
        (
            groups_chunk(
                2,
                &[(
                    b"a",
                    1,
                    &[(b"r1", 1, 5, purchased, 0), (b"r2", 1, 5, purchased, 0)],
                )],
            ),
            "bad record count",
        ),
        // Fewer records than announced.
        (
            groups_chunk(3, &[(b"a", 1, &[(b"r1", 1, 5, purchased, 0)])]),
            "truncated chunk",
        ),
        // A varint past 64 bits.
        (
            {
                let mut chunk = vec![GROUPS_TAG, 1, 0, 0, 0];
                put_id(&mut chunk, b"a");
                chunk.extend_from_slice(&[0xff; 10]);
                chunk.push(0);
                chunk
            },
            "varint out of range",
        ),
        // Units beyond i64.
        (
            groups_chunk(1, &[(b"a", u64::MAX, &[])]),
            "negative counter",
        ),
        // A new buyer holding nothing and with no requests, before
        // the end of its chunk.
        (
            groups_chunk(2, &[(b"a", 0, &[]), (b"b", 1, &[])]),
            "buyer holding nothing",
        ),
        // A buyer twice, holding units both times.
        (
            groups_chunk(2, &[(b"a", 1, &[]), (b"a", 1, &[])]),
            "duplicate buyer",
        ),
        // A request id twice, under two groups.
        (
            groups_chunk(
                4,
                &[
                    (b"a", 1, &[(b"r1", 1, 5, purchased, 0)]),
                    (b"b", 1, &[(b"r1", 1, 5, purchased, 0)]),
                ],
            ),
            "duplicate request id",
        ),
        // More units in a request than its buyer holds.
        (
            groups_chunk(2, &[(b"a", 1, &[(b"r1", 2, 5, purchased, 0)])]),
            "request for more units than were counted",
        ),
        (
            groups_chunk(2, &[(b"a", 1, &[(b"r1", 1, 5, 9, 0)])]),
            "bad request state",
        ),
    ];
    for (chunk, reason) in cases {
        let mut loaded = item.clone();
        assert_eq!(
            loaded.load_chunk(&chunk),
            Err(DecodeError(reason)),
            "{reason}"
        );
        assert_eq!(
            whole_load(&item, &[chunk]).map(|_| ()),
            Err(DecodeError(reason)),
            "{reason}, in a whole load"
        );
    }
    // A continuation (units 0) adds requests to a buyer loaded before.
    let mut loaded = item.clone();
    loaded
        .load_chunk(&groups_chunk(
            2,
            &[(b"a", 2, &[(b"r1", 1, 5, purchased, 0)])],
        ))
        .unwrap();
    loaded
        .load_chunk(&groups_chunk(
            2,
            &[(b"a", 0, &[(b"r2", 1, 5, purchased, 0)])],
        ))
        .unwrap();
    assert_eq!(loaded.bought(b"a"), 2);
    assert_eq!(loaded.stats().requests, 2);
    assert_eq!(
        loaded.check_loaded(Expected {
            buyers: 1,
            requests: 2
        }),
        Ok(())
    );
}

/// Loads `chunks` after a header of `item`'s counters as `rdb_load`
/// does, every chunk whatever the counts, without the final check.
fn whole_load(item: &SaleItem, chunks: &[Vec<u8>]) -> Result<SaleItem, DecodeError> {
    let mut load = WholeLoad::begin(&header_announcing(item, 2, 2))?;
    for chunk in chunks {
        load.add_chunk(chunk)?;
    }
    load.finish_unchecked().map(|(item, ..)| item)
}

/// Loads `chunks` after a header of `item`'s counters both as a whole
/// load and chunk by chunk, which must build the same item.
fn load_both_ways(item: &SaleItem, chunks: &[Vec<u8>]) -> SaleItem {
    let whole = whole_load(item, chunks).unwrap();
    let mut chunked = item.clone();
    for chunk in chunks {
        chunked.load_chunk(chunk).unwrap();
    }
    assert_eq!(whole, chunked);
    whole
}

#[test]
fn a_whole_load_takes_chunks_of_every_kind_in_any_mix() {
    let item = counters_only();
    let purchased = RequestState::Purchased.code();
    let expired = RequestState::Expired.code();
    let chunks = [
        groups_chunk(2, &[(b"a", 1, &[(b"r1", 1, 5, purchased, 0)])]),
        buyers_chunk(&[(b"b", 1)]),
        requests_chunk(&[(b"r2", b"a", 1, 5, RequestState::Refunded, 0)]),
        // Group chunks after a chunk of an older kind: looked up again.
        groups_chunk(2, &[(b"c", 0, &[(b"r3", 1, 5, expired, 0)])]),
    ];
    let whole = load_both_ways(&item, &chunks);
    assert_eq!((whole.bought(b"a"), whole.bought(b"b")), (1, 1));
    assert_eq!(whole.stats().requests, 3);
    assert_eq!(whole.request(b"r3").map(|r| r.user), Some(&b"c"[..]));
    assert_eq!(
        whole.check_loaded(Expected {
            buyers: 2,
            requests: 3
        }),
        Ok(())
    );
}

/// A whole load indexes its group chunks' records at the end, so the
/// only buyer it finds again is the last one of a chunk, continued by
/// the first group of the next: a buyer named again anywhere else,
/// which no save writes, is refused as a duplicate, where a
/// chunked load looks every buyer up and takes the later group as more
/// requests of the same buyer. Either way the item holds together.
#[test]
fn a_whole_load_refuses_a_buyer_named_in_two_groups_apart() {
    let item = counters_only();
    let refunded = RequestState::Refunded.code();
    let chunks = [groups_chunk(
        4,
        &[
            (b"a", 1, &[]),
            (b"b", 1, &[]),
            (b"a", 0, &[(b"r1", 1, 5, refunded, 0)]),
        ],
    )];
    assert_eq!(
        whole_load(&item, &chunks).map(|_| ()),
        Err(DecodeError("duplicate buyer"))
    );
    let mut chunked = item.clone();
    chunked.load_chunk(&chunks[0]).unwrap();
    assert_eq!(
        chunked.check_loaded(Expected {
            buyers: 2,
            requests: 1
        }),
        Ok(())
    );
    // A request id repeated in a later chunk is found at the end too.
    let purchased = RequestState::Purchased.code();
    let chunks = [
        groups_chunk(2, &[(b"a", 1, &[(b"r1", 1, 5, purchased, 0)])]),
        groups_chunk(2, &[(b"b", 1, &[(b"r1", 1, 5, purchased, 0)])]),
    ];
    assert_eq!(
        whole_load(&item, &chunks).map(|_| ()),
        Err(DecodeError("duplicate request id"))
    );
}

/// A header for `item`'s counters announcing the given record counts.
fn header_announcing(item: &SaleItem, buyers: u64, requests: u64) -> Vec<u8> {
    let mut header = chunks_of(item).remove(0);
    let at = header.len() - 16;
    header[at..at + 8].copy_from_slice(&buyers.to_le_bytes());
    header[at + 8..].copy_from_slice(&requests.to_le_bytes());
    header
}

/// An item of 10 units, limit 3, with 4 sold, 1 refunded, 1 expired: 2
/// units for the buyers, before any record is loaded.
fn counters_only() -> SaleItem {
    let mut item = SaleItem::new(Stock::Limited(10), 3);
    let at = Moment::Now(1_000);
    item.deduct(b"x", 2, None, at, None).unwrap();
    item.deduct(b"y", 1, Some(b"ry"), at, None).unwrap();
    item.refund(b"ry").unwrap();
    item.deduct(b"z", 1, Some(b"rz"), at, Some(1_500)).unwrap();
    item.release_due(1_500, usize::MAX);
    let (empty, _) = SaleItem::decode_header(&header_announcing(&item, 0, 0)).unwrap();
    empty
}

#[test]
fn buyer_records_beyond_the_limit_or_the_units_sold_are_refused() {
    let mut item = counters_only();
    let before = item.clone();
    for (buyers, reason) in [
        // Beyond the limit and the units sold: the per-user limit is
        // checked once the buyer's requests are in (a buyer's record
        // counts its lapsed holds until they are released), the units
        // sold record by record.
        (
            &[(&b"a"[..], 4i64)][..],
            "buyers hold more units than were sold",
        ),
        (
            &[(&b"a"[..], 2), (&b"b"[..], 1)][..],
            "buyers hold more units than were sold",
        ),
    ] {
        assert_eq!(
            item.load_chunk(&buyers_chunk(buyers)),
            Err(DecodeError(reason))
        );
        // A refused chunk may have loaded some records: its item is
        // dropped by every caller, so each case starts afresh.
        item = before.clone();
    }
    // Each chunk on its own is fine; together they hold too much.
    item.load_chunk(&buyers_chunk(&[(b"a", 2)])).unwrap();
    item.load_chunk(&buyers_chunk(&[(b"b", 1)])).unwrap();
    assert_eq!(
        item.check_loaded(Expected {
            buyers: 2,
            requests: 0
        }),
        Err(DecodeError("buyers hold more units than were sold"))
    );
}

#[test]
fn request_records_the_counters_do_not_account_for_are_refused() {
    use RequestState::{Expired, Held, Purchased, Refunded};
    let mut item = counters_only();
    item.load_chunk(&buyers_chunk(&[(b"a", 1), (b"b", 1)]))
        .unwrap();
    let before = item.clone();
    for (request, reason) in [
        (
            (&b"r"[..], &b"a"[..], 2i64, 5i64, Purchased, 0i64),
            "request for more units than were counted",
        ),
        (
            (b"r", b"nobody", 1, 5, Purchased, 0),
            "request for more units than were counted",
        ),
        (
            (b"r", b"a", 2, 5, Refunded, 0),
            "request for more units than were counted",
        ),
        (
            (b"r", b"a", 2, 5, Expired, 0),
            "request for more units than were counted",
        ),
        ((b"r", b"a", 1, 5, Held, 0), "hold without a deadline"),
        (
            (b"r", b"a", 1, 11, Purchased, 0),
            "request reply is not a stock the item had",
        ),
    ] {
        assert_eq!(
            item.load_chunk(&requests_chunk(&[request])),
            Err(DecodeError(reason)),
            "{request:?}"
        );
        // A refused chunk may have loaded some records: its item is
        // dropped by every caller, so each case starts afresh.
        item = before.clone();
    }
    // Each request is within what alice holds; both together are not.
    item.load_chunk(&requests_chunk(&[(b"r1", b"a", 1, 5, Purchased, 0)]))
        .unwrap();
    item.load_chunk(&requests_chunk(&[(b"r2", b"a", 1, 5, Held, 9_000)]))
        .unwrap();
    assert_eq!(
        item.check_loaded(Expected {
            buyers: 2,
            requests: 2
        }),
        Err(DecodeError("requests for more units than their user holds"))
    );
}

#[test]
fn refunds_and_lapses_beyond_their_counters_are_refused_once_complete() {
    use RequestState::{Expired, Refunded};
    let mut item = counters_only();
    item.load_chunk(&requests_chunk(&[(b"r1", b"a", 1, 5, Refunded, 0)]))
        .unwrap();
    item.load_chunk(&requests_chunk(&[(b"r2", b"a", 1, 5, Refunded, 0)]))
        .unwrap();
    assert_eq!(
        item.check_loaded(Expected {
            buyers: 0,
            requests: 2
        }),
        Err(DecodeError("requests for more units than were counted"))
    );
    let mut item = counters_only();
    let both = requests_chunk(&[
        (b"r1", b"a", 1, 5, Expired, 700),
        (b"r2", b"b", 1, 5, Expired, 700),
    ]);
    // Within one chunk the sum is refused at once...
    assert_eq!(
        item.clone().load_chunk(&both),
        Err(DecodeError("requests for more units than were counted"))
    );
    // ...and over two chunks once the item is complete.
    item.load_chunk(&requests_chunk(&[(b"r1", b"a", 1, 5, Expired, 700)]))
        .unwrap();
    item.load_chunk(&requests_chunk(&[(b"r2", b"b", 1, 5, Expired, 700)]))
        .unwrap();
    assert_eq!(
        item.check_loaded(Expected {
            buyers: 0,
            requests: 2
        }),
        Err(DecodeError("requests for more units than were counted"))
    );
}

#[test]
fn an_unlimited_item_replies_unlimited_stock_only() {
    let mut item = SaleItem::new(Stock::Unlimited, 0);
    item.deduct(b"a", 1, None, Moment::Now(1_000), None)
        .unwrap();
    let (mut loaded, _) = SaleItem::decode_header(&header_announcing(&item, 1, 1)).unwrap();
    loaded.load_chunk(&buyers_chunk(&[(b"a", 1)])).unwrap();
    let request = |reply| requests_chunk(&[(b"r", b"a", 1, reply, RequestState::Purchased, 0)]);
    assert_eq!(
        loaded.load_chunk(&request(5)),
        Err(DecodeError("request reply is not a stock the item had"))
    );
    loaded.load_chunk(&request(UNLIMITED_STOCK)).unwrap();
    assert_eq!(
        loaded.check_loaded(Expected {
            buyers: 1,
            requests: 1
        }),
        Ok(())
    );
}

#[test]
fn a_chunk_spliced_from_another_item_is_refused() {
    let item = sample();
    let mut other = SaleItem::new(Stock::Limited(10), 3);
    other
        .deduct(b"erin", 1, None, Moment::Now(1_000), None)
        .unwrap();
    let mut chunks = chunks_of(&item);
    chunks.insert(2, chunks_of(&other).remove(1));
    // Announce the spliced buyer too, so that only the bookkeeping can
    // tell.
    let header = &mut chunks[0];
    let at = header.len() - 16;
    let buyers = u64::from_le_bytes(header[at..at + 8].try_into().unwrap());
    header[at..at + 8].copy_from_slice(&(buyers + 1).to_le_bytes());
    assert!(load(&chunks).is_err());
}

#[test]
fn every_prefix_of_a_large_item_loads() {
    let mut item = SaleItem::new(Stock::Limited(10_000), 3);
    let at = Moment::Now(1_000);
    for n in 0..2_500 {
        let user = format!("user{n}");
        let id = format!("req{n}");
        let hold = (n % 5 == 0).then_some(2_000 + n);
        item.deduct(user.as_bytes(), 1 + n % 2, Some(id.as_bytes()), at, hold)
            .unwrap();
        item.deduct(user.as_bytes(), 1, None, at, None).unwrap();
    }
    for n in (0..2_500).step_by(7) {
        item.refund(format!("req{n}").as_bytes()).unwrap();
    }
    item.release_due(3_000, usize::MAX);
    assert_exact(&item);
    let chunks = chunks_of(&item);
    assert!(chunks.len() > 4, "{} chunks", chunks.len());
    assert_every_prefix_loads(&chunks);
}

#[test]
fn a_legal_item_with_the_largest_numbers_loads() {
    let at = Moment::Now(1_000);
    let mut unlimited = SaleItem::new(Stock::Unlimited, 0);
    unlimited
        .deduct(b"a", i64::MAX, Some(b"r1"), at, Some(i64::MAX))
        .unwrap();
    assert_eq!(load(&chunks_of(&unlimited)), Ok(unlimited.clone()));
    unlimited.refund(b"r1").unwrap();
    unlimited
        .deduct(b"b", i64::MAX, None, at, None)
        .unwrap_err();
    assert_eq!(load(&chunks_of(&unlimited)), Ok(unlimited));

    // (ADD stops one short of the largest integer.)
    let mut limited = SaleItem::new(Stock::Limited(i64::MAX - 2), 0);
    limited.add(1).unwrap();
    limited
        .deduct(b"a", i64::MAX - 1, Some(b"r1"), at, None)
        .unwrap();
    assert_eq!(load(&chunks_of(&limited)), Ok(limited));
}
