//! The Rust client against a real server with the module, and a real
//! 3-master cluster: every command, RESP2 and RESP3, pipelines and
//! transactions, typed errors, and routing without redirections.

use redis::Connection;
use seckill_client::command;
use seckill_client::split::{self, SplitItem};
use seckill_client::{
    AsyncSeckillCommands, ConfirmOutcome, Deduct, DeductResult, ErrorKind, Expiry, Hold, Init,
    ItemFigure, ItemInfo, Order, OrderConfirmation, OrderLine, OrderResult, Outcome, RefundOutcome,
    RefundResult, RequestStatus, SeckillCommands, SettleOutcome, Stock, Transfer, UNLIMITED_STOCK,
};
use seckill_harness::cluster::Cluster;
use seckill_harness::{ok, server_info, Server};

fn connect(server: &Server, resp3: bool) -> Connection {
    let url = format!(
        "redis://127.0.0.1:{}/{}",
        server.port,
        if resp3 { "?protocol=resp3" } else { "" }
    );
    redis::Client::open(url).unwrap().get_connection().unwrap()
}

fn now_ms(con: &mut Connection) -> i64 {
    let time: Vec<i64> = ok(con, &["TIME"]);
    time[0] * 1000 + time[1] / 1000
}

/// Every command once, with its typed reply, under either protocol.
fn every_command(con: &mut Connection) {
    let key = "{sku:1}";
    assert!(con
        .seckill_init(
            &Init::new(key, 10)
                .limit(3)
                .stream("{sku:1}:orders", Some(100))
        )
        .unwrap());
    assert!(
        !con.seckill_init(&Init::new(key, 99)).unwrap(),
        "left untouched"
    );

    let bought = con
        .seckill_deduct(&Deduct::new(key, "ann", 2).request_id("o1"))
        .unwrap();
    assert_eq!(
        bought,
        DeductResult {
            outcome: Outcome::Bought,
            stock: Some(8),
            deadline: None
        }
    );
    assert!(bought.bought());
    // A retry gets the very same reply.
    let replay = con
        .seckill_deduct(&Deduct::new(key, "ann", 2).request_id("o1"))
        .unwrap();
    assert_eq!(replay, bought);
    let limit = con.seckill_deduct(&Deduct::new(key, "ann", 2)).unwrap();
    assert_eq!((limit.outcome, limit.stock), (Outcome::LimitReached, None));
    let sold_out = con.seckill_deduct(&Deduct::new(key, "bob", 9)).unwrap();
    assert_eq!(sold_out.outcome, Outcome::SoldOut);
    let no_item = con
        .seckill_deduct(&Deduct::new("{sku:1}:none", "bob", 1))
        .unwrap();
    assert_eq!(no_item.outcome, Outcome::NoItem);

    let deadline = now_ms(con) + 600_000;
    let held = con
        .seckill_deduct(
            &Deduct::new(key, "cat", 1)
                .request_id("h1")
                .hold_until(deadline),
        )
        .unwrap();
    assert_eq!((held.stock, held.deadline), (Some(7), Some(deadline)));
    con.seckill_deduct(&Deduct::new(key, "dan", 1).request_id("h2").hold(600))
        .unwrap();
    let holds = con.seckill_holds(key, None::<&str>).unwrap().unwrap();
    assert_eq!(holds.len(), 2);
    assert_eq!(
        holds[0],
        Hold {
            request_id: "h1".into(),
            user: "cat".into(),
            qty: 1,
            deadline,
            variant: None
        }
    );
    let dans = con.seckill_holds(key, Some("dan")).unwrap().unwrap();
    assert_eq!(dans.len(), 1);
    let state = |con: &mut redis::Connection, id: &str| {
        con.seckill_status(key, id).unwrap().map(|state| {
            let status = state.status.name();
            (status, state.user, state.qty, state.deadline)
        })
    };
    assert_eq!(
        state(con, "h1"),
        Some(("held", Some("cat".into()), 1, deadline))
    );
    assert_eq!(state(con, "never"), Some(("unknown", None, 0, 0)));
    assert_eq!(con.seckill_status("{sku:1}:none", "h1").unwrap(), None);
    assert_eq!(
        con.seckill_confirm(key, "h1").unwrap(),
        ConfirmOutcome::Confirmed
    );
    assert_eq!(
        state(con, "h1"),
        Some(("confirmed", Some("cat".into()), 1, deadline))
    );
    assert_eq!(
        con.seckill_confirm(key, "h1").unwrap(),
        ConfirmOutcome::AlreadyFinal
    );
    assert_eq!(con.seckill_release(key, &["h2", "nope"]).unwrap(), Some(1));
    assert_eq!(
        con.seckill_status(key, "h2")
            .unwrap()
            .map(|state| state.status),
        Some(RequestStatus::Lapsed)
    );
    assert_eq!(
        con.seckill_confirm(key, "h2").unwrap(),
        ConfirmOutcome::Lapsed
    );
    let cancelled = con
        .seckill_deduct(&Deduct::new(key, "dan", 1).request_id("h2").hold(600))
        .unwrap();
    assert_eq!(cancelled.outcome, Outcome::Cancelled);
    assert_eq!(
        con.seckill_refund(key, "o1").unwrap(),
        RefundResult {
            outcome: RefundOutcome::Refunded,
            units: Some(2)
        }
    );
    let again = con.seckill_refund(key, "o1").unwrap();
    assert_eq!(
        (again.outcome, again.units),
        (RefundOutcome::AlreadyRefunded, None)
    );
    assert_eq!(con.seckill_add(key, 5).unwrap(), Some(14));
    assert_eq!(con.seckill_get(key).unwrap(), Some(14));
    assert_eq!(con.seckill_bought(key, "cat").unwrap(), Some(1));
    assert_eq!(con.seckill_bought(key, "zed").unwrap(), Some(0));

    assert!(con.seckill_window(key, 1, 2).unwrap());
    assert_eq!(
        con.seckill_deduct(&Deduct::new(key, "eve", 1))
            .unwrap()
            .outcome,
        Outcome::Ended
    );
    assert!(con.seckill_window(key, 32_503_680_000_000, 0).unwrap());
    assert_eq!(
        con.seckill_deduct(&Deduct::new(key, "eve", 1))
            .unwrap()
            .outcome,
        Outcome::NotStarted
    );
    assert!(con.seckill_window(key, 0, 0).unwrap());

    let info = con.seckill_info(key).unwrap().unwrap();
    assert_eq!(
        info,
        ItemInfo {
            stock: 14,
            unlimited: false,
            limit: 3,
            initial: 10,
            added: 5,
            sold: 4,
            refunded: 2,
            held: 0,
            holds: 0,
            expired: 1,
            buyers: 1,
            requests: 3,
            start: 0,
            end: 0,
            stream: Some("{sku:1}:orders".into()),
            stream_maxlen: 100,
            moved_out: 0,
            moved_in: 0,
            stream_confirmed: true,
            variants: 0,
        }
    );
    assert!(con
        .seckill_stream(key, None::<(&str, Option<i64>)>)
        .unwrap());
    assert_eq!(con.seckill_info(key).unwrap().unwrap().stream, None);
    assert!(con
        .seckill_stream(key, Some(("{sku:1}:orders", None)))
        .unwrap());

    // No item: None or false everywhere, as the server says nil or -3.
    let none = "{sku:1}:none";
    assert_eq!(con.seckill_get(none).unwrap(), None);
    assert_eq!(con.seckill_bought(none, "ann").unwrap(), None);
    assert_eq!(con.seckill_holds(none, None::<&str>).unwrap(), None);
    assert_eq!(con.seckill_info(none).unwrap(), None);
    assert_eq!(con.seckill_add(none, 1).unwrap(), None);
    assert_eq!(
        con.seckill_refund(none, "o").unwrap().outcome,
        RefundOutcome::NoItem
    );
    assert_eq!(con.seckill_release(none, &["o"]).unwrap(), None);
    assert_eq!(
        con.seckill_confirm(none, "o").unwrap(),
        ConfirmOutcome::NoItem
    );
    assert!(!con.seckill_window(none, 0, 0).unwrap());
    assert!(!con
        .seckill_stream(none, None::<(&str, Option<i64>)>)
        .unwrap());

    // Unlimited stock and an expiry.
    assert!(con
        .seckill_init(
            &Init::new("{sku:1}:free", Stock::Unlimited)
                .expiry(Expiry::Seconds(600))
                .replace()
        )
        .unwrap());
    let free = con.seckill_info("{sku:1}:free").unwrap().unwrap();
    assert!(free.unlimited);
    assert_eq!(free.stock, UNLIMITED_STOCK);
    let ttl: i64 = ok(con, &["TTL", "{sku:1}:free"]);
    assert!(ttl > 0 && ttl <= 600);
}

#[test]
fn every_command_has_a_typed_reply_under_resp2_and_resp3() {
    let server = Server::start();
    for resp3 in [false, true] {
        let mut con = connect(&server, resp3);
        ok::<String>(&mut con, &["FLUSHALL"]);
        every_command(&mut con);
    }
}

#[test]
fn pipelines_and_transactions_decode_each_reply() {
    let server = Server::start();
    for resp3 in [false, true] {
        let mut con = connect(&server, resp3);
        ok::<String>(&mut con, &["FLUSHALL"]);
        for atomic in [false, true] {
            let key = format!("sku:{atomic}");
            let mut pipe = redis::pipe();
            if atomic {
                pipe.atomic();
            }
            pipe.add_command(Init::new(key.as_str(), 1).to_cmd())
                .add_command(
                    Deduct::new(key.as_str(), "ann", 1)
                        .request_id("o1")
                        .to_cmd(),
                )
                .add_command(Deduct::new(key.as_str(), "bob", 1).to_cmd())
                .add_command(command::add(&key, 2))
                .add_command(command::info(&key))
                .add_command(command::confirm(&key, "o1"));
            let (created, ann, bob, added, info, confirmed): (
                bool,
                DeductResult,
                DeductResult,
                ItemFigure,
                Option<ItemInfo>,
                ConfirmOutcome,
            ) = pipe.query(&mut con).unwrap();
            assert!(created);
            assert_eq!(ann.stock, Some(0));
            assert_eq!(bob.outcome, Outcome::SoldOut);
            assert_eq!(added, ItemFigure(Some(2)));
            assert_eq!(info.unwrap().sold, 1);
            assert_eq!(confirmed, ConfirmOutcome::AlreadyFinal);
        }
    }
}

/// A hold's deadline comes with the purchase (`WITHDEADLINE`, which
/// `Deduct` sends with a hold), the same as `SECKILL.STATUS` tells later;
/// a purchase without a hold, a refusal and a hold confirmed since have
/// none.
#[test]
fn a_hold_replies_its_deadline_and_a_purchase_without_one_none() {
    let server = Server::start();
    for resp3 in [false, true] {
        let mut con = connect(&server, resp3);
        ok::<String>(&mut con, &["FLUSHALL"]);
        let key = "{sku:3}";
        con.seckill_init(&Init::new(key, 10)).unwrap();

        let before = now_ms(&mut con);
        let hold = Deduct::new(key, "ann", 1).request_id("h1").hold(600);
        let held = con.seckill_deduct(&hold).unwrap();
        let deadline = held.deadline.expect("a hold's deadline");
        let after = now_ms(&mut con);
        assert!(
            (before + 600_000..=after + 600_000).contains(&deadline),
            "{deadline} is not 600 s after the call"
        );
        let state = con.seckill_status(key, "h1").unwrap().unwrap();
        assert_eq!(state.deadline, deadline);
        // A retry while the hold is pending: the very same reply.
        assert_eq!(con.seckill_deduct(&hold).unwrap(), held);

        let until = now_ms(&mut con) + 60_000;
        let held_until = con
            .seckill_deduct(
                &Deduct::new(key, "bob", 1)
                    .request_id("h2")
                    .hold_until(until),
            )
            .unwrap();
        assert_eq!(
            (held_until.outcome, held_until.stock, held_until.deadline),
            (Outcome::Bought, Some(8), Some(until))
        );

        let plain = con
            .seckill_deduct(&Deduct::new(key, "cat", 1).request_id("p1"))
            .unwrap();
        assert_eq!((plain.stock, plain.deadline), (Some(7), None));
        let anonymous = con.seckill_deduct(&Deduct::new(key, "dan", 1)).unwrap();
        assert_eq!((anonymous.stock, anonymous.deadline), (Some(6), None));
        let refused = con
            .seckill_deduct(&Deduct::new(key, "eve", 100).request_id("h3").hold(600))
            .unwrap();
        assert_eq!(
            (refused.outcome, refused.deadline),
            (Outcome::SoldOut, None)
        );
        let no_item = con
            .seckill_deduct(
                &Deduct::new("{sku:3}:none", "eve", 1)
                    .request_id("h4")
                    .hold(600),
            )
            .unwrap();
        assert_eq!((no_item.outcome, no_item.deadline), (Outcome::NoItem, None));

        // Confirmed since: the retry replies the purchase, with no deadline
        // left to pay by.
        assert_eq!(
            con.seckill_confirm(key, "h1").unwrap(),
            ConfirmOutcome::Confirmed
        );
        let replay = con.seckill_deduct(&hold).unwrap();
        assert_eq!((replay.stock, replay.deadline), (held.stock, None));
    }
}

/// `seckill_confirm` and `seckill_refund` send `DETAIL`: a refunded, a
/// lapsed and an unknown request id each get their own outcome. A call
/// sent without it still decodes, to the outcome that covers all three.
#[test]
fn confirm_and_refund_tell_refunded_lapsed_and_unknown_ids_apart() {
    let server = Server::start();
    for resp3 in [false, true] {
        let mut con = connect(&server, resp3);
        ok::<String>(&mut con, &["FLUSHALL"]);
        let key = "{sku:2}";
        con.seckill_init(&Init::new(key, 10)).unwrap();
        for id in ["refunded", "lapsed", "paid"] {
            let hold = Deduct::new(key, "ann", 1).request_id(id).hold(600);
            assert!(con.seckill_deduct(&hold).unwrap().bought());
        }
        let bought = Deduct::new(key, "bob", 2).request_id("bought");
        assert!(con.seckill_deduct(&bought).unwrap().bought());

        let refunded = con.seckill_refund(key, "refunded").unwrap();
        assert_eq!(
            refunded,
            RefundResult {
                outcome: RefundOutcome::Refunded,
                units: Some(1)
            }
        );
        assert!(refunded.refunded());
        let bought_back = con.seckill_refund(key, "bought").unwrap();
        assert_eq!(
            (bought_back.outcome, bought_back.units),
            (RefundOutcome::Refunded, Some(2))
        );
        // The hold lapses now, as it would at its deadline.
        assert_eq!(con.seckill_release(key, &["lapsed"]).unwrap(), Some(1));

        let confirmed = |con: &mut Connection, id: &str| con.seckill_confirm(key, id).unwrap();
        assert_eq!(confirmed(&mut con, "refunded"), ConfirmOutcome::Refunded);
        assert_eq!(confirmed(&mut con, "bought"), ConfirmOutcome::Refunded);
        assert_eq!(confirmed(&mut con, "lapsed"), ConfirmOutcome::Lapsed);
        assert_eq!(confirmed(&mut con, "never"), ConfirmOutcome::UnknownRequest);
        assert_eq!(confirmed(&mut con, "paid"), ConfirmOutcome::Confirmed);
        assert_eq!(confirmed(&mut con, "paid"), ConfirmOutcome::AlreadyFinal);
        assert_eq!(
            con.seckill_confirm("{sku:2}:none", "paid").unwrap(),
            ConfirmOutcome::NoItem
        );

        let refund = |con: &mut Connection, id: &str| {
            let result = con.seckill_refund(key, id).unwrap();
            (result.outcome, result.units)
        };
        assert_eq!(
            refund(&mut con, "refunded"),
            (RefundOutcome::AlreadyRefunded, None)
        );
        assert_eq!(refund(&mut con, "lapsed"), (RefundOutcome::Lapsed, None));
        assert_eq!(
            refund(&mut con, "never"),
            (RefundOutcome::UnknownRequest, None)
        );
        // Nothing went back twice: 10, less the paid unit.
        assert_eq!(con.seckill_get(key).unwrap(), Some(9));
        // A confirmed purchase can be refunded; confirming it then says so.
        assert_eq!(refund(&mut con, "paid"), (RefundOutcome::Refunded, Some(1)));
        assert_eq!(confirmed(&mut con, "paid"), ConfirmOutcome::Refunded);
        assert_eq!(con.seckill_get(key).unwrap(), Some(10));

        // Without DETAIL, as a call built by hand sends them.
        let raw_confirm: ConfirmOutcome = redis::cmd("SECKILL.CONFIRM")
            .arg(key)
            .arg("lapsed")
            .query(&mut con)
            .unwrap();
        assert_eq!(raw_confirm, ConfirmOutcome::Cancelled);
        let raw_refund: RefundResult = redis::cmd("SECKILL.REFUND")
            .arg(key)
            .arg("never")
            .query(&mut con)
            .unwrap();
        assert_eq!(
            (raw_refund.outcome, raw_refund.units),
            (RefundOutcome::Nothing, None)
        );
    }
}

/// In a pipeline or a transaction, a `DEDUCT` with a hold (its reply an
/// array) and one without (an integer) decode alike, and so do `CONFIRM`
/// and `REFUND` with `DETAIL` or without.
#[test]
fn pipelines_decode_deadlines_and_the_detailed_outcomes() {
    let server = Server::start();
    for resp3 in [false, true] {
        let mut con = connect(&server, resp3);
        ok::<String>(&mut con, &["FLUSHALL"]);
        for atomic in [false, true] {
            let key = format!("{{sku:pipe:{atomic}}}");
            let key = key.as_str();
            let deadline = now_ms(&mut con) + 600_000;
            let mut pipe = redis::pipe();
            if atomic {
                pipe.atomic();
            }
            pipe.add_command(Init::new(key, 10).to_cmd())
                .add_command(
                    Deduct::new(key, "ann", 1)
                        .request_id("h1")
                        .hold_until(deadline)
                        .to_cmd(),
                )
                .add_command(Deduct::new(key, "bob", 2).request_id("p1").to_cmd())
                .add_command(command::status(key, "h1"))
                .add_command(command::release(key, &["h1"]))
                .add_command(command::confirm(key, "h1"));
            let (created, held, bought, state, released, lapsed): (
                bool,
                DeductResult,
                DeductResult,
                Option<seckill_client::OrderState>,
                ItemFigure,
                ConfirmOutcome,
            ) = pipe.query(&mut con).unwrap();
            assert!(created);
            assert_eq!(
                held,
                DeductResult {
                    outcome: Outcome::Bought,
                    stock: Some(9),
                    deadline: Some(deadline)
                }
            );
            assert_eq!((bought.stock, bought.deadline), (Some(7), None));
            assert_eq!(state.unwrap().deadline, deadline);
            assert_eq!(released, ItemFigure(Some(1)));
            assert_eq!(lapsed, ConfirmOutcome::Lapsed);

            let mut pipe = redis::pipe();
            if atomic {
                pipe.atomic();
            }
            pipe.add_command(command::refund(key, "p1"))
                .add_command(command::confirm(key, "p1"))
                .add_command(command::refund(key, "p1"))
                .add_command(command::refund(key, "h1"))
                .add_command(command::confirm(key, "never"))
                .add_command(command::refund(key, "never"))
                .add_command(command::refund("{sku:pipe}:none", "p1"))
                .cmd("SECKILL.CONFIRM")
                .arg(key)
                .arg("never")
                .cmd("SECKILL.REFUND")
                .arg(key)
                .arg("never");
            let replies: (
                RefundResult,
                ConfirmOutcome,
                RefundResult,
                RefundResult,
                ConfirmOutcome,
                RefundResult,
                RefundResult,
                ConfirmOutcome,
                RefundResult,
            ) = pipe.query(&mut con).unwrap();
            let refunds = [
                replies.0, replies.2, replies.3, replies.5, replies.6, replies.8,
            ];
            let refunds = refunds.map(|result| (result.outcome, result.units));
            assert_eq!(
                refunds,
                [
                    (RefundOutcome::Refunded, Some(2)),
                    (RefundOutcome::AlreadyRefunded, None),
                    (RefundOutcome::Lapsed, None),
                    (RefundOutcome::UnknownRequest, None),
                    (RefundOutcome::NoItem, None),
                    (RefundOutcome::Nothing, None),
                ]
            );
            assert_eq!(
                [replies.1, replies.4, replies.7],
                [
                    ConfirmOutcome::Refunded,
                    ConfirmOutcome::UnknownRequest,
                    ConfirmOutcome::Cancelled,
                ]
            );
        }
    }
}

#[test]
fn module_errors_are_typed_with_the_same_message_everywhere() {
    let server = Server::start();
    let mut con = connect(&server, false);
    con.seckill_init(&Init::new("k", 10)).unwrap();
    con.seckill_deduct(&Deduct::new("k", "ann", 1).request_id("o1"))
        .unwrap();

    let conflict = con
        .seckill_deduct(&Deduct::new("k", "bob", 1).request_id("o1"))
        .unwrap_err();
    let conflict = conflict.seckill().expect("a module error");
    assert_eq!(conflict.kind, ErrorKind::RequestIdConflict);
    assert_eq!(conflict.code, "ERR");
    assert_eq!(
        conflict.message,
        "request id was already used by another user or for another quantity"
    );
    assert!(!conflict.retryable());

    let hold = con
        .seckill_deduct(&Deduct::new("k", "ann", 1).hold(5))
        .unwrap_err();
    assert_eq!(hold.kind(), Some(ErrorKind::InvalidArgument));
    assert_eq!(hold.seckill().unwrap().message, "HOLD requires ID");

    ok::<String>(&mut con, &["SET", "plain", "x"]);
    let wrong = con.seckill_get("plain").unwrap_err();
    assert_eq!(wrong.kind(), Some(ErrorKind::WrongType));
    assert_eq!(wrong.seckill().unwrap().code, "WRONGTYPE");

    // The order stream key came to hold a string: the sale is refused.
    con.seckill_init(&Init::new("{s}", 1).stream("{s}:orders", None))
        .unwrap();
    ok::<String>(&mut con, &["SET", "{s}:orders", "x"]);
    let stream = con
        .seckill_deduct(&Deduct::new("{s}", "ann", 1))
        .unwrap_err();
    assert_eq!(stream.kind(), Some(ErrorKind::OrderStream));
    assert_eq!(stream.seckill().unwrap().code, "WRONGTYPE");

    // An ACL user that may not write the stream key.
    ok::<String>(
        &mut con,
        &["ACL", "SETUSER", "app", "on", "nopass", "~sku:*", "+@all"],
    );
    ok::<String>(&mut con, &["AUTH", "app", "x"]);
    let denied = con
        .seckill_init(&Init::new("sku:9", 1).stream("orders:9", None))
        .unwrap_err();
    assert_eq!(denied.kind(), Some(ErrorKind::NoPermission));

    // Not the module's: a transport or server-state error stays redis's.
    let mut other = connect(&server, false);
    ok::<String>(&mut other, &["CONFIG", "SET", "maxmemory", "1"]);
    let oom = other.seckill_init(&Init::new("big", 1)).unwrap_err();
    ok::<String>(&mut other, &["CONFIG", "SET", "maxmemory", "0"]);
    assert!(oom.seckill().is_none(), "{oom}");
}

fn moved_count(cluster: &Cluster) -> i64 {
    cluster
        .live()
        .map(|node| {
            let mut con = node.client();
            server_info(&mut con, "errorstats", "errorstat_MOVED")
                .and_then(|stat| stat.strip_prefix("count=")?.parse().ok())
                .unwrap_or(0)
        })
        .sum()
}

#[test]
fn cluster_calls_reach_the_owner_without_a_redirection() {
    let cluster = Cluster::start(3, 0);
    let mut con = cluster.client();
    for n in 0..100 {
        con.seckill_init(&Init::new(format!("sku:{n}"), 1_000))
            .unwrap();
    }
    let before = moved_count(&cluster);
    for call in 0..1_000 {
        let key = format!("sku:{}", call % 100);
        let result = con
            .seckill_deduct(&Deduct::new(key.as_str(), format!("u{call}"), 1))
            .unwrap();
        assert!(result.bought());
    }
    assert_eq!(moved_count(&cluster), before, "MOVED replies");
    let left: i64 = (0..100)
        .map(|n| con.seckill_get(format!("sku:{n}")).unwrap().unwrap())
        .sum();
    assert_eq!(left, 100 * 1_000 - 1_000);

    // The async cluster connection, the same way.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let nodes: Vec<String> = cluster
            .live()
            .map(|node| format!("redis://127.0.0.1:{}", node.port))
            .collect();
        let client = redis::cluster::ClusterClient::new(nodes).unwrap();
        let mut con = client.get_async_connection().await.unwrap();
        con.seckill_get("sku:0").await.unwrap();
        let before = moved_count(&cluster);
        for call in 0..1_000 {
            let key = format!("sku:{}", call % 100);
            let result = con
                .seckill_deduct(&Deduct::new(key.as_str(), format!("a{call}"), 1))
                .await
                .unwrap();
            assert!(result.bought());
        }
        assert_eq!(moved_count(&cluster), before, "MOVED replies (async)");
    });
}

#[test]
fn async_connections_have_the_same_commands() {
    let server = Server::start();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let client = redis::Client::open(format!("redis://127.0.0.1:{}/", server.port)).unwrap();
        let mut con = client.get_multiplexed_async_connection().await.unwrap();
        assert!(con.seckill_init(&Init::new("k", 2).limit(1)).await.unwrap());
        let first = con
            .seckill_deduct(&Deduct::new("k", "ann", 1).request_id("o1").hold(60))
            .await
            .unwrap();
        assert_eq!(first.stock, Some(1));
        let again = con
            .seckill_deduct(&Deduct::new("k", "ann", 1))
            .await
            .unwrap();
        assert_eq!(again.outcome, Outcome::LimitReached);
        assert_eq!(
            con.seckill_holds("k", None::<&str>)
                .await
                .unwrap()
                .unwrap()
                .len(),
            1
        );
        assert_eq!(
            con.seckill_confirm("k", "o1").await.unwrap(),
            ConfirmOutcome::Confirmed
        );
        let state = con.seckill_status("k", "o1").await.unwrap().unwrap();
        assert_eq!(first.deadline, Some(state.deadline));
        assert_eq!(
            con.seckill_confirm("k", "none").await.unwrap(),
            ConfirmOutcome::UnknownRequest
        );
        let refunded = con.seckill_refund("k", "o1").await.unwrap();
        assert!(refunded.refunded());
        assert_eq!(refunded.units, Some(1));
        assert_eq!(
            con.seckill_confirm("k", "o1").await.unwrap(),
            ConfirmOutcome::Refunded
        );
        assert_eq!(
            con.seckill_refund("k", "o1").await.unwrap().outcome,
            RefundOutcome::AlreadyRefunded
        );
        assert_eq!(con.seckill_release("k", &["o1"]).await.unwrap(), Some(0));
        assert_eq!(con.seckill_add("k", 1).await.unwrap(), Some(3));
        assert!(con.seckill_window("k", 0, 0).await.unwrap());
        assert!(con
            .seckill_stream("k", None::<(&str, Option<i64>)>)
            .await
            .unwrap());
        assert_eq!(con.seckill_get("k").await.unwrap(), Some(3));
        assert_eq!(con.seckill_bought("k", "ann").await.unwrap(), Some(0));
        assert_eq!(con.seckill_info("k").await.unwrap().unwrap().refunded, 1);
        let conflict = con
            .seckill_deduct(&Deduct::new("k", "bob", 1).request_id("o1"))
            .await
            .unwrap_err();
        assert_eq!(conflict.kind(), Some(ErrorKind::RequestIdConflict));
    });
}

#[test]
fn stock_moves_between_parts_once_per_transfer_id() {
    let server = Server::start();
    let mut con = connect(&server, true);
    con.seckill_init(&Init::new("p0", 10)).unwrap();
    con.seckill_init(&Init::new("p1", 0)).unwrap();
    assert_eq!(
        con.seckill_take("p0", 4, "m1", Some("p1")).unwrap(),
        Some(4)
    );
    assert_eq!(
        con.seckill_take("p0", 4, "m1", Some("p1")).unwrap(),
        Some(4)
    );
    assert_eq!(
        con.seckill_transfers("p0").unwrap().unwrap(),
        [Transfer {
            transfer_id: "m1".into(),
            units: 4,
            destination: Some("p1".into()),
            variant: None,
        }]
    );
    // The parts of a drop with sizes move stock size by size.
    for part in ["d0", "d1"] {
        con.seckill_init(&Init::with_variants(part, [("42", 5), ("43", 5)]))
            .unwrap();
    }
    let taken: Option<i64> = command::take_variant("d0", 2, "dm", Some("d1"), "43")
        .query::<ItemFigure>(&mut con)
        .unwrap()
        .0;
    assert_eq!(taken, Some(2));
    assert_eq!(
        con.seckill_transfers("d0").unwrap().unwrap(),
        [Transfer {
            transfer_id: "dm".into(),
            units: 2,
            destination: Some("d1".into()),
            variant: Some("43".into()),
        }]
    );
    let arrived: ItemFigure = command::add_transfer_variant("d1", 2, "dm", "43")
        .query(&mut con)
        .unwrap();
    assert_eq!(arrived.0, Some(7));
    let settled: SettleOutcome = command::settle_variant("d0", "dm", "43")
        .query(&mut con)
        .unwrap();
    assert_eq!(settled, SettleOutcome::Settled);
    assert_eq!(con.seckill_add_transfer("p1", 4, "m1").unwrap(), Some(4));
    assert_eq!(con.seckill_add_transfer("p1", 4, "m1").unwrap(), Some(4));
    assert_eq!(
        con.seckill_settle("p0", "m1").unwrap(),
        SettleOutcome::Settled
    );
    assert_eq!(
        con.seckill_settle("p0", "m1").unwrap(),
        SettleOutcome::AlreadySettled
    );
    assert_eq!(
        con.seckill_settle("p0", "m9").unwrap(),
        SettleOutcome::Unknown
    );
    assert_eq!(
        con.seckill_settle("none", "m1").unwrap(),
        SettleOutcome::NoItem
    );
    assert_eq!(
        con.seckill_take("none", 1, "m", None::<&str>).unwrap(),
        None
    );
    assert_eq!(con.seckill_transfers("none").unwrap(), None);
    assert!(con.seckill_transfers("p0").unwrap().unwrap().is_empty());
    let info = con.seckill_info("p0").unwrap().unwrap();
    assert_eq!((info.moved_out, info.moved_in), (4, 0));
    let info = con.seckill_info("p1").unwrap().unwrap();
    assert_eq!((info.moved_out, info.moved_in), (0, 4));
    let reused = con.seckill_add_transfer("p1", 5, "m1").unwrap_err();
    assert_eq!(reused.kind(), Some(ErrorKind::RequestIdConflict));
}

/// Part names whose slots three different masters own, found by asking
/// the cluster (`CLUSTER KEYSLOT`), so that each part is on its own shard.
fn parts_on_three_masters(cluster: &Cluster, item: &str) -> Vec<String> {
    let mut owners_seen = Vec::new();
    let mut parts = Vec::new();
    for i in 0.. {
        let name = format!("{item}:part:{i}");
        let owner = cluster.owner(cluster.slot(&name));
        if !owners_seen.contains(&owner) {
            owners_seen.push(owner);
            parts.push(name);
        }
        if parts.len() == 3 {
            break;
        }
    }
    parts
}

#[test]
fn a_split_item_pins_each_user_to_one_part_on_a_cluster() {
    let cluster = Cluster::start(3, 0);
    let mut con = cluster.client();
    let item = SplitItem::new(parts_on_three_masters(&cluster, "sku:split"));
    let created = item
        .init(&mut con, 100, |key, share| Init::new(key, share).limit(2))
        .unwrap();
    assert_eq!(created, [true, true, true]);
    let shares: Vec<i64> = item
        .info(&mut con)
        .unwrap()
        .into_iter()
        .map(|info| info.unwrap().initial)
        .collect();
    assert_eq!(shares, [34, 33, 33]);
    let mut sold = 0;
    for n in 0..200 {
        let user = format!("user:{n}");
        let result = item
            .deduct(&mut con, &user, |key| Deduct::new(key, user.as_str(), 1))
            .unwrap();
        if result.bought() {
            sold += 1;
            // On the user's own part, and nowhere else.
            for (index, part) in item.parts().iter().enumerate() {
                let bought = con.seckill_bought(part, &user).unwrap().unwrap();
                assert_eq!(bought, i64::from(index == item.part_for(&user)));
            }
        }
    }
    assert_eq!(item.stock(&mut con).unwrap(), Some(100 - sold));
    assert_eq!(split::fnv1a32(b"a"), 0xe40c_292c);
    assert_eq!(item.variants(&mut con).unwrap(), Some(vec![]));

    // A drop of sizes, each shared out over the parts.
    let drop = SplitItem::new(parts_on_three_masters(&cluster, "sku:drop"));
    assert_eq!(drop.variants(&mut con).unwrap(), None);
    let created = drop
        .init_variants(&mut con, &[("42", 10), ("43", 4)], |key, sizes| {
            Init::with_variants(key, sizes).limit(1)
        })
        .unwrap();
    assert_eq!(created, [true, true, true]);
    let sizes = |shares: [i64; 2]| {
        Some(vec![
            ("42".to_owned(), shares[0]),
            ("43".to_owned(), shares[1]),
        ])
    };
    assert_eq!(
        con.seckill_variants(&drop.parts()[0]).unwrap(),
        sizes([4, 2])
    );
    assert_eq!(
        con.seckill_variants(&drop.parts()[2]).unwrap(),
        sizes([3, 1])
    );
    assert_eq!(drop.variants(&mut con).unwrap(), sizes([10, 4]));
    let bought = drop
        .deduct(&mut con, "ana", |key| {
            Deduct::new(key, "ana", 1).variant("43")
        })
        .unwrap();
    assert!(bought.bought());
    let again = drop
        .deduct(&mut con, "ana", |key| {
            Deduct::new(key, "ana", 1).variant("42")
        })
        .unwrap();
    assert_eq!(again.outcome, Outcome::LimitReached);
    assert_eq!(drop.variants(&mut con).unwrap(), sizes([10, 3]));
}

fn taken(stock: i64) -> OrderLine {
    OrderLine {
        outcome: Some(Outcome::Bought),
        stock: Some(stock),
    }
}

fn refusing(outcome: Outcome) -> OrderLine {
    OrderLine {
        outcome: Some(outcome),
        stock: None,
    }
}

/// A line that would have been taken, in an order another line refused.
const NOT_JUDGED: OrderLine = OrderLine {
    outcome: None,
    stock: None,
};

fn refunded(units: i64) -> RefundResult {
    RefundResult {
        outcome: RefundOutcome::Refunded,
        units: Some(units),
    }
}

fn not_refunded(outcome: RefundOutcome) -> RefundResult {
    RefundResult {
        outcome,
        units: None,
    }
}

/// The order commands once each, with their typed replies: taken whole,
/// replayed, refused (each refusing line's outcome, the others not judged,
/// nothing taken), confirmed whole or not at all, refunded.
fn order_commands<C: SeckillCommands + 'static>(con: &mut C, tag: &str, now_ms: i64) {
    let phone = format!("{{{tag}}}:phone");
    let case = format!("{{{tag}}}:case");
    let none = format!("{{{tag}}}:none");
    let (phone, case, none) = (phone.as_str(), case.as_str(), none.as_str());
    con.seckill_init(&Init::new(phone, 3)).unwrap();
    con.seckill_init(&Init::new(case, 1).limit(1)).unwrap();

    // Taken whole, held until one deadline, which the reply tells.
    let deadline = now_ms + 600_000;
    let order = Order::new("lena", "order-50")
        .line(phone, 1)
        .line(case, 1)
        .hold_until(deadline);
    let placed = con.seckill_order(&order).unwrap();
    assert_eq!(
        placed,
        OrderResult {
            taken: true,
            lines: vec![taken(2), taken(0)],
            deadline: Some(deadline),
        }
    );
    assert_eq!(placed.refusals().count(), 0);
    // A retry gets the very same reply, and takes nothing more.
    assert_eq!(con.seckill_order(&order).unwrap(), placed);
    assert_eq!(con.seckill_get(phone).unwrap(), Some(2));
    let state = con.seckill_status(case, "order-50").unwrap().unwrap();
    assert_eq!(
        (state.status, state.deadline),
        (RequestStatus::Held, deadline)
    );

    // Refused by the case, sold out: the phone would have been taken, and
    // was not. A refused order has no deadline.
    let refused = con
        .seckill_order(
            &Order::new("mo", "order-51")
                .line(phone, 1)
                .line(case, 1)
                .hold(600),
        )
        .unwrap();
    assert_eq!(
        refused,
        OrderResult {
            taken: false,
            lines: vec![NOT_JUDGED, refusing(Outcome::SoldOut)],
            deadline: None,
        }
    );
    assert_eq!(
        refused.refusals().collect::<Vec<_>>(),
        [(1, Outcome::SoldOut)]
    );
    assert_eq!(con.seckill_get(phone).unwrap(), Some(2));
    assert_eq!(con.seckill_bought(phone, "mo").unwrap(), Some(0));

    // Every refusing line has its own code.
    con.seckill_add(case, 5).unwrap();
    let refused = con
        .seckill_order(
            &Order::new("lena", "order-52")
                .line(none, 1)
                .line(phone, 1)
                .line(case, 1),
        )
        .unwrap();
    assert_eq!(
        refused.lines,
        [
            refusing(Outcome::NoItem),
            NOT_JUDGED,
            refusing(Outcome::LimitReached)
        ]
    );
    assert!(!refused.taken);

    // Without a hold: bought, no deadline.
    let bought = con
        .seckill_order(&Order::new("nia", "order-53").line(case, 1))
        .unwrap();
    assert_eq!(
        (bought.taken, bought.lines, bought.deadline),
        (true, vec![taken(4)], None)
    );

    // Confirmed whole, once.
    let keys = order.keys();
    assert_eq!(
        con.seckill_confirm_order(&keys, "order-50").unwrap(),
        OrderConfirmation {
            confirmed: true,
            lines: vec![Some(ConfirmOutcome::Confirmed); 2],
        }
    );
    assert_eq!(
        con.seckill_confirm_order(&keys, "order-50").unwrap(),
        OrderConfirmation {
            confirmed: true,
            lines: vec![Some(ConfirmOutcome::AlreadyFinal); 2],
        }
    );
    let unknown = con.seckill_confirm_order(&[phone, none], "never").unwrap();
    assert_eq!(
        unknown.lines,
        [
            Some(ConfirmOutcome::UnknownRequest),
            Some(ConfirmOutcome::NoItem)
        ]
    );
    assert!(!unknown.confirmed);

    // A held order one line of which lapsed: not confirmed at all.
    let held = Order::new("oli", "order-54")
        .line(phone, 1)
        .line(case, 1)
        .hold(600);
    assert!(con.seckill_order(&held).unwrap().taken);
    assert_eq!(con.seckill_release(case, &["order-54"]).unwrap(), Some(1));
    let lapsed = con.seckill_confirm_order(&keys, "order-54").unwrap();
    assert_eq!(
        lapsed,
        OrderConfirmation {
            confirmed: false,
            lines: vec![None, Some(ConfirmOutcome::Lapsed)],
        }
    );
    assert_eq!(
        lapsed.refusals().collect::<Vec<_>>(),
        [(1, ConfirmOutcome::Lapsed)]
    );
    assert_eq!(
        con.seckill_status(phone, "order-54")
            .unwrap()
            .unwrap()
            .status,
        RequestStatus::Held
    );

    // Refunded: each line as REFUND answers it.
    assert_eq!(
        con.seckill_refund_order(&keys, "order-54").unwrap(),
        [refunded(1), not_refunded(RefundOutcome::Lapsed)]
    );
    assert_eq!(
        con.seckill_refund_order(&[phone, case, none], "order-50")
            .unwrap(),
        [
            refunded(1),
            refunded(1),
            not_refunded(RefundOutcome::NoItem)
        ]
    );
    assert_eq!(
        con.seckill_refund_order(&keys, "order-50").unwrap(),
        [not_refunded(RefundOutcome::AlreadyRefunded); 2]
    );
    assert_eq!(
        con.seckill_confirm_order(&keys, "order-50").unwrap().lines,
        [Some(ConfirmOutcome::Refunded); 2]
    );
    // A refunded order is never taken again.
    let again = con.seckill_order(&order).unwrap();
    assert_eq!(
        (again.taken, again.lines, again.deadline),
        (false, vec![refusing(Outcome::Cancelled); 2], None)
    );

    // Errors: typed as every other command's.
    let other_items = con
        .seckill_order(&Order::new("nia", "order-53").line(case, 1).line(phone, 1))
        .unwrap_err();
    let other_items = other_items.seckill().expect("a module error");
    assert_eq!(other_items.kind, ErrorKind::RequestIdConflict);
    assert_eq!(
        other_items.message,
        "request id was already used for an order of other items"
    );
    let twice = con
        .seckill_order(&Order::new("nia", "order-55").line(case, 1).line(case, 1))
        .unwrap_err();
    assert_eq!(twice.kind(), Some(ErrorKind::InvalidArgument));
    assert_eq!(
        twice.seckill().unwrap().message,
        "a key appears on more than one line"
    );
    let empty = con
        .seckill_order(&Order::new("nia", "order-56"))
        .unwrap_err();
    assert_eq!(empty.kind(), Some(ErrorKind::InvalidArgument));
    let no_keys = con
        .seckill_confirm_order(&[] as &[&str], "order-50")
        .unwrap_err();
    assert_eq!(no_keys.kind(), Some(ErrorKind::InvalidArgument));

    for key in [phone, case] {
        let info = con.seckill_info(key).unwrap().unwrap();
        assert_eq!(
            info.stock + info.sold,
            info.initial + info.added + info.refunded + info.expired,
            "{key}: {info:?}"
        );
    }
}

#[test]
fn orders_take_every_line_or_none_under_resp2_and_resp3() {
    let server = Server::start();
    for resp3 in [false, true] {
        let mut con = connect(&server, resp3);
        ok::<String>(&mut con, &["FLUSHALL"]);
        let now = now_ms(&mut con);
        order_commands(&mut con, "drop:1", now);
    }
}

/// In a pipeline or a transaction, an order with a hold (`[lines,
/// deadline]`), one without (the lines alone), its confirmation and its
/// refund decode as the methods' replies.
#[test]
fn pipelines_decode_orders() {
    let server = Server::start();
    for resp3 in [false, true] {
        let mut con = connect(&server, resp3);
        ok::<String>(&mut con, &["FLUSHALL"]);
        for atomic in [false, true] {
            let a = format!("{{pipe:{atomic}}}:a");
            let b = format!("{{pipe:{atomic}}}:b");
            let keys = [a.as_str(), b.as_str()];
            let deadline = now_ms(&mut con) + 600_000;
            let mut pipe = redis::pipe();
            if atomic {
                pipe.atomic();
            }
            pipe.add_command(Init::new(a.as_str(), 5).to_cmd())
                .add_command(Init::new(b.as_str(), 1).to_cmd())
                .add_command(
                    Order::new("ann", "o1")
                        .line(a.as_str(), 1)
                        .line(b.as_str(), 1)
                        .hold_until(deadline)
                        .to_cmd(),
                )
                .add_command(
                    Order::new("bob", "o2")
                        .line(a.as_str(), 1)
                        .line(b.as_str(), 1)
                        .to_cmd(),
                )
                .add_command(Order::new("cat", "o3").line(a.as_str(), 2).to_cmd())
                .add_command(command::confirm_order(&keys, "o1"))
                .add_command(command::refund_order(&keys, "o1"))
                .add_command(command::confirm_order(&keys, "o1"));
            let (_, _, held, refused, bought, confirmed, refunds, after): (
                bool,
                bool,
                OrderResult,
                OrderResult,
                OrderResult,
                OrderConfirmation,
                Vec<RefundResult>,
                OrderConfirmation,
            ) = pipe.query(&mut con).unwrap();
            assert_eq!(
                held,
                OrderResult {
                    taken: true,
                    lines: vec![taken(4), taken(0)],
                    deadline: Some(deadline),
                }
            );
            assert_eq!(
                (refused.taken, refused.lines, refused.deadline),
                (false, vec![NOT_JUDGED, refusing(Outcome::SoldOut)], None)
            );
            assert_eq!((bought.lines, bought.deadline), (vec![taken(2)], None));
            assert!(confirmed.confirmed);
            assert_eq!(refunds, [refunded(1), refunded(1)]);
            assert_eq!(after.lines, [Some(ConfirmOutcome::Refunded); 2]);
        }
    }
}

#[test]
fn async_connections_have_the_order_commands() {
    let server = Server::start();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let client = redis::Client::open(format!("redis://127.0.0.1:{}/", server.port)).unwrap();
        let mut con = client.get_multiplexed_async_connection().await.unwrap();
        async_orders(&mut con, "async").await;
    });
}

/// An order, its confirmation and its refund, on an async connection.
async fn async_orders<C: AsyncSeckillCommands + 'static>(con: &mut C, tag: &str) {
    let a = format!("{{{tag}}}:a");
    let b = format!("{{{tag}}}:b");
    let keys = [a.as_str(), b.as_str()];
    con.seckill_init(&Init::new(a.as_str(), 5)).await.unwrap();
    con.seckill_init(&Init::new(b.as_str(), 1)).await.unwrap();
    let order = Order::new("ann", "o1")
        .line(a.as_str(), 1)
        .line(b.as_str(), 1)
        .hold(600);
    let held = con.seckill_order(&order).await.unwrap();
    assert!(held.taken);
    assert_eq!(held.lines, [taken(4), taken(0)]);
    let state = con.seckill_status(b.as_str(), "o1").await.unwrap().unwrap();
    assert_eq!(held.deadline, Some(state.deadline));
    assert_eq!(con.seckill_order(&order).await.unwrap(), held);
    let refused = con
        .seckill_order(
            &Order::new("bob", "o2")
                .line(a.as_str(), 1)
                .line(b.as_str(), 1),
        )
        .await
        .unwrap();
    assert_eq!(refused.lines, [NOT_JUDGED, refusing(Outcome::SoldOut)]);
    assert_eq!(
        con.seckill_confirm_order(&keys, "o1").await.unwrap(),
        OrderConfirmation {
            confirmed: true,
            lines: vec![Some(ConfirmOutcome::Confirmed); 2],
        }
    );
    assert_eq!(
        con.seckill_refund_order(&keys, "o1").await.unwrap(),
        [refunded(1), refunded(1)]
    );
    assert_eq!(con.seckill_get(b.as_str()).await.unwrap(), Some(1));
    let conflict = con
        .seckill_order(
            &Order::new("bob", "o1")
                .line(a.as_str(), 1)
                .line(b.as_str(), 1),
        )
        .await
        .unwrap_err();
    assert_eq!(conflict.kind(), Some(ErrorKind::RequestIdConflict));
}

/// A hash tag whose slot is served by another master than the slot of
/// `numlines`/`numkeys` (`"2"`): what redis-rs would route the order
/// commands by on its own.
fn tag_away_from_the_count(cluster: &Cluster, prefix: &str) -> String {
    let counts = cluster.owner(cluster.slot("2"));
    (0..)
        .map(|n| format!("{prefix}:{n}"))
        .find(|tag| cluster.owner(cluster.slot(tag)) != counts)
        .unwrap()
}

/// The order commands reach the master of their keys at once, sync and
/// async: routed by the first key, where redis-rs alone routes by the
/// count before it and is redirected.
#[test]
fn cluster_orders_reach_the_master_of_their_first_key() {
    let cluster = Cluster::start(3, 0);
    let mut con = cluster.client();
    let tag = tag_away_from_the_count(&cluster, "bundle");
    let now = now_ms(&mut cluster.con(0));
    let before = moved_count(&cluster);
    order_commands(&mut con, &tag, now);
    assert_eq!(moved_count(&cluster), before, "MOVED replies");

    // The same command sent as is: routed by its count, and redirected.
    let a = format!("{{{tag}}}:a");
    con.seckill_init(&Init::new(a.as_str(), 10)).unwrap();
    let order = Order::new("zed", "raw")
        .line(a.as_str(), 1)
        .line(format!("{{{tag}}}:phone"), 1);
    let raw: OrderResult = order.to_cmd().query(&mut con).unwrap();
    assert!(raw.taken);
    assert!(
        moved_count(&cluster) > before,
        "the raw command was not redirected"
    );

    // Keys of two slots: the server refuses the order, nothing taken.
    let other = format!("{{{tag}:x}}:b");
    con.seckill_init(&Init::new(other.as_str(), 10)).unwrap();
    let crossslot = con
        .seckill_order(
            &Order::new("zed", "cross")
                .line(a.as_str(), 1)
                .line(other.as_str(), 1),
        )
        .unwrap_err();
    assert!(
        crossslot.kind().is_none() && crossslot.to_string().to_uppercase().contains("CROSSSLOT"),
        "{crossslot}"
    );
    assert_eq!(con.seckill_get(a.as_str()).unwrap(), Some(9));

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let nodes: Vec<String> = cluster.live().map(|node| node.url()).collect();
        let client = redis::cluster::ClusterClient::new(nodes).unwrap();
        let mut con = client.get_async_connection().await.unwrap();
        let tag = tag_away_from_the_count(&cluster, "async-bundle");
        con.seckill_get(format!("{{{tag}}}:a")).await.unwrap();
        let before = moved_count(&cluster);
        async_orders(&mut con, &tag).await;
        assert_eq!(moved_count(&cluster), before, "MOVED replies (async)");
    });
}
