//! Many clients racing for a small stock: nothing oversold, nobody above
//! the limit, every unit accounted for.

mod common;

use common::{info_field, ok, Server};
use std::collections::BTreeSet;
use std::thread;

const STOCK: i64 = 100;
const LIMIT: i64 = 2;
const CLIENTS: usize = 16;
const USERS: usize = 120;
const ATTEMPTS_PER_CLIENT: usize = 150;

#[test]
fn racing_clients_sell_exactly_the_stock() {
    let server = Server::start();
    let mut con = server.client();
    let stock = STOCK.to_string();
    let limit = LIMIT.to_string();
    ok::<i64>(
        &mut con,
        &["SECKILL.INIT", "sku:hot", &stock, "LIMIT", &limit],
    );

    let url = server.url();
    let clients: Vec<_> = (0..CLIENTS)
        .map(|client| {
            let url = url.clone();
            thread::spawn(move || {
                let mut con = redis::Client::open(url)
                    .and_then(|c| c.get_connection())
                    .expect("connect");
                let mut successes = Vec::new();
                for attempt in 0..ATTEMPTS_PER_CLIENT {
                    // Spread users over clients so that many race per user.
                    let user = format!("user:{}", (attempt * 7 + client * 13) % USERS);
                    let id = format!("req:{client}:{attempt}");
                    let reply: i64 = redis::cmd("SECKILL.DEDUCT")
                        .arg("sku:hot")
                        .arg(&user)
                        .arg(1)
                        .arg("ID")
                        .arg(&id)
                        .query(&mut con)
                        .expect("deduct");
                    assert!(reply >= -2, "unexpected reply {reply}");
                    if reply >= 0 {
                        successes.push(reply);
                    }
                }
                successes
            })
        })
        .collect();
    let successes: Vec<i64> = clients
        .into_iter()
        .flat_map(|client| client.join().expect("client thread"))
        .collect();

    // Every remaining-stock figure from 0 to STOCK-1 was handed out once.
    assert_eq!(successes.len() as i64, STOCK);
    let distinct: BTreeSet<i64> = successes.iter().copied().collect();
    assert_eq!(distinct, (0..STOCK).collect::<BTreeSet<_>>());

    assert_eq!(ok::<i64>(&mut con, &["SECKILL.GET", "sku:hot"]), 0);
    assert_eq!(info_field(&mut con, "sku:hot", "sold"), STOCK);
    assert_eq!(info_field(&mut con, "sku:hot", "requests"), STOCK);
    let mut total = 0;
    for user in 0..USERS {
        let held: i64 = ok(
            &mut con,
            &["SECKILL.BOUGHT", "sku:hot", &format!("user:{user}")],
        );
        assert!(held <= LIMIT, "user:{user} holds {held}");
        total += held;
    }
    assert_eq!(total, STOCK);
}
