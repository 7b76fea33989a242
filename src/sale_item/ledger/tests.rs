use super::*;

#[test]
fn the_arena_walk_visits_every_record_once_in_order() {
    let mut ledger = Ledger::new();
    let mut expected_requests = Vec::new();
    for n in 0..5_000u64 {
        // Ids of every length from 1 to 128 bytes, and varints of every
        // width.
        let user = vec![b'u'; 1 + (n as usize % 128)];
        let buyer = match ledger.find_buyer(&user) {
            Lookup::Found(buyer) => buyer,
            Lookup::Missing(hash) => ledger.add_buyer(hash, &user, 0).unwrap(),
        };
        let id = format!("{n:0>width$}", width = 1 + (n as usize * 7) % 128);
        let Lookup::Missing(hash) = ledger.find_request(id.as_bytes()) else {
            panic!("fresh id");
        };
        let request = NewRequest {
            qty: 1 + (n as i64) * 1_000_003 % i64::MAX,
            reply: (1i64 << (n % 63)) - 1,
            state: RequestState::from_code((n % 4) as u8).unwrap(),
            deadline: i64::MAX - n as i64,
        };
        expected_requests.push(
            ledger
                .add_request(hash, id.as_bytes(), &buyer, request)
                .unwrap(),
        );
    }
    let walked: Vec<u32> = ledger.request_handles_in_arena_order().collect();
    assert_eq!(walked, expected_requests, "arena order is insertion order");
    let mut indexed: Vec<u32> = ledger.request_handles().collect();
    indexed.sort_unstable();
    assert_eq!(indexed, walked);
    let buyers = ledger
        .walk()
        .filter(|(_, kind)| *kind == RecordKind::Buyer)
        .count();
    assert_eq!(buyers, 128);
    assert_eq!(buyers, ledger.buyer_count());
}

#[test]
fn sorting_by_handle_is_stable_and_exact() {
    let mut records: Vec<(u32, u32)> = (0..100_000u32)
        .map(|n| (n.wrapping_mul(2_654_435_761) % 5_000_000, n))
        .collect();
    let mut expected = records.clone();
    expected.sort_by_key(|(handle, _)| *handle);
    sort_by_handle(&mut records, |(handle, _)| *handle);
    assert_eq!(records, expected);
}
