use super::codec::{is_header, DecodeError, Expected};
use super::*;
use proptest::prelude::*;
use std::collections::HashMap;

/// A moment inside any window the tests below do not set themselves.
const NOW: Moment = Moment::Now(1_000);

fn limited(stock: i64, limit: i64) -> SaleItem {
    SaleItem::new(Stock::Limited(stock), limit)
}

#[test]
fn deduct_takes_stock_and_records_the_buyer() {
    let mut item = limited(10, 0);
    assert_eq!(
        item.deduct(b"alice", 3, None, NOW, None),
        Ok(Deduction::Bought { remaining: 7 })
    );
    assert_eq!(item.bought(b"alice"), 3);
    assert_eq!(item.stats().sold, 3);
    assert_eq!(item.stats().buyers, 1);
    assert_eq!(item.stats().requests, 0);
}

#[test]
fn deduct_beyond_stock_is_sold_out_and_changes_nothing() {
    let mut item = limited(2, 0);
    let before = item.clone();
    assert_eq!(
        item.deduct(b"alice", 3, Some(b"r1"), NOW, None),
        Ok(Deduction::SoldOut)
    );
    assert_eq!(item, before);
}

#[test]
fn deduct_of_the_last_units_leaves_zero() {
    let mut item = limited(2, 0);
    assert_eq!(
        item.deduct(b"alice", 2, None, NOW, None),
        Ok(Deduction::Bought { remaining: 0 })
    );
    assert_eq!(
        item.deduct(b"bob", 1, None, NOW, None),
        Ok(Deduction::SoldOut)
    );
}

#[test]
fn limit_caps_what_one_user_holds() {
    let mut item = limited(10, 2);
    assert_eq!(
        item.deduct(b"alice", 2, None, NOW, None),
        Ok(Deduction::Bought { remaining: 8 })
    );
    let before = item.clone();
    assert_eq!(
        item.deduct(b"alice", 1, None, NOW, None),
        Ok(Deduction::LimitExceeded)
    );
    assert_eq!(item, before);
    assert_eq!(
        item.deduct(b"bob", 1, None, NOW, None),
        Ok(Deduction::Bought { remaining: 7 })
    );
}

#[test]
fn sold_out_is_reported_before_the_limit() {
    let mut item = limited(1, 1);
    item.deduct(b"alice", 1, None, NOW, None).unwrap();
    assert_eq!(
        item.deduct(b"alice", 1, None, NOW, None),
        Ok(Deduction::SoldOut)
    );
}

#[test]
fn replayed_request_gets_the_same_reply_and_changes_nothing() {
    let mut item = limited(10, 0);
    assert_eq!(
        item.deduct(b"alice", 2, Some(b"r1"), NOW, None),
        Ok(Deduction::Bought { remaining: 8 })
    );
    item.deduct(b"bob", 1, None, NOW, None).unwrap();
    let before = item.clone();
    assert_eq!(
        item.deduct(b"alice", 2, Some(b"r1"), NOW, None),
        Ok(Deduction::Replayed { remaining: 8 })
    );
    assert_eq!(item, before);
}

#[test]
fn replay_is_answered_even_when_sold_out() {
    let mut item = limited(1, 0);
    item.deduct(b"alice", 1, Some(b"r1"), NOW, None).unwrap();
    assert_eq!(
        item.deduct(b"alice", 1, Some(b"r1"), NOW, None),
        Ok(Deduction::Replayed { remaining: 0 })
    );
}

#[test]
fn request_id_is_bound_to_its_user_and_quantity() {
    let mut item = limited(10, 0);
    item.deduct(b"alice", 2, Some(b"r1"), NOW, None).unwrap();
    let before = item.clone();
    assert_eq!(
        item.deduct(b"bob", 2, Some(b"r1"), NOW, None),
        Err(ItemError::RequestMismatch)
    );
    assert_eq!(
        item.deduct(b"alice", 3, Some(b"r1"), NOW, None),
        Err(ItemError::RequestMismatch)
    );
    assert_eq!(item, before);
}

#[test]
fn refund_restores_stock_and_quota_once() {
    let mut item = limited(5, 2);
    item.deduct(b"alice", 2, Some(b"r1"), NOW, None).unwrap();
    assert_eq!(item.refund(b"r1"), Ok(2));
    assert_eq!(item.remaining(), 5);
    assert_eq!(item.bought(b"alice"), 0);
    assert_eq!(item.stats().buyers, 0);
    assert_eq!(item.stats().refunded, 2);
    let before = item.clone();
    assert_eq!(item.refund(b"r1"), Ok(0));
    assert_eq!(item, before);
    // The quota is free again for a new request.
    assert_eq!(
        item.deduct(b"alice", 2, Some(b"r2"), NOW, None),
        Ok(Deduction::Bought { remaining: 3 })
    );
}

#[test]
fn refunded_request_cannot_buy_again() {
    let mut item = limited(5, 0);
    item.deduct(b"alice", 1, Some(b"r1"), NOW, None).unwrap();
    item.refund(b"r1").unwrap();
    let before = item.clone();
    assert_eq!(
        item.deduct(b"alice", 1, Some(b"r1"), NOW, None),
        Ok(Deduction::Cancelled)
    );
    assert_eq!(item, before);
}

#[test]
fn refund_of_an_unknown_request_returns_nothing() {
    let mut item = limited(5, 0);
    let before = item.clone();
    assert_eq!(item.refund(b"nope"), Ok(0));
    assert_eq!(item, before);
}

#[test]
fn refund_keeps_other_units_of_the_same_user() {
    let mut item = limited(5, 0);
    item.deduct(b"alice", 1, Some(b"r1"), NOW, None).unwrap();
    item.deduct(b"alice", 2, Some(b"r2"), NOW, None).unwrap();
    assert_eq!(item.refund(b"r1"), Ok(1));
    assert_eq!(item.bought(b"alice"), 2);
}

#[test]
fn unlimited_item_never_runs_out() {
    let mut item = SaleItem::new(Stock::Unlimited, 0);
    assert_eq!(
        item.deduct(b"alice", i64::MAX, None, NOW, None),
        Ok(Deduction::Bought {
            remaining: UNLIMITED_STOCK
        })
    );
    assert_eq!(item.remaining(), UNLIMITED_STOCK);
    assert_eq!(item.add(5), Ok(Restock::Unlimited));
    assert!(item.stats().unlimited);
}

#[test]
fn unlimited_item_still_enforces_the_limit() {
    let mut item = SaleItem::new(Stock::Unlimited, 1);
    item.deduct(b"alice", 1, None, NOW, None).unwrap();
    assert_eq!(
        item.deduct(b"alice", 1, None, NOW, None),
        Ok(Deduction::LimitExceeded)
    );
}

#[test]
fn add_restocks_and_counts() {
    let mut item = limited(1, 0);
    item.deduct(b"alice", 1, None, NOW, None).unwrap();
    assert_eq!(item.add(4), Ok(Restock::Added { remaining: 4 }));
    assert_eq!(item.stats().added, 4);
}

#[test]
fn add_that_would_overflow_is_refused_and_changes_nothing() {
    let mut item = limited(i64::MAX - 2, 0);
    item.deduct(b"alice", 5, None, NOW, None).unwrap();
    let before = item.clone();
    // Remaining stock has room, but everything supplied would not fit
    // below the figure an unlimited item reports.
    assert_eq!(item.add(2), Err(ItemError::Overflow));
    assert_eq!(item, before);
    assert_eq!(
        item.add(1),
        Ok(Restock::Added {
            remaining: i64::MAX - 6
        })
    );
    // One short of the largest integer: a limited item never reads as
    // unlimited.
    assert_eq!(item.add(1), Err(ItemError::Overflow));
}

#[test]
fn huge_quantity_over_a_limit_is_limit_exceeded_not_overflow() {
    let mut item = SaleItem::new(Stock::Unlimited, 3);
    item.deduct(b"alice", 1, None, NOW, None).unwrap();
    assert_eq!(
        item.deduct(b"alice", i64::MAX, None, NOW, None),
        Ok(Deduction::LimitExceeded)
    );
}

#[test]
fn sold_counter_overflow_is_refused() {
    let mut item = SaleItem::new(Stock::Unlimited, 0);
    item.deduct(b"alice", i64::MAX, None, NOW, None).unwrap();
    let before = item.clone();
    assert_eq!(
        item.deduct(b"bob", 1, None, NOW, None),
        Err(ItemError::Overflow)
    );
    assert_eq!(item, before);
}

#[test]
fn non_positive_quantities_are_refused() {
    let mut item = limited(5, 0);
    assert_eq!(
        item.deduct(b"alice", 0, None, NOW, None),
        Err(ItemError::NonPositiveQuantity)
    );
    assert_eq!(item.add(-1), Err(ItemError::NonPositiveQuantity));
}

fn round_trip(item: &SaleItem) -> Result<SaleItem, DecodeError> {
    let mut chunks = Vec::new();
    item.encode_chunks(|chunk| chunks.push(chunk.to_vec()));
    let (header, records) = chunks.split_first().ok_or(DecodeError("empty"))?;
    assert!(is_header(header));
    let (mut loaded, expected) = SaleItem::decode_header(header)?;
    for chunk in records {
        assert!(!is_header(chunk));
        loaded.load_chunk(chunk)?;
    }
    assert!(loaded.is_loaded(expected));
    loaded.check_loaded(expected)?;
    Ok(loaded)
}

#[test]
fn codec_round_trips_a_large_ledger_in_several_chunks() {
    let mut item = limited(10_000, 3);
    for n in 0..3_000 {
        let user = format!("user{}", n % 1_500);
        let id = format!("req{n}");
        item.deduct(user.as_bytes(), 1, Some(id.as_bytes()), NOW, None)
            .unwrap();
    }
    item.refund(b"req7").unwrap();
    let mut chunks = 0;
    item.encode_chunks(|_| chunks += 1);
    assert!(chunks > 3, "expected several record chunks, got {chunks}");
    assert_eq!(round_trip(&item), Ok(item));
}

/// Purchases by `count` new users, each under its own request id: one
/// buyer and one request record each.
fn item_with_buyers(count: usize) -> SaleItem {
    let mut item = limited(1_000_000, 2);
    for n in 0..count {
        let (user, id) = (format!("user:{n}"), format!("order:{n}"));
        item.deduct(user.as_bytes(), 1, Some(id.as_bytes()), NOW, None)
            .unwrap();
    }
    item
}

/// The buyer count the integration tests use for an item caught in the
/// middle of a resize: tables double when 4/5 full (16,384 slots hold
/// 13,107 entries) and the insert after that starts moving the old table
/// over the next 256 inserts.
const MID_RESIZE_BUYERS: usize = 13_200;

#[test]
fn an_item_caught_mid_resize_saves_loads_and_sells_on() {
    let mut item = item_with_buyers(MID_RESIZE_BUYERS);
    assert!(item.is_resizing(), "both indexes are moving entries");
    let mut loaded = round_trip(&item).unwrap();
    assert_eq!(loaded, item);
    for n in [0, 6_000, 13_106, 13_107, MID_RESIZE_BUYERS - 1] {
        let (user, id) = (format!("user:{n}"), format!("order:{n}"));
        assert_eq!(loaded.bought(user.as_bytes()), 1);
        let replay = loaded.deduct(user.as_bytes(), 1, Some(id.as_bytes()), NOW, None);
        assert_eq!(
            replay,
            Ok(Deduction::Replayed {
                remaining: 1_000_000 - 1 - n as i64
            })
        );
    }
    // Both copies go on growing through the rest of the resize and the
    // next one, and stay equal.
    for n in MID_RESIZE_BUYERS..30_000 {
        let (user, id) = (format!("user:{n}"), format!("order:{n}"));
        let bought = item.deduct(user.as_bytes(), 1, Some(id.as_bytes()), NOW, None);
        assert_eq!(
            loaded.deduct(user.as_bytes(), 1, Some(id.as_bytes()), NOW, None),
            bought
        );
    }
    assert_eq!(loaded, item);
    assert_eq!(item.stats().buyers, 30_000);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// However many buyers an item has, wherever its indexes are in a
    /// resize, it saves and loads into an equal item whose ids all replay.
    #[test]
    fn save_and_load_round_trip_at_any_size(count in 1usize..6_000) {
        let item = item_with_buyers(count);
        let mut loaded = round_trip(&item).unwrap();
        prop_assert_eq!(&loaded, &item);
        for n in [0, count / 2, count - 1] {
            let (user, id) = (format!("user:{n}"), format!("order:{n}"));
            let replay = loaded.deduct(user.as_bytes(), 1, Some(id.as_bytes()), NOW, None);
            prop_assert_eq!(replay, Ok(Deduction::Replayed { remaining: 1_000_000 - 1 - n as i64 }));
        }
    }
}

#[test]
fn codec_refuses_a_newer_format() {
    let mut header = Vec::new();
    limited(1, 0).encode_chunks(|chunk| {
        if header.is_empty() {
            header = chunk.to_vec();
        }
    });
    header[1] = codec::FORMAT_VERSION + 1;
    assert!(SaleItem::decode_header(&header).is_err());
}

#[test]
fn codec_refuses_a_duplicate_record_without_loading_any() {
    let mut item = limited(5, 0);
    item.deduct(b"alice", 1, None, NOW, None).unwrap();
    let mut chunks = Vec::new();
    item.encode_chunks(|chunk| chunks.push(chunk.to_vec()));
    let (mut loaded, _) = SaleItem::decode_header(&chunks[0]).unwrap();
    loaded.load_chunk(&chunks[1]).unwrap();
    let before = loaded.clone();
    assert!(loaded.load_chunk(&chunks[1]).is_err());
    assert_eq!(loaded, before);
}

#[test]
fn codec_refuses_fewer_records_than_the_header_announced() {
    // 1,200 records: two record chunks, of which only the first loads.
    let item = item_with_buyers(600);
    let mut chunks = Vec::new();
    item.encode_chunks(|chunk| chunks.push(chunk.to_vec()));
    assert_eq!(chunks.len(), 3);
    let (mut loaded, expected) = SaleItem::decode_header(&chunks[0]).unwrap();
    loaded.load_chunk(&chunks[1]).unwrap();
    assert!(!loaded.is_loaded(expected));
    assert!(loaded.check_loaded(expected).is_err());
}

#[test]
fn operations_on_inconsistent_counters_do_not_panic() {
    // What a hand-written SECKILL.LOADCHUNK header can produce.
    let mut item = limited(i64::MAX, 1);
    item.sold = i64::MAX;
    item.refunded = i64::MAX;
    item.added = i64::MAX;
    assert_eq!(item.add(1), Err(ItemError::Overflow));
    assert_eq!(
        item.deduct(b"alice", 1, Some(b"r1"), NOW, None),
        Err(ItemError::Overflow)
    );
    item.sold = 0;
    item.deduct(b"alice", 1, Some(b"r1"), NOW, None).unwrap();
    assert_eq!(item.refund(b"r1"), Err(ItemError::Overflow));
    item.refunded = 0;
    // The user's units vanished (a damaged item): the refund still returns
    // the stock and leaves the user at zero rather than below.
    if let ledger::Lookup::Found(mut buyer) = item.ledger.find_buyer(b"alice") {
        item.ledger.set_units(&mut buyer, 0);
    }
    assert_eq!(item.refund(b"r1"), Ok(1));
    assert_eq!(item.bought(b"alice"), 0);
}

#[derive(Clone, Debug)]
enum Op {
    Add(i64),
    Deduct {
        user: u8,
        qty: i64,
        request: Option<u8>,
        /// Hold for this many ms from the current time (needs a request).
        hold: Option<i64>,
    },
    Refund(u8),
    Confirm(u8),
    /// Time passes, then due holds are released.
    Wait(i64),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        1 => (1i64..20).prop_map(Op::Add),
        6 => (0u8..8, 1i64..4, proptest::option::of(0u8..24), proptest::option::of(1i64..50))
            .prop_map(|(user, qty, request, hold)| Op::Deduct { user, qty, request, hold }),
        2 => (0u8..24).prop_map(Op::Refund),
        2 => (0u8..24).prop_map(Op::Confirm),
        2 => (0i64..40).prop_map(Op::Wait),
    ]
}

fn user_name(user: u8) -> Vec<u8> {
    format!("user{user}").into_bytes()
}

fn request_name(request: u8) -> Vec<u8> {
    format!("req{request}").into_bytes()
}

fn check_invariants(item: &SaleItem) {
    let stats = item.stats();
    assert!(stats.stock >= 0, "stock went negative");
    assert_eq!(
        stats.stock + stats.sold - stats.refunded - stats.expired,
        stats.initial + stats.added,
        "remaining + sold - refunded - expired must equal what was supplied"
    );
    let held: i64 = item.buyers().map(|(_, units)| units).sum();
    assert_eq!(
        held,
        stats.sold - stats.refunded - stats.expired,
        "buyers hold what was sold and not given back"
    );
    if stats.limit > 0 {
        // A buyer's record counts its lapsed holds until they are
        // released: its units beyond those in holds are within the limit.
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
    assert!(item.buyers().all(|(_, units)| units > 0));
    let pending: Vec<_> = item
        .requests()
        .filter(|(_, request)| request.state == RequestState::Held)
        .collect();
    assert_eq!(pending.len(), stats.holds, "every held request is indexed");
    assert_eq!(
        pending.iter().map(|(_, request)| request.qty).sum::<i64>(),
        stats.held
    );
}

proptest! {
    #[test]
    fn sale_invariants_hold_under_any_sequence(
        stock in 0i64..30,
        limit in 0i64..5,
        ops in proptest::collection::vec(op(), 0..200),
    ) {
        let mut item = limited(stock, limit);
        let mut now = 1_000i64;
        for op in ops {
            // Writes release due holds first, as the command layer does.
            item.release_due(now, usize::MAX);
            let before = item.clone();
            match op {
                Op::Add(qty) => {
                    prop_assert_eq!(
                        item.add(qty),
                        Ok(Restock::Added { remaining: before.remaining() + qty })
                    );
                }
                Op::Deduct { user, qty, request, hold } => {
                    let user = user_name(user);
                    let request = request.map(request_name);
                    let hold = hold.filter(|_| request.is_some()).map(|ms| now + ms);
                    let outcome =
                        item.deduct(&user, qty, request.as_deref(), Moment::Now(now), hold);
                    match outcome {
                        Ok(Deduction::Bought { remaining }) => {
                            prop_assert_eq!(remaining, before.remaining() - qty);
                            prop_assert_eq!(item.bought(&user), before.bought(&user) + qty);
                        }
                        // Anything that is not a purchase leaves the item as it was.
                        _ => prop_assert_eq!(&item, &before),
                    }
                    if let Some(id) = request.as_deref() {
                        if let Some(previous) = before.request(id) {
                            let bought_again = matches!(outcome, Ok(Deduction::Bought { .. }));
                            prop_assert!(!bought_again, "a known request id bought again");
                            if previous.user == user.as_slice() && previous.qty == qty {
                                let expected = match previous.state {
                                    RequestState::Refunded | RequestState::Expired => {
                                        Deduction::Cancelled
                                    }
                                    _ => Deduction::Replayed { remaining: previous.reply },
                                };
                                prop_assert_eq!(outcome, Ok(expected));
                            }
                        }
                    }
                }
                Op::Refund(request) => {
                    let id = request_name(request);
                    let returned = item.refund(&id).unwrap();
                    match before.request(&id) {
                        Some(taken)
                            if matches!(taken.state, RequestState::Purchased | RequestState::Held) =>
                        {
                            prop_assert_eq!(returned, taken.qty);
                            prop_assert_eq!(item.remaining(), before.remaining() + taken.qty);
                            prop_assert_eq!(
                                item.bought(taken.user),
                                before.bought(taken.user) - taken.qty
                            );
                            let after = item.clone();
                            prop_assert_eq!(item.refund(&id), Ok(0));
                            prop_assert_eq!(&item, &after);
                        }
                        _ => {
                            prop_assert_eq!(returned, 0);
                            prop_assert_eq!(&item, &before);
                        }
                    }
                }
                Op::Confirm(request) => {
                    let id = request_name(request);
                    let confirmation = item.confirm(&id);
                    let expected = match before.request(&id).map(|r| r.state) {
                        Some(RequestState::Held) => Confirmation::Confirmed,
                        Some(RequestState::Purchased) => Confirmation::AlreadyConfirmed,
                        _ => Confirmation::Cancelled,
                    };
                    prop_assert_eq!(confirmation, expected);
                    // Confirming changes no stock and no quota.
                    prop_assert_eq!(item.remaining(), before.remaining());
                    prop_assert_eq!(item.stats().sold, before.stats().sold);
                }
                Op::Wait(ms) => {
                    now += ms;
                    // Reads before the release already report its result.
                    let promised = item.stats_at(now);
                    let promised_stock = item.remaining_at(now);
                    let promised_bought: Vec<i64> =
                        (0..8).map(|user| item.bought_at(&user_name(user), now)).collect();
                    item.release_due(now, usize::MAX);
                    prop_assert_eq!(promised, item.stats());
                    prop_assert_eq!(promised_stock, item.remaining());
                    let bought: Vec<i64> = (0..8).map(|user| item.bought(&user_name(user))).collect();
                    prop_assert_eq!(promised_bought, bought);
                }
            }
            check_invariants(&item);
        }
        prop_assert_eq!(round_trip(&item), Ok(item.clone()));
    }

    #[test]
    fn decoding_arbitrary_bytes_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        if let Ok((item, expected)) = SaleItem::decode_header(&bytes) {
            let _ = item.check_loaded(expected);
        }
        let mut item = limited(1, 0);
        let _ = item.load_chunk(&bytes);
    }
}

#[test]
fn a_ledger_large_enough_to_split_its_indexes_finds_every_record() {
    let mut item = SaleItem::new(Stock::Unlimited, 0);
    let count = 40_000;
    for n in 0..count {
        let user = format!("user:{n}");
        let id = format!("order:{n}");
        item.deduct(user.as_bytes(), 1 + n % 3, Some(id.as_bytes()), NOW, None)
            .unwrap();
    }
    for n in (0..count).step_by(7) {
        let user = format!("user:{n}");
        let id = format!("order:{n}");
        assert_eq!(item.bought(user.as_bytes()), 1 + n % 3);
        let request = item.request(id.as_bytes()).expect("recorded request");
        assert_eq!((request.user, request.qty), (user.as_bytes(), 1 + n % 3));
        assert_eq!(
            item.deduct(user.as_bytes(), 1 + n % 3, Some(id.as_bytes()), NOW, None),
            Ok(Deduction::Replayed {
                remaining: UNLIMITED_STOCK
            })
        );
    }
    assert_eq!(item.refund(b"order:12345"), Ok(1));
    assert_eq!(item.stats().buyers, count as usize - 1);
    assert_eq!(item.stats().requests, count as usize);
    assert_eq!(round_trip(&item), Ok(item.clone()));
}

#[test]
fn ids_beyond_the_bound_are_refused_by_the_item_itself() {
    let mut item = limited(5, 0);
    let long = [b'x'; MAX_ID_LEN + 1];
    assert_eq!(
        item.deduct(&long, 1, None, NOW, None),
        Err(ItemError::BadId)
    );
    assert_eq!(
        item.deduct(b"alice", 1, Some(&long), NOW, None),
        Err(ItemError::BadId)
    );
    assert_eq!(item.deduct(b"", 1, None, NOW, None), Err(ItemError::BadId));
    assert_eq!(item, limited(5, 0));
}

#[test]
fn the_window_opens_at_start_and_closes_at_end() {
    let mut item = limited(10, 0);
    item.set_window(Window::new(2_000, 3_000).unwrap());
    let before = item.clone();
    let at = Moment::Now;
    assert_eq!(
        item.deduct(b"a", 1, None, at(1_999), None),
        Ok(Deduction::NotStarted)
    );
    assert_eq!(
        item.deduct(b"a", 1, None, at(3_000), None),
        Ok(Deduction::Ended)
    );
    assert_eq!(item, before, "refusals record nothing");
    assert_eq!(
        item.deduct(b"a", 1, None, at(2_000), None),
        Ok(Deduction::Bought { remaining: 9 })
    );
    assert_eq!(
        item.deduct(b"b", 1, None, at(2_999), None),
        Ok(Deduction::Bought { remaining: 8 })
    );
}

#[test]
fn a_window_with_one_open_side_bounds_only_the_other() {
    let mut item = limited(10, 0);
    item.set_window(Window::new(0, 5_000).unwrap());
    assert!(matches!(
        item.deduct(b"a", 1, None, Moment::Now(1), None),
        Ok(Deduction::Bought { .. })
    ));
    item.set_window(Window::new(5_000, 0).unwrap());
    assert_eq!(
        item.deduct(b"a", 1, None, Moment::Now(1), None),
        Ok(Deduction::NotStarted)
    );
    assert!(matches!(
        item.deduct(b"a", 1, None, Moment::Now(i64::MAX), None),
        Ok(Deduction::Bought { .. })
    ));
}

#[test]
fn a_replay_after_the_window_closed_still_gets_its_reply() {
    let mut item = limited(10, 0);
    item.set_window(Window::new(0, 5_000).unwrap());
    item.deduct(b"a", 1, Some(b"r1"), Moment::Now(4_999), None)
        .unwrap();
    assert_eq!(
        item.deduct(b"a", 1, Some(b"r1"), Moment::Now(6_000), None),
        Ok(Deduction::Replayed { remaining: 9 })
    );
}

#[test]
fn a_decided_moment_skips_the_window() {
    let mut item = limited(10, 0);
    item.set_window(Window::new(0, 5_000).unwrap());
    assert_eq!(
        item.deduct(b"a", 1, None, Moment::Untimed, None),
        Ok(Deduction::Bought { remaining: 9 })
    );
}

#[test]
fn windows_must_be_non_negative_and_ordered() {
    assert_eq!(Window::new(-1, 0), Err(ItemError::BadWindow));
    assert_eq!(Window::new(0, -1), Err(ItemError::BadWindow));
    assert_eq!(Window::new(5, 5), Err(ItemError::BadWindow));
    assert_eq!(Window::new(6, 5), Err(ItemError::BadWindow));
    assert!(Window::new(0, 0).unwrap().is_always_open());
}

#[test]
fn codec_keeps_the_window_and_reads_version_1_headers() {
    let mut item = limited(7, 2);
    item.set_window(Window::new(1_000, 2_000).unwrap());
    assert_eq!(round_trip(&item), Ok(item.clone()));

    // A version 1 header, as the first release wrote it: no window.
    let mut header = vec![b'H', 1, 0];
    for field in [7i64, 2, 7, 0, 0, 0] {
        header.extend_from_slice(&field.to_le_bytes());
    }
    header.extend_from_slice(&0u64.to_le_bytes());
    header.extend_from_slice(&0u64.to_le_bytes());
    let (loaded, _) = SaleItem::decode_header(&header).unwrap();
    assert_eq!(loaded, limited(7, 2));
    assert!(loaded.window().is_always_open());
}

fn hold(item: &mut SaleItem, user: &[u8], id: &[u8], until: i64) -> Result<Deduction, ItemError> {
    item.deduct(user, 1, Some(id), Moment::Now(0), Some(until))
}

#[test]
fn a_lapsed_hold_returns_stock_and_quota_and_its_id_is_spent() {
    let mut item = limited(1, 1);
    assert_eq!(
        hold(&mut item, b"alice", b"r1", 500),
        Ok(Deduction::Bought { remaining: 0 })
    );
    assert_eq!(item.stats().held, 1);
    assert_eq!(item.release_due(499, usize::MAX), vec![]);
    assert_eq!(
        item.release_due(500, usize::MAX),
        vec![Lapsed {
            request_id: b"r1".to_vec(),
            user: b"alice".to_vec(),
            qty: 1
        }]
    );
    assert_eq!(item.remaining(), 1);
    assert_eq!(item.bought(b"alice"), 0);
    let stats = item.stats();
    assert_eq!((stats.held, stats.holds, stats.expired), (0, 0, 1));
    assert_eq!(
        hold(&mut item, b"alice", b"r1", 900),
        Ok(Deduction::Cancelled),
        "a retried DEDUCT of a lapsed hold gets -4"
    );
    assert_eq!(item.confirm(b"r1"), Confirmation::Cancelled);
    assert!(matches!(
        hold(&mut item, b"alice", b"r2", 900),
        Ok(Deduction::Bought { .. })
    ));
}

#[test]
fn a_confirmed_hold_is_kept_past_its_deadline() {
    let mut item = limited(2, 0);
    hold(&mut item, b"alice", b"r1", 500).unwrap();
    assert_eq!(item.confirm(b"r1"), Confirmation::Confirmed);
    assert_eq!(item.confirm(b"r1"), Confirmation::AlreadyConfirmed);
    assert!(item.release_due(10_000, usize::MAX).is_empty());
    assert_eq!(item.bought(b"alice"), 1);
    assert_eq!(item.stats().held, 0);
    assert_eq!(
        item.request(b"r1").map(|r| r.state),
        Some(RequestState::Purchased)
    );
}

#[test]
fn refunding_a_pending_hold_releases_it_once() {
    let mut item = limited(2, 0);
    hold(&mut item, b"alice", b"r1", 500).unwrap();
    assert_eq!(item.refund(b"r1"), Ok(1));
    assert_eq!(item.refund(b"r1"), Ok(0));
    assert!(item.release_due(10_000, usize::MAX).is_empty());
    let stats = item.stats();
    assert_eq!(
        (stats.stock, stats.held, stats.refunded, stats.expired),
        (2, 0, 1, 0)
    );
}

#[test]
fn a_hold_needs_a_request_id() {
    let mut item = limited(2, 0);
    assert_eq!(
        item.deduct(b"alice", 1, None, NOW, Some(5_000)),
        Err(ItemError::HoldWithoutId)
    );
}

#[test]
fn release_by_id_ignores_holds_already_settled() {
    let mut item = limited(3, 0);
    hold(&mut item, b"a", b"r1", 500).unwrap();
    hold(&mut item, b"b", b"r2", 500).unwrap();
    item.confirm(b"r2");
    assert_eq!(item.release(&[b"r1", b"r2", b"unknown"]).len(), 1);
    assert_eq!(item.release(&[b"r1"]), vec![]);
    assert_eq!(item.remaining(), 2);
}

#[test]
fn releases_are_bounded_per_step() {
    let mut item = limited(10, 0);
    for n in 0..5u8 {
        hold(&mut item, &[b'u', n], &[b'r', n], 100 + i64::from(n)).unwrap();
    }
    assert_eq!(item.release_due(1_000, 2).len(), 2);
    assert_eq!(item.next_deadline(), Some(102));
    assert_eq!(item.release_due(1_000, 10).len(), 3);
    assert_eq!(item.next_deadline(), None);
}

#[test]
fn codec_keeps_holds_and_reads_older_request_chunks() {
    let mut item = limited(5, 0);
    hold(&mut item, b"alice", b"r1", 500).unwrap();
    hold(&mut item, b"bob", b"r2", 600).unwrap();
    item.release_due(500, usize::MAX);
    item.deduct(b"carol", 1, Some(b"r3"), NOW, None).unwrap();
    let loaded = round_trip(&item).unwrap();
    assert_eq!(loaded, item);
    assert_eq!(loaded.next_deadline(), Some(600));

    // A request chunk as the first release wrote it ('R', refunded flag).
    let mut old = limited(5, 0);
    old.deduct(b"alice", 2, None, NOW, None).unwrap();
    // The chunk's refunded request must be counted as refunded.
    old.deduct(b"alice", 1, Some(b"r0"), NOW, None).unwrap();
    old.refund(b"r0").unwrap();
    let mut chunk = vec![b'R'];
    chunk.extend_from_slice(&2u32.to_le_bytes());
    for (id, flag) in [(&b"r1"[..], 0u8), (&b"r2"[..], 1)] {
        chunk.push(id.len() as u8);
        chunk.extend_from_slice(id);
        chunk.push(5);
        chunk.extend_from_slice(b"alice");
        chunk.extend_from_slice(&1i64.to_le_bytes());
        chunk.extend_from_slice(&4i64.to_le_bytes());
        chunk.push(flag);
    }
    old.load_chunk(&chunk).unwrap();
    assert_eq!(
        old.request(b"r1").map(|r| r.state),
        Some(RequestState::Purchased)
    );
    assert_eq!(
        old.request(b"r2").map(|r| r.state),
        Some(RequestState::Refunded)
    );
}

#[test]
fn the_largest_numbers_survive_the_ledger_and_the_codec() {
    let mut item = SaleItem::new(Stock::Unlimited, 0);
    item.deduct(b"alice", i64::MAX, Some(b"r1"), NOW, Some(i64::MAX))
        .unwrap();
    let request = item.request(b"r1").unwrap();
    assert_eq!(
        (request.qty, request.reply, request.deadline),
        (i64::MAX, UNLIMITED_STOCK, i64::MAX)
    );
    assert_eq!(
        item.deduct(b"alice", i64::MAX, Some(b"r1"), NOW, None),
        Ok(Deduction::Replayed {
            remaining: UNLIMITED_STOCK
        })
    );
    assert_eq!(round_trip(&item), Ok(item.clone()));
}

#[test]
fn codec_keeps_the_order_stream() {
    let mut item = limited(5, 0);
    item.set_order_stream(Some(StreamSetting {
        stream: b"{sku:1}:orders".as_slice().into(),
        maxlen: 1000,
        confirmed: true,
    }));
    let loaded = round_trip(&item).unwrap();
    assert_eq!(loaded.order_stream(), item.order_stream());
    item.distrust_order_stream();
    let loaded = round_trip(&item).unwrap();
    assert_eq!(
        loaded
            .order_stream()
            .map(|stream_setting| stream_setting.confirmed),
        Some(false)
    );
    item.confirm_order_stream();
    assert_eq!(
        round_trip(&item).unwrap().order_stream(),
        item.order_stream()
    );
    item.set_order_stream(None);
    assert_eq!(round_trip(&item).unwrap().order_stream(), None);
}

// --- Judging with lapsed holds as released ---------------------------------

/// Many holds all due at `deadline`, one unit each, users `u0..`.
fn lapsing_holds(stock: i64, limit: i64, holds: u32, deadline: i64) -> SaleItem {
    let mut item = limited(stock, limit);
    for n in 0..holds {
        let (user, id) = (format!("u{n}"), format!("h{n}"));
        hold(&mut item, user.as_bytes(), id.as_bytes(), deadline).unwrap();
    }
    item
}

/// Judges, settles at most `budget` lapsed holds besides what the change
/// needs, and applies, as the command layer does on a master.
fn write_at(item: &mut SaleItem, order: Order, at: i64, budget: usize) -> Option<i64> {
    match item.judge_deduct(order, Moment::Now(at)).unwrap() {
        Verdict::Answer(_) => None,
        Verdict::Change(change) => {
            let settle = item.settle_plan(&change, at, budget);
            Some(item.apply(&settle, change))
        }
    }
}

fn order<'a>(user: &'a [u8], qty: i64, request_id: Option<&'a [u8]>) -> Order<'a> {
    Order {
        user,
        qty,
        request_id,
        hold_until: None,
    }
}

#[test]
fn a_write_sees_every_lapsed_unit_back_however_many() {
    let mut item = lapsing_holds(5_000, 0, 5_000, 100);
    assert_eq!(item.remaining_at(200), 5_000);
    let reply = write_at(&mut item, order(b"big", 3_000, None), 200, 64);
    assert_eq!(reply, Some(2_000), "the reply a read predicted");
    assert!(item.remaining() >= 0, "enough holds were settled to sell");
    assert_eq!(item.remaining_at(200), 2_000);
    item.release_due(200, usize::MAX);
    assert_eq!(item.remaining(), 2_000);
    check_invariants(&item);
}

#[test]
fn a_buyer_whose_hold_lapsed_among_thousands_may_buy_again() {
    let mut item = lapsing_holds(5_000, 1, 5_000, 100);
    assert_eq!(item.bought_at(b"u4999", 200), 0);
    let reply = write_at(&mut item, order(b"u4999", 1, None), 200, 0);
    assert!(reply.is_some(), "the limit counts the lapsed hold as gone");
    assert_eq!(item.bought_at(b"u4999", 200), 1);
    item.release_due(200, usize::MAX);
    assert_eq!(item.bought(b"u4999"), 1);
    check_invariants(&item);
}

#[test]
fn a_lapsed_hold_can_be_neither_confirmed_refunded_nor_replayed() {
    let item = lapsing_holds(10, 0, 1, 100);
    assert!(matches!(
        item.judge_confirm(b"h0", Moment::Now(100)),
        Verdict::Answer(Confirmation::Cancelled)
    ));
    assert!(matches!(
        item.judge_refund(b"h0", Moment::Now(100)),
        Ok(Verdict::Answer(0))
    ));
    let replay = Order {
        hold_until: Some(100),
        ..order(b"u0", 1, Some(b"h0"))
    };
    assert!(matches!(
        item.judge_deduct(replay, Moment::Now(100)),
        Ok(Verdict::Answer(Deduction::Cancelled))
    ));
    assert!(matches!(
        item.judge_confirm(b"h0", Moment::Now(99)),
        Verdict::Change(_)
    ));
}

#[test]
fn settling_a_backlog_is_bounded_unless_the_sale_needs_more() {
    let item = lapsing_holds(1_000, 0, 1_000, 100);
    let small = item.judge_deduct(order(b"x", 1, None), Moment::Now(100));
    let Ok(Verdict::Change(change)) = small else {
        panic!("a lapsed unit sells");
    };
    assert_eq!(item.settle_plan(&change, 100, 10).len(), 10);
    let big = item.judge_deduct(order(b"x", 500, None), Moment::Now(100));
    let Ok(Verdict::Change(change)) = big else {
        panic!("500 lapsed units sell");
    };
    assert_eq!(item.settle_plan(&change, 100, 10).len(), 500);
}

#[test]
fn events_carry_the_stock_reads_report() {
    let item = lapsing_holds(3, 0, 3, 100);
    let Ok(Verdict::Change(change)) =
        item.judge_deduct(order(b"x", 1, Some(b"p")), Moment::Now(100))
    else {
        panic!("a lapsed unit sells");
    };
    let settle = item.settle_plan(&change, 100, 1);
    let events = item.events(&settle, &change, Moment::Now(100));
    let kinds: Vec<(&str, i64)> = events.iter().map(|e| (e.kind, e.stock)).collect();
    assert_eq!(kinds, [("expire", 3), ("purchase", 2)]);
}

proptest! {
    /// Judging lapsed holds as released, settling only some of them, gives
    /// the very replies and item that releasing all of them first gives.
    #[test]
    fn a_write_judges_the_item_as_if_every_lapsed_hold_were_released(
        stock in 0i64..30,
        limit in 0i64..5,
        budget in 0usize..4,
        ops in proptest::collection::vec(op(), 0..150),
    ) {
        let mut item = limited(stock, limit);
        let mut reference = item.clone();
        let mut now = 1_000i64;
        for op in ops {
            reference.release_due(now, usize::MAX);
            let at = Moment::Now(now);
            match op {
                Op::Wait(ms) => now += ms,
                Op::Add(qty) => {
                    let expected = reference.add(qty).map(Restock::reply);
                    let got = item.judge_add(qty, at).map(|verdict| match verdict {
                        Verdict::Answer(remaining) => remaining,
                        Verdict::Change(change) => {
                            let settle = item.settle_plan(&change, now, budget);
                            item.apply(&settle, change);
                            item.remaining_at(now)
                        }
                    });
                    prop_assert_eq!(got, expected);
                }
                Op::Deduct { user, qty, request, hold } => {
                    let (user, request) = (user_name(user), request.map(request_name));
                    let hold_until = hold.map(|ms| now + ms);
                    let expected = reference.deduct(&user, qty, request.as_deref(), Moment::Now(now), hold_until);
                    let order = Order { user: &user, qty, request_id: request.as_deref(), hold_until };
                    let got = item.judge_deduct(order, at).map(|verdict| match verdict {
                        Verdict::Answer(deduction) => deduction,
                        Verdict::Change(change) => {
                            let settle = item.settle_plan(&change, now, budget);
                            Deduction::Bought { remaining: item.apply(&settle, change) }
                        }
                    });
                    prop_assert_eq!(got, expected);
                }
                Op::Refund(request) => {
                    let request = request_name(request);
                    let expected = reference.refund(&request);
                    let got = item.judge_refund(&request, at).map(|verdict| match verdict {
                        Verdict::Answer(units) => units,
                        Verdict::Change(change) => {
                            let settle = item.settle_plan(&change, now, budget);
                            item.apply(&settle, change)
                        }
                    });
                    prop_assert_eq!(got, expected);
                }
                Op::Confirm(request) => {
                    let request = request_name(request);
                    let expected = reference.confirm(&request);
                    let got = match item.judge_confirm(&request, at) {
                        Verdict::Answer(confirmation) => confirmation,
                        Verdict::Change(change) => {
                            let settle = item.settle_plan(&change, now, budget);
                            item.apply(&settle, change);
                            Confirmation::Confirmed
                        }
                    };
                    prop_assert_eq!(got, expected);
                }
            }
            reference.release_due(now, usize::MAX);
            prop_assert_eq!(item.stats_at(now), reference.stats());
            prop_assert_eq!(item.remaining_at(now), reference.remaining());
            // A buyer's units and pending holds, read from the running
            // figures and the index by buyer, are those of the released item.
            for user in (0u8..8).map(user_name) {
                prop_assert_eq!(item.bought_at(&user, now), reference.bought(&user));
                let pending = |item: &SaleItem, now| {
                    item.pending_holds(now, Some(&user))
                        .map(|(id, request)| (id.to_vec(), request.qty, request.deadline))
                        .collect::<Vec<_>>()
                };
                let everyone: Vec<_> = reference
                    .pending_holds(now, None)
                    .filter(|(_, request)| request.user == user.as_slice())
                    .map(|(id, request)| (id.to_vec(), request.qty, request.deadline))
                    .collect();
                prop_assert_eq!(pending(&item, now), pending(&reference, now));
                prop_assert_eq!(pending(&reference, now), everyone);
            }
            let mut settled = item.clone();
            settled.release_due(now, usize::MAX);
            prop_assert_eq!(&settled, &reference);
            check_invariants(&item);
        }
    }
}

// --- Rebuilding an item chunk by chunk (SECKILL.LOADCHUNK) -----------------

fn chunks_of(item: &SaleItem) -> Vec<Vec<u8>> {
    let mut chunks = Vec::new();
    item.encode_chunks(|chunk| chunks.push(chunk.to_vec()));
    chunks
}

#[test]
fn a_chunked_rebuild_checks_the_item_once_its_records_are_in() {
    let mut original = limited(3_000, 2);
    for n in 0..2_500 {
        let (user, id) = (format!("u{n}"), format!("r{n}"));
        original
            .deduct(user.as_bytes(), 1, Some(id.as_bytes()), NOW, None)
            .unwrap();
    }
    let chunks = chunks_of(&original);
    assert!(chunks.len() > 3, "several record chunks");
    let (mut rebuilt, expected) = SaleItem::decode_header(&chunks[0]).unwrap();
    rebuilt.begin_chunked_load(expected).unwrap();
    for chunk in &chunks[1..] {
        assert!(rebuilt.is_partly_loaded());
        rebuilt.load_next_chunk(chunk).unwrap();
    }
    assert!(!rebuilt.is_partly_loaded());
    assert_eq!(rebuilt, original);
    assert_eq!(
        rebuilt.load_next_chunk(&chunks[1]),
        Err(DecodeError("no records are due for this item")),
        "records beyond the header's are refused"
    );
}

#[test]
fn a_chunked_rebuild_refuses_records_the_header_did_not_announce() {
    let mut original = limited(10, 0);
    original.deduct(b"a", 1, None, NOW, None).unwrap();
    original.deduct(b"b", 2, None, NOW, None).unwrap();
    let chunks = chunks_of(&original);
    let mut other = limited(10, 0);
    other.deduct(b"c", 1, None, NOW, None).unwrap();
    let extra = chunks_of(&other);
    let (mut rebuilt, expected) = SaleItem::decode_header(&chunks[0]).unwrap();
    rebuilt.begin_chunked_load(expected).unwrap();
    assert!(
        rebuilt.load_next_chunk(&extra[1]).is_ok(),
        "one of two buyers"
    );
    assert!(rebuilt.is_partly_loaded());
    assert!(
        rebuilt.load_next_chunk(&chunks[1]).is_err(),
        "three buyers where two were announced"
    );
}

/// A header announcing a million requests sizes the index for them; when
/// the load stops after one chunk, the item keeps only what its records
/// need.
#[test]
fn a_rebuild_cut_short_gives_back_what_its_header_reserved() {
    let original = item_with_buyers(400);
    let chunks = chunks_of(&original);
    let mut header = chunks[0].clone();
    let at = header.len() - 16;
    header[at + 8..].copy_from_slice(&1_000_000u64.to_le_bytes());
    let (mut cut, expected) = SaleItem::decode_header(&header).unwrap();
    cut.begin_chunked_load(expected).unwrap();
    cut.load_next_chunk(&chunks[1]).unwrap();
    let reserved = cut.heap_usage();
    assert_eq!(cut.end_partial_load(), Ok(()));
    let kept = cut.heap_usage();
    let loaded_whole = round_trip(&original).unwrap().heap_usage();
    assert!(kept * 20 < reserved, "{kept} of {reserved}");
    assert!(kept <= loaded_whole * 2, "{kept} against {loaded_whole}");
    assert_eq!((cut.stats().buyers, cut.stats().requests), (400, 400));
}

#[test]
fn a_rebuild_cut_short_keeps_only_records_that_agree_with_the_counters() {
    let mut original = limited(10, 0);
    original.deduct(b"a", 3, None, NOW, None).unwrap();
    original.deduct(b"b", 3, None, NOW, None).unwrap();
    let chunks = chunks_of(&original);
    // The first record chunk of a good item: a prefix that adds up.
    let (mut cut, expected) = SaleItem::decode_header(&chunks[0]).unwrap();
    cut.begin_chunked_load(Expected {
        buyers: expected.buyers + 1,
        ..expected
    })
    .unwrap();
    cut.load_next_chunk(&chunks[1]).unwrap();
    assert_eq!(cut.end_partial_load(), Ok(()));
    // A header that sold 3 units, and buyers holding 6.
    let mut small = limited(10, 0);
    small.deduct(b"z", 3, None, NOW, None).unwrap();
    let small_chunks = chunks_of(&small);
    let (mut forged, _) = SaleItem::decode_header(&small_chunks[0]).unwrap();
    forged
        .begin_chunked_load(Expected {
            buyers: 5,
            requests: 0,
        })
        .unwrap();
    let loaded = forged.load_next_chunk(&chunks[1]);
    assert!(
        loaded.is_err() || forged.end_partial_load().is_err(),
        "6 units held of 3 sold"
    );
}

// --- Stock transfers between the parts of a split item ---------------------

fn take<'a>(id: &'a [u8], requested: i64) -> Take<'a> {
    Take {
        transfer_id: id,
        requested,
        destination: Some(b"part:1"),
        decided: None,
    }
}

#[test]
fn take_moves_what_is_in_stock_once_per_transfer_id() {
    let mut source = limited(5, 0);
    assert_eq!(source.take(take(b"t1", 3)), Ok(3));
    assert_eq!(source.remaining(), 2);
    // A replay takes nothing more and answers the same.
    assert_eq!(source.take(take(b"t1", 3)), Ok(3));
    assert_eq!(source.remaining(), 2);
    // Up to what is there: a partial take.
    assert_eq!(source.take(take(b"t2", 10)), Ok(2));
    assert_eq!(source.remaining(), 0);
    // Nothing to take: nothing recorded, so a later retry may take what
    // arrived since.
    assert_eq!(source.take(take(b"t3", 1)), Ok(0));
    assert_eq!(source.transfers().map(|t| t.iter().count()), Some(2));
    // The same id for another quantity is refused, as for request ids.
    assert_eq!(
        source.take(take(b"t1", 4)),
        Err(ItemError::TransferMismatch)
    );
    let stats = source.stats();
    assert_eq!((stats.moved_out, stats.moved_in), (5, 0));
    // Open until settled; a take of nothing has nothing to deliver.
    let open: Vec<_> = source
        .open_transfers()
        .map(|(id, units, _)| (id.to_vec(), units))
        .collect();
    assert_eq!(open, [(b"t1".to_vec(), 3), (b"t2".to_vec(), 2)]);
    assert_eq!(source.settle(b"t1"), 1);
    assert_eq!(source.settle(b"t1"), 0);
    assert_eq!(source.settle(b"t3"), -4);
    assert_eq!(source.settle(b"nope"), -4);
    assert_eq!(source.open_transfers().count(), 1);
}

#[test]
fn add_with_a_transfer_id_adds_once_and_replays_its_reply() {
    let mut part = limited(1, 2);
    assert_eq!(part.receive(b"t1", 4), Ok(5));
    part.deduct(b"alice", 2, None, NOW, None).unwrap();
    assert_eq!(part.receive(b"t1", 4), Ok(5), "replayed, not added again");
    assert_eq!(part.remaining(), 3);
    assert_eq!(part.receive(b"t1", 5), Err(ItemError::TransferMismatch));
    // Ids live in their own namespace, one direction each.
    assert_eq!(part.take(take(b"t1", 1)), Err(ItemError::TransferMismatch));
    assert_eq!(part.stats().moved_in, 4);
    assert_eq!(part.settle(b"t1"), -4, "nothing given out under t1");
}

#[test]
fn refunds_after_a_move_put_units_back_where_they_were_sold() {
    let (mut a, mut b) = (limited(4, 0), limited(0, 0));
    a.deduct(b"alice", 2, Some(b"o1"), NOW, None).unwrap();
    assert_eq!(a.take(take(b"t1", 10)), Ok(2));
    assert_eq!(b.receive(b"t1", 2), Ok(2));
    a.settle(b"t1");
    assert_eq!(a.refund(b"o1"), Ok(2));
    assert_eq!((a.remaining(), b.remaining()), (2, 2));
    for part in [&a, &b] {
        let s = part.stats();
        assert_eq!(
            s.stock + s.sold - s.refunded - s.expired + s.moved_out - s.moved_in,
            s.initial + s.added
        );
    }
}

#[test]
fn an_unlimited_item_moves_nothing_and_bad_transfers_are_refused() {
    let mut unlimited = SaleItem::new(Stock::Unlimited, 0);
    assert_eq!(
        unlimited.take(take(b"t", 1)),
        Err(ItemError::UnlimitedTransfer)
    );
    assert_eq!(
        unlimited.receive(b"t", 1),
        Err(ItemError::UnlimitedTransfer)
    );
    let mut part = limited(3, 0);
    let before = part.clone();
    assert_eq!(
        part.take(take(b"t", 0)),
        Err(ItemError::NonPositiveQuantity)
    );
    assert_eq!(part.take(take(b"", 1)), Err(ItemError::BadId));
    assert_eq!(part.receive(b"t", -1), Err(ItemError::NonPositiveQuantity));
    assert_eq!(
        part.receive(&[b'x'; MAX_ID_LEN + 1], 1),
        Err(ItemError::BadId)
    );
    assert_eq!(part.receive(b"t", i64::MAX - 3), Err(ItemError::Overflow));
    assert_eq!(part, before);
}

#[test]
fn a_replica_records_the_units_its_master_took() {
    let mut replica = limited(5, 0);
    let decided = Take {
        decided: Some(2),
        ..take(b"t1", 4)
    };
    assert_eq!(replica.take(decided), Ok(2));
    assert_eq!(replica.remaining(), 3);
    // A replay, with or without the master's figure, answers the same.
    assert_eq!(replica.take(take(b"t1", 4)), Ok(2));
}

#[test]
fn transfers_survive_a_save_and_load() {
    let mut part = limited(9, 0);
    part.take(take(b"t1", 4)).unwrap();
    part.take(Take {
        destination: None,
        ..take(b"t2", 1)
    })
    .unwrap();
    part.settle(b"t2");
    part.receive(b"t3", 7).unwrap();
    let mut chunks = Vec::new();
    part.encode_chunks(|chunk| chunks.push(chunk.to_vec()));
    let (mut loaded, expected): (SaleItem, Expected) = SaleItem::decode_header(&chunks[0]).unwrap();
    for chunk in &chunks[1..] {
        loaded.load_chunk(chunk).unwrap();
    }
    loaded.check_loaded(expected).unwrap();
    assert_eq!(loaded, part);
    assert_eq!(loaded.transfers(), part.transfers());
    assert!(is_header(&chunks[0]));
    // A header whose transfers do not add up to the moved units is refused.
    let mut damaged = chunks[0].clone();
    let moved_out_at = damaged.len() - 16 - part_transfer_bytes(&part) - 4 - 16;
    damaged[moved_out_at] ^= 1;
    assert_eq!(
        SaleItem::decode_header(&damaged).map(|_| ()),
        Err(DecodeError("transfers differ from the units moved"))
    );
}

/// Bytes the transfer records of `part` take in its header.
fn part_transfer_bytes(part: &SaleItem) -> usize {
    let mut out = Vec::new();
    part.encode_chunks(|chunk| {
        if out.is_empty() {
            out = chunk.to_vec();
        }
    });
    let mut bare = part.clone();
    if let Some(rare) = bare.rare.as_mut() {
        rare.transfers = Transfers::default();
    }
    let mut without = Vec::new();
    bare.encode_chunks(|chunk| {
        if without.is_empty() {
            without = chunk.to_vec();
        }
    });
    out.len() - without.len()
}

#[derive(Clone, Debug)]
enum SplitOp {
    /// A buyer of part `part` buys `qty` units, with request id `n`.
    Buy {
        part: usize,
        user: u8,
        qty: i64,
    },
    Refund {
        part: usize,
        request: u8,
    },
    /// A mover takes up to `qty` from `from` for `to` under id `n`; it may
    /// die before adding (`deliver` false), and may retry both steps.
    Move {
        from: usize,
        to: usize,
        n: u8,
        qty: i64,
        deliver: bool,
        settle: bool,
    },
    /// The next mover finishes every open transfer from what the parts hold.
    Recover,
}

fn split_op() -> impl Strategy<Value = SplitOp> {
    prop_oneof![
        4 => (0usize..3, 0u8..10, 1i64..4).prop_map(|(part, user, qty)| SplitOp::Buy { part, user, qty }),
        1 => (0usize..3, 0u8..30).prop_map(|(part, request)| SplitOp::Refund { part, request }),
        3 => (0usize..3, 0usize..3, 0u8..12, 1i64..8, any::<bool>(), any::<bool>())
            .prop_map(|(from, to, n, qty, deliver, settle)| SplitOp::Move { from, to, n, qty, deliver, settle }),
        1 => Just(SplitOp::Recover),
    ]
}

/// Destinations are recorded as the part's index.
fn part_name(index: usize) -> Vec<u8> {
    format!("part:{index}").into_bytes()
}

proptest! {
    /// Over any mix of purchases, refunds, moves that die half-way and are
    /// retried, and recoveries, no unit is created or lost: summed over the
    /// parts, stock plus units sold and not given back is the stock split
    /// at the start, and each part keeps its own bookkeeping. Once every
    /// open transfer is recovered, the units moved out equal those moved
    /// in.
    #[test]
    fn moves_between_parts_never_create_or_lose_a_unit(
        stocks in proptest::collection::vec(0i64..20, 3),
        ops in proptest::collection::vec(split_op(), 0..60),
    ) {
        let mut parts: Vec<SaleItem> = stocks.iter().map(|units| limited(*units, 2)).collect();
        let total: i64 = stocks.iter().sum();
        let mut request = 0u32;
        for op in &ops {
            match op {
                SplitOp::Buy { part, user, qty } => {
                    request += 1;
                    let id = format!("o{request}");
                    let _ = parts[*part].deduct(&[*user], *qty, Some(id.as_bytes()), NOW, None);
                }
                SplitOp::Refund { part, request } => {
                    let _ = parts[*part].refund(format!("o{request}").as_bytes());
                }
                SplitOp::Move { from, to, n, qty, deliver, settle } => {
                    if from == to {
                        continue;
                    }
                    let id = format!("m{from}>{to}:{n}");
                    let destination = part_name(*to);
                    let taken = parts[*from].take(Take {
                        transfer_id: id.as_bytes(),
                        requested: *qty,
                        destination: Some(&destination),
                        decided: None,
                    });
                    if let (Ok(taken), true) = (taken, *deliver) {
                        if taken > 0 {
                            parts[*to].receive(id.as_bytes(), taken).unwrap();
                            if *settle {
                                parts[*from].settle(id.as_bytes());
                            }
                        }
                    }
                }
                SplitOp::Recover => recover(&mut parts),
            }
            let mut units = 0i64;
            for part in &parts {
                let s = part.stats();
                prop_assert_eq!(
                    s.stock + s.sold - s.refunded - s.expired + s.moved_out - s.moved_in,
                    s.initial + s.added
                );
                units += s.stock + s.sold - s.refunded - s.expired;
            }
            // Units in flight (taken, not yet added) are the open transfers
            // not yet delivered.
            let in_flight: i64 = undelivered(&parts);
            prop_assert_eq!(units + in_flight, total);
        }
        recover(&mut parts);
        let moved_out: i64 = parts.iter().map(SaleItem::moved_out).sum();
        let moved_in: i64 = parts.iter().map(SaleItem::moved_in).sum();
        prop_assert_eq!(moved_out, moved_in);
        prop_assert!(parts.iter().all(|part| part.open_transfers().count() == 0));
    }
}

/// What a mover does at start: adds every open transfer to its destination
/// (a replay if it arrived already) and settles it at its source.
fn recover(parts: &mut [SaleItem]) {
    for from in 0..parts.len() {
        let open: Vec<(Vec<u8>, i64, Vec<u8>)> = parts[from]
            .open_transfers()
            .map(|(id, units, to)| (id.to_vec(), units, to.unwrap_or_default().to_vec()))
            .collect();
        for (id, units, to) in open {
            let to = (0..parts.len()).find(|i| part_name(*i) == to).unwrap();
            parts[to].receive(&id, units).unwrap();
            assert_eq!(parts[from].settle(&id), 1);
        }
    }
}

/// Units taken out of a part and not received by their destination.
fn undelivered(parts: &[SaleItem]) -> i64 {
    let mut units = 0;
    for part in parts {
        for (id, taken, to) in part.open_transfers() {
            let to = (0..parts.len())
                .find(|i| Some(part_name(*i).as_slice()) == to)
                .unwrap();
            let arrived = parts[to].transfers().is_some_and(|t| {
                t.iter()
                    .any(|(other, transfer)| other == id && matches!(transfer, Transfer::In { .. }))
            });
            if !arrived {
                units += taken;
            }
        }
    }
    units
}

// --- Import ------------------------------------------------------------

fn import_record() -> impl Strategy<Value = (u8, u8, i64, u8, i64)> {
    (0u8..6, 0u8..40, 1i64..4, 0u8..6, 0i64..3_000)
}

proptest! {
    /// Whatever records an import is given, it refuses them or leaves an
    /// item whose bookkeeping holds, that saves and loads again, and whose
    /// stock and buyers are those of the records.
    #[test]
    fn an_import_is_refused_or_leaves_an_item_that_loads_again(
        stock in 0i64..40,
        limit in 0i64..6,
        batches in proptest::collection::vec(proptest::collection::vec(import_record(), 0..12), 1..5),
    ) {
        let mut item = limited(stock, limit);
        let names: Vec<(String, String)> = (0..40).map(|n| (format!("user:{}", n % 6), format!("order:{n}"))).collect();
        for batch in &batches {
            let records: Vec<ImportRecord> = batch
                .iter()
                .map(|(user, request, qty, status, deadline)| {
                    let user = names[usize::from(*user)].0.as_bytes();
                    let status = [Status::Purchased, Status::Held, Status::Confirmed, Status::Refunded, Status::Lapsed]
                        .get(usize::from(*status));
                    match status {
                        None => ImportRecord::Buyer { user, units: *qty },
                        Some(status) => ImportRecord::Request {
                            id: names[usize::from(*request)].1.as_bytes(),
                            user,
                            qty: *qty,
                            status: *status,
                            deadline: *deadline,
                            reply: 7,
                        },
                    }
                })
                .collect();
            let before_stock = item.remaining();
            let before = item.stats();
            match item.judge_import(records.clone()) {
                Err(_) => prop_assert_eq!(item.stats(), before),
                Ok(Verdict::Answer(_)) => prop_assert!(false, "an import always changes"),
                Ok(Verdict::Change(change)) => {
                    prop_assert_eq!(item.apply(&[], change), records.len() as i64);
                    let held: i64 = records.iter().map(|record| record.units_held()).sum();
                    prop_assert_eq!(item.remaining(), before_stock - held);
                    prop_assert!(item.check_bookkeeping().is_ok(), "{:?}", item.check_bookkeeping());
                    let loaded = round_trip(&item).map_err(|e| TestCaseError::fail(e.0))?;
                    prop_assert_eq!(loaded.stats(), item.stats());
                }
            }
            if limit > 0 {
                for (user, units) in item.buyers() {
                    prop_assert!(units <= limit, "{:?} holds {}", user, units);
                }
            }
        }
    }
}

proptest! {
    /// The sold-out shortcut of a plain DEDUCT answers what the judge
    /// answers, at any moment and for any buyer, whatever holds, window
    /// and sales the item has.
    #[test]
    fn sold_out_for_answers_as_the_judge_does(
        stock in 0i64..4,
        sales in proptest::collection::vec((0u8..4, 1i64..3, any::<bool>()), 0..6),
        window in prop::option::of((0i64..30, 0i64..30)),
        qty in 1i64..5,
        buyer in 0u8..5,
        at in 0i64..40,
    ) {
        let mut item = limited(stock, 2);
        if let Some((start, end)) = window {
            if let Ok(window) = Window::new(start, if end > start { end } else { 0 }) {
                item.set_window(window);
            }
        }
        for (n, (user, qty, held)) in sales.iter().enumerate() {
            let id = format!("r{n}");
            let until = held.then_some(20);
            let _ = item.deduct(&[b'u', *user], *qty, Some(id.as_bytes()), Moment::Now(10), until);
        }
        if item.sold_out_for(qty) {
            let user = [b'u', buyer];
            for moment in [Moment::Now(at), Moment::Decided(at), Moment::Untimed] {
                prop_assert_eq!(
                    item.judge_deduct(order(&user, qty, None), moment).map(|verdict| match verdict {
                        Verdict::Answer(deduction) => Some(deduction),
                        Verdict::Change(_) => None,
                    }),
                    Ok(Some(Deduction::SoldOut))
                );
            }
        }
    }
}
