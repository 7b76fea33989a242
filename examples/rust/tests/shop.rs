//! The example service driven over HTTP through a whole small sale,
//! against a real redis-server with the module: the service listens on a
//! free loopback port, and buyers race over HTTP.

use reqwest::{Client, Response, StatusCode};
use seckill_harness::Server;
use serde_json::Value;
use std::collections::BTreeMap;

const ITEM: &str = "{sku:shop}";

/// The service on a free loopback port, over `server`, a payment "paid"
/// once `wait_replicas` replicas have it; its base URL.
async fn start_shop(server: &Server, wait_replicas: i64) -> String {
    let con = seckill_shop::connect(&server.url()).await.expect("connect");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind a loopback port");
    let address = listener.local_addr().expect("local address");
    let shop = seckill_shop::shop(seckill_shop::Shop { con, wait_replicas });
    tokio::spawn(async move { axum::serve(listener, shop).await });
    format!("http://{address}")
}

async fn post(http: &Client, url: String, query: &[(&str, &str)]) -> Response {
    http.post(url).query(query).send().await.expect("POST")
}

async fn json(response: Response) -> (StatusCode, Value) {
    let status = response.status();
    (status, response.json().await.expect("a JSON body"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_small_sale_sells_out_exactly_keeps_the_limit_and_never_sells_a_retry_twice() {
    let server = Server::start();
    let base = start_shop(&server, 0).await;
    let http = Client::new();
    let sale = [("stock", "5"), ("limit", "1")];
    let opened = post(&http, format!("{base}/items/{ITEM}"), &sale).await;
    assert_eq!(opened.status(), StatusCode::CREATED);
    let again = post(&http, format!("{base}/items/{ITEM}"), &sale).await;
    assert_eq!(again.status(), StatusCode::OK);

    // 20 buyers race for 5 units, and each sends its click twice (a
    // retry after a timeout).
    let buy = |n: usize| {
        let (http, base) = (http.clone(), base.clone());
        async move {
            let user = format!("u{n}");
            let query = [("item", ITEM), ("user", user.as_str())];
            json(post(&http, format!("{base}/orders/o-{n}"), &query).await).await
        }
    };
    let race = |_| async {
        let calls: Vec<_> = (0..20).map(|n| tokio::spawn(buy(n))).collect();
        let mut replies = Vec::new();
        for call in calls {
            replies.push(call.await.expect("a buyer"));
        }
        replies
    };
    let first = race(()).await;
    let retried = race(()).await;
    let held: Vec<usize> = (0..20).filter(|n| first[*n].0 == StatusCode::CREATED).collect();
    let mut statuses = BTreeMap::new();
    for (status, _) in &first {
        *statuses.entry(status.as_u16()).or_insert(0) += 1;
    }
    assert_eq!(statuses, BTreeMap::from([(201, 5), (409, 15)]));
    for (status, body) in &first {
        if *status == StatusCode::CONFLICT {
            assert_eq!(body["error"], "sold out");
        }
    }
    // A retry gets the first answer: the held orders are held still,
    // nobody else got a unit.
    let statuses =
        |replies: &[(StatusCode, Value)]| -> Vec<StatusCode> { replies.iter().map(|(status, _)| *status).collect() };
    assert_eq!(statuses(&retried), statuses(&first));
    let stock = || async {
        let response = http.get(format!("{base}/items/{ITEM}")).send().await;
        json(response.expect("GET")).await.1["stock"].clone()
    };
    assert_eq!(stock().await, 0);

    // An order id is one purchase: used again for someone else, refused.
    let reused = format!("{base}/orders/o-{}", held[0]);
    let (status, body) = json(post(&http, reused, &[("item", ITEM), ("user", "someone-else")]).await).await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_eq!(body["error"], "order id already used for another purchase");

    // A held order tells when it must be paid by.
    let of_item = [("item", ITEM)];
    let state = |order: String| {
        let (http, base) = (http.clone(), base.clone());
        async move {
            let response = http.get(format!("{base}/orders/{order}")).query(&[("item", ITEM)]);
            json(response.send().await.expect("GET")).await
        }
    };
    let (status, body) = state(format!("o-{}", held[0])).await;
    assert_eq!((status, body["status"].as_str()), (StatusCode::OK, Some("held")));
    assert_eq!(body["user"], format!("u{}", held[0]));
    assert!(body["pay_by_ms"].as_i64().expect("a deadline") > 0);
    let (status, body) = state("nope".into()).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (StatusCode::NOT_FOUND, Some("no such order"))
    );

    // Three pay (one twice), one cancels (twice), one lets it be.
    for n in &held[..3] {
        let (status, body) = json(post(&http, format!("{base}/orders/o-{n}/pay"), &of_item).await).await;
        assert_eq!((status, body["status"].clone()), (StatusCode::OK, "paid".into()));
    }
    let paid_again = post(&http, format!("{base}/orders/o-{}/pay", held[0]), &of_item).await;
    assert_eq!(paid_again.status(), StatusCode::OK);
    let (_, body) = state(format!("o-{}", held[0])).await;
    assert_eq!(body["status"], "confirmed");
    let (status, body) = json(post(&http, format!("{base}/orders/nope/pay"), &of_item).await).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (StatusCode::NOT_FOUND, Some("no such order"))
    );
    let cancel = format!("{base}/orders/o-{}/cancel", held[3]);
    let (_, body) = json(post(&http, cancel.clone(), &of_item).await).await;
    assert_eq!(body["units_returned"], 1);
    let (_, body) = json(post(&http, cancel, &of_item).await).await;
    assert_eq!(body["units_returned"], 0);
    let pay_cancelled = format!("{base}/orders/o-{}/pay", held[3]);
    let (status, body) = json(post(&http, pay_cancelled, &of_item).await).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (StatusCode::GONE, Some("order cancelled"))
    );
    let user = format!("u{}", held[3]);
    let buy_cancelled = format!("{base}/orders/o-{}", held[3]);
    let rebought = post(&http, buy_cancelled, &[("item", ITEM), ("user", user.as_str())]).await;
    assert_eq!(rebought.status(), StatusCode::GONE);
    assert_eq!(stock().await, 1);

    // One buyer, one unit: a buyer who paid cannot take the unit given back.
    let user = format!("u{}", held[0]);
    let query = [("item", ITEM), ("user", user.as_str())];
    let (status, body) = json(post(&http, format!("{base}/orders/second-try"), &query).await).await;
    assert_eq!(
        (status, body["error"].clone()),
        (StatusCode::CONFLICT, "limit reached".into())
    );

    // The unit given back is sold once more, to one of the buyers who
    // missed out, and no more.
    let mut late = Vec::new();
    for n in (0..20).filter(|n| !held.contains(n)) {
        let (http, base) = (http.clone(), base.clone());
        late.push(tokio::spawn(async move {
            let user = format!("u{n}");
            let query = [("item", ITEM), ("user", user.as_str())];
            post(&http, format!("{base}/orders/late-{n}"), &query).await.status()
        }));
    }
    let mut late_statuses = Vec::new();
    for call in late {
        late_statuses.push(call.await.expect("a late buyer").as_u16());
    }
    late_statuses.sort_unstable();
    let mut expected = vec![201];
    expected.extend(std::iter::repeat_n(409, 14));
    assert_eq!(late_statuses, expected);
    assert_eq!(stock().await, 0);
    let missing = http.get(format!("{base}/items/{{sku:none}}")).send().await;
    assert_eq!(missing.expect("GET").status(), StatusCode::NOT_FOUND);
}

/// A payment is "paid" once the replicas asked for have it; asked for more
/// than there are, it is kept on the master and answered 503, and the
/// webhook sent again is answered the same until they do.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_payment_is_paid_once_the_replicas_asked_for_have_it() {
    let master = Server::start();
    let _replica = Server::start_replica_of(&master);
    let http = Client::new();
    let one = start_shop(&master, 1).await;
    let two = start_shop(&master, 2).await;
    let sale = [("stock", "5"), ("limit", "1")];
    post(&http, format!("{one}/items/{ITEM}"), &sale).await;
    for (n, base) in [(1, &one), (2, &two)] {
        let user = format!("u{n}");
        let query = [("item", ITEM), ("user", user.as_str())];
        let held = post(&http, format!("{base}/orders/o-{n}"), &query).await;
        assert_eq!(held.status(), StatusCode::CREATED);
    }
    let of_item = [("item", ITEM)];
    // Sent again while the replica has not acknowledged it in time, as a
    // payment provider sends its webhook again: confirming again is safe.
    let mut paid = None;
    for _ in 0..5 {
        let (status, body) = json(post(&http, format!("{one}/orders/o-1/pay"), &of_item).await).await;
        if status != StatusCode::SERVICE_UNAVAILABLE {
            paid = Some((status, body));
            break;
        }
    }
    let (status, body) = paid.expect("paid within five deliveries of the webhook");
    assert_eq!(
        (status, body["status"].as_str()),
        (StatusCode::OK, Some("paid")),
        "{body}"
    );
    for _ in 0..2 {
        let (status, body) = json(post(&http, format!("{two}/orders/o-2/pay"), &of_item).await).await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    }
    // Confirmed on the master (and on the one replica) all the same.
    let response = http.get(format!("{one}/orders/o-2")).query(&of_item);
    let (_, body) = json(response.send().await.expect("GET")).await;
    assert_eq!(body["status"], "confirmed");
}

/// An order whose hold lapsed is told from one cancelled and one never
/// placed, by the payment and by the cancellation alike.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_order_is_told_from_a_cancelled_and_an_unknown_one() {
    let server = Server::start();
    let base = start_shop(&server, 0).await;
    let http = Client::new();
    post(&http, format!("{base}/items/{ITEM}"), &[("stock", "5"), ("limit", "2")]).await;
    for order in ["late", "changed-mind"] {
        let query = [("item", ITEM), ("user", "ann")];
        let held = post(&http, format!("{base}/orders/{order}"), &query).await;
        assert_eq!(held.status(), StatusCode::CREATED);
    }
    // The buyer does not pay in time: the hold lapses, as at its deadline.
    let mut con = server.client();
    let released: i64 = seckill_harness::ok(&mut con, &["SECKILL.RELEASE", ITEM, "late"]);
    assert_eq!(released, 1);
    let of_item = [("item", ITEM)];
    let cancel = |order: &str| post(&http, format!("{base}/orders/{order}/cancel"), &of_item);
    let (_, body) = json(cancel("changed-mind").await).await;
    assert_eq!(body["units_returned"], 1);

    let pay = |order: &str| post(&http, format!("{base}/orders/{order}/pay"), &of_item);
    let (status, body) = json(pay("late").await).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (StatusCode::GONE, Some("order expired"))
    );
    let (status, body) = json(pay("changed-mind").await).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (StatusCode::GONE, Some("order cancelled"))
    );
    let (status, body) = json(pay("never-placed").await).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (StatusCode::NOT_FOUND, Some("no such order"))
    );

    // Cancelling an expired order gives nothing back again: its unit went
    // back when it lapsed.
    let (status, body) = json(cancel("late").await).await;
    assert_eq!((status, body["status"].as_str()), (StatusCode::OK, Some("cancelled")));
    assert_eq!(body["units_returned"], 0);
    let (status, body) = json(cancel("never-placed").await).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (StatusCode::NOT_FOUND, Some("no such order"))
    );
    let missing = format!("{base}/orders/late/cancel");
    let (status, body) = json(post(&http, missing, &[("item", "{sku:none}")]).await).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (StatusCode::NOT_FOUND, Some("no such sale"))
    );

    let (_, body) = json(http.get(format!("{base}/items/{ITEM}")).send().await.expect("GET")).await;
    assert_eq!(body["stock"], 5);
}
