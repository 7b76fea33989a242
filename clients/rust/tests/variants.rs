//! Items with variants (several stocks under one per-user limit) through
//! the Rust client, against a real server with the module: a drop of
//! three sizes under `LIMIT 1`, on sync and async connections, RESP2 and
//! RESP3, in pipelines and transactions, and on a cluster.

use redis::Connection;
use seckill_client::command;
use seckill_client::{
    AsyncSeckillCommands, BuyerRecord, ConfirmOutcome, Deduct, DeductResult, ErrorKind, Hold, Init,
    ItemFigure, ItemInfo, OrderState, Outcome, RequestRecord, RequestStatus, ScanPage, ScanRecord,
    SeckillCommands, Stock, UNLIMITED_STOCK,
};
use seckill_harness::cluster::Cluster;
use seckill_harness::contract::{list, load as contract, text};
use seckill_harness::{ok, server_info, Server};

const FAR_FUTURE_MS: i64 = 4_102_444_800_000; // 2100-01-01

fn connect(server: &Server, resp3: bool) -> Connection {
    let url = format!(
        "redis://127.0.0.1:{}/{}",
        server.port,
        if resp3 { "?protocol=resp3" } else { "" }
    );
    redis::Client::open(url).unwrap().get_connection().unwrap()
}

/// The contract's wording of one of its errors, without the code.
fn contract_message(name: &str) -> String {
    let contract = contract();
    let error = list(&contract, "errors")
        .iter()
        .find(|error| text(error, "name") == name)
        .unwrap_or_else(|| panic!("{name} is not in the contract"));
    let code = text(error, "code");
    text(error, "text")[code.len()..].trim_start().to_owned()
}

/// A drop of three sizes, one pair per buyer.
fn drop_of_sizes(key: &str) -> Init {
    Init::with_variants(key, [("42", 2), ("43", 1), ("44", 5)]).limit(1)
}

fn buyer(user: &str, units: i64) -> ScanRecord {
    ScanRecord::Buyer(BuyerRecord {
        user: user.to_owned(),
        units,
    })
}

fn request(id: &str, user: &str, status: RequestStatus, deadline: i64) -> ScanRecord {
    ScanRecord::Request(RequestRecord {
        request_id: id.to_owned(),
        user: user.to_owned(),
        qty: 1,
        status,
        deadline,
    })
}

fn sorted(mut records: Vec<ScanRecord>) -> Vec<ScanRecord> {
    records.sort_by_key(|record| format!("{record:?}"));
    records
}

#[test]
fn init_sends_the_variants_and_their_limits() {
    let init = Init::with_variants(
        "{drop:1}",
        [("s", Stock::Units(3)), ("m", Stock::Unlimited)],
    )
    .limit(2)
    .variant_limit("s", 1)
    .variant_limit("m", 1)
    .replace();
    let mut expected = redis::cmd("SECKILL.INIT");
    expected
        .arg("{drop:1}")
        .arg("VARIANTS")
        .arg(2)
        .arg("s")
        .arg(3)
        .arg("m")
        .arg("UNLIMITED")
        .arg("LIMIT")
        .arg(2)
        .arg("VARIANTLIMIT")
        .arg("s")
        .arg(1)
        .arg("VARIANTLIMIT")
        .arg("m")
        .arg(1)
        .arg("REPLACE");
    assert_eq!(
        init.to_cmd().get_packed_command(),
        expected.get_packed_command()
    );

    let deduct = Deduct::new("{drop:1}", "ann", 1)
        .request_id("o1")
        .hold(60)
        .variant("s");
    let mut expected = redis::cmd("SECKILL.DEDUCT");
    expected
        .arg("{drop:1}")
        .arg("ann")
        .arg(1)
        .arg("ID")
        .arg("o1")
        .arg("HOLD")
        .arg(60)
        .arg("VARIANT")
        .arg("s")
        .arg("WITHDEADLINE");
    assert_eq!(
        deduct.to_cmd().get_packed_command(),
        expected.get_packed_command()
    );
}

/// The whole drop through the sync commands.
fn a_drop(con: &mut Connection) {
    let key = "{drop:7}";
    assert!(con.seckill_init(&drop_of_sizes(key)).unwrap());
    assert!(!con.seckill_init(&drop_of_sizes(key)).unwrap());

    // One pair per buyer, whatever the size.
    let ana = con
        .seckill_deduct(&Deduct::new(key, "ana", 1).request_id("o60").variant("43"))
        .unwrap();
    assert_eq!(
        ana,
        DeductResult {
            outcome: Outcome::Bought,
            stock: Some(0),
            deadline: None
        }
    );
    let second = con
        .seckill_deduct(&Deduct::new(key, "ana", 1).request_id("o61").variant("42"))
        .unwrap();
    assert_eq!(
        (second.outcome, second.stock),
        (Outcome::LimitReached, None)
    );
    let replay = con
        .seckill_deduct(&Deduct::new(key, "ana", 1).request_id("o60").variant("43"))
        .unwrap();
    assert_eq!(replay, ana);
    let sold_out = con
        .seckill_deduct(&Deduct::new(key, "ben", 1).request_id("o62").variant("43"))
        .unwrap();
    assert_eq!(sold_out.outcome, Outcome::SoldOut);
    let held = con
        .seckill_deduct(
            &Deduct::new(key, "ben", 1)
                .request_id("o63")
                .variant("44")
                .hold_until(FAR_FUTURE_MS),
        )
        .unwrap();
    assert_eq!(
        (held.outcome, held.stock, held.deadline),
        (Outcome::Bought, Some(4), Some(FAR_FUTURE_MS))
    );

    // The whole item, and each size.
    assert_eq!(con.seckill_get(key).unwrap(), Some(6));
    assert_eq!(con.seckill_get_variant(key, "42").unwrap(), Some(2));
    assert_eq!(con.seckill_get_variant(key, "43").unwrap(), Some(0));
    assert_eq!(con.seckill_get_variant(key, "44").unwrap(), Some(4));
    assert_eq!(
        con.seckill_get_variant("{drop:7}:none", "44").unwrap(),
        None
    );
    assert_eq!(con.seckill_bought(key, "ana").unwrap(), Some(1));
    assert_eq!(
        con.seckill_bought_variant(key, "ana", "43").unwrap(),
        Some(1)
    );
    assert_eq!(
        con.seckill_bought_variant(key, "ana", "42").unwrap(),
        Some(0)
    );

    let info = con.seckill_info(key).unwrap().unwrap();
    assert_eq!(info.variants, 3);
    assert_eq!(
        (info.stock, info.initial, info.sold, info.held, info.limit),
        (6, 8, 2, 1, 1)
    );
    let size_44 = con.seckill_info_variant(key, "44").unwrap().unwrap();
    assert_eq!(
        (size_44.stock, size_44.initial, size_44.sold, size_44.held),
        (4, 5, 1, 1)
    );
    assert_eq!(
        con.seckill_info_variant("{drop:7}:none", "44").unwrap(),
        None
    );

    // STATUS and HOLDS name the size; CONFIRM and REFUND find it by the
    // request id.
    assert_eq!(
        con.seckill_status(key, "o60").unwrap(),
        Some(OrderState {
            status: RequestStatus::Purchased,
            user: Some("ana".into()),
            qty: 1,
            deadline: 0,
            variant: Some("43".into()),
        })
    );
    let ben = con.seckill_status(key, "o63").unwrap().unwrap();
    assert_eq!(
        (ben.status, ben.deadline, ben.variant.as_deref()),
        (RequestStatus::Held, FAR_FUTURE_MS, Some("44"))
    );
    let unknown = con.seckill_status(key, "never").unwrap().unwrap();
    assert_eq!(unknown.status, RequestStatus::Unknown);
    let hold = Hold {
        request_id: "o63".into(),
        user: "ben".into(),
        qty: 1,
        deadline: FAR_FUTURE_MS,
        variant: Some("44".into()),
    };
    assert_eq!(
        con.seckill_holds(key, None::<&str>).unwrap(),
        Some(vec![hold.clone()])
    );
    assert_eq!(
        con.seckill_holds(key, Some("ben")).unwrap(),
        Some(vec![hold])
    );
    assert_eq!(con.seckill_holds(key, Some("ana")).unwrap(), Some(vec![]));

    // Restocking one size.
    assert_eq!(con.seckill_add_variant(key, 3, "43").unwrap(), Some(3));
    assert_eq!(con.seckill_get_variant(key, "43").unwrap(), Some(3));
    assert_eq!(con.seckill_get(key).unwrap(), Some(9));
    assert_eq!(
        con.seckill_add_variant("{drop:7}:none", 3, "43").unwrap(),
        None
    );

    // One size's records at a time.
    let page = con.seckill_scan_variant(key, 0, Some(100), "43").unwrap();
    assert_eq!(page.cursor, 0);
    let size_43 = vec![
        buyer("ana", 1),
        request("o60", "ana", RequestStatus::Purchased, 0),
    ];
    assert_eq!(sorted(page.records), sorted(size_43.clone()));
    let walked: Vec<ScanRecord> = con
        .seckill_scan_iter_variant(key, Some(1), "43")
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(sorted(walked), sorted(size_43));
    let size_44: Vec<ScanRecord> = con
        .seckill_scan_iter_variant(key, None, "44")
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(
        sorted(size_44),
        sorted(vec![
            buyer("ben", 1),
            request("o63", "ben", RequestStatus::Held, FAR_FUTURE_MS),
        ])
    );
    assert_eq!(
        con.seckill_scan_variant(key, 0, None, "42").unwrap(),
        ScanPage {
            cursor: 0,
            records: vec![]
        }
    );

    // A purchase, or a scan, that names no size is refused with the
    // module's own words.
    let unnamed = con.seckill_deduct(&Deduct::new(key, "cy", 1)).unwrap_err();
    let unnamed = unnamed.seckill().expect("a module error");
    assert_eq!(unnamed.kind, ErrorKind::InvalidArgument);
    assert_eq!(unnamed.code, "ERR");
    assert_eq!(
        unnamed.message,
        "the item sells variants: name one with VARIANT"
    );
    assert_eq!(unnamed.message, contract_message("variant_needed"));
    assert!(!unnamed.retryable());
    let scan = con.seckill_scan(key, 0, None).unwrap_err();
    assert_eq!(scan.kind(), Some(ErrorKind::InvalidArgument));
    assert_eq!(
        scan.seckill().unwrap().message,
        contract_message("variant_needed")
    );
    let no_such = con
        .seckill_deduct(&Deduct::new(key, "cy", 1).variant("45"))
        .unwrap_err();
    assert_eq!(no_such.kind(), Some(ErrorKind::InvalidArgument));
    assert_eq!(
        no_such.seckill().unwrap().message,
        contract_message("no_such_variant")
    );
    assert_eq!(con.seckill_get(key).unwrap(), Some(9), "nothing changed");

    // A refund frees the buyer's pair for another size; a confirmation
    // needs no size.
    assert_eq!(con.seckill_refund(key, "o60").unwrap().units, Some(1));
    let other = con
        .seckill_deduct(&Deduct::new(key, "ana", 1).request_id("o64").variant("42"))
        .unwrap();
    assert_eq!((other.outcome, other.stock), (Outcome::Bought, Some(1)));
    assert_eq!(
        con.seckill_confirm(key, "o63").unwrap(),
        ConfirmOutcome::Confirmed
    );
    assert_eq!(con.seckill_holds(key, None::<&str>).unwrap(), Some(vec![]));

    // A size of its own cap, and one that never runs out.
    let capped = "{drop:8}";
    assert!(con
        .seckill_init(
            &Init::with_variants(capped, [("s", Stock::Units(5)), ("m", Stock::Unlimited)])
                .limit(3)
                .variant_limit("s", 1)
        )
        .unwrap());
    assert_eq!(
        con.seckill_get_variant(capped, "m").unwrap(),
        Some(UNLIMITED_STOCK)
    );
    let s = |con: &mut Connection| {
        con.seckill_deduct(&Deduct::new(capped, "dee", 1).variant("s"))
            .unwrap()
            .outcome
    };
    assert_eq!(s(con), Outcome::Bought);
    assert_eq!(s(con), Outcome::LimitReached);
    let m = con
        .seckill_deduct(&Deduct::new(capped, "dee", 2).variant("m"))
        .unwrap();
    assert_eq!(m.stock, Some(UNLIMITED_STOCK));
    let over = con
        .seckill_deduct(&Deduct::new(capped, "dee", 1).variant("m"))
        .unwrap();
    assert_eq!(over.outcome, Outcome::LimitReached, "3 across the sizes");
    assert_eq!(con.seckill_bought(capped, "dee").unwrap(), Some(3));

    // An item without variants: no size in its replies, and none to name.
    assert!(con.seckill_init(&Init::new("{plain}", 5)).unwrap());
    con.seckill_deduct(&Deduct::new("{plain}", "eve", 1).request_id("p1").hold(600))
        .unwrap();
    assert_eq!(
        con.seckill_status("{plain}", "p1")
            .unwrap()
            .unwrap()
            .variant,
        None
    );
    let holds = con.seckill_holds("{plain}", None::<&str>).unwrap().unwrap();
    assert_eq!(holds.len(), 1);
    assert_eq!(holds[0].variant, None);
    assert_eq!(con.seckill_info("{plain}").unwrap().unwrap().variants, 0);
    let no_variants = con
        .seckill_deduct(&Deduct::new("{plain}", "eve", 1).variant("s"))
        .unwrap_err();
    assert_eq!(no_variants.kind(), Some(ErrorKind::InvalidArgument));
    assert_eq!(
        no_variants.seckill().unwrap().message,
        contract_message("no_variants")
    );
}

#[test]
fn a_drop_of_sizes_sells_one_pair_per_buyer_under_resp2_and_resp3() {
    let server = Server::start();
    for resp3 in [false, true] {
        let mut con = connect(&server, resp3);
        ok::<String>(&mut con, &["FLUSHALL"]);
        a_drop(&mut con);
    }
}

#[test]
fn pipelines_and_transactions_decode_the_variant_commands() {
    let server = Server::start();
    for resp3 in [false, true] {
        let mut con = connect(&server, resp3);
        ok::<String>(&mut con, &["FLUSHALL"]);
        for atomic in [false, true] {
            let key = format!("{{drop:{atomic}}}");
            let key = key.as_str();
            let mut pipe = redis::pipe();
            if atomic {
                pipe.atomic();
            }
            pipe.add_command(drop_of_sizes(key).to_cmd())
                .add_command(
                    Deduct::new(key, "ana", 1)
                        .request_id("o1")
                        .variant("44")
                        .hold_until(FAR_FUTURE_MS)
                        .to_cmd(),
                )
                .add_command(
                    Deduct::new(key, "ana", 1)
                        .request_id("o2")
                        .variant("42")
                        .to_cmd(),
                )
                .add_command(command::add_variant(key, 2, "43"))
                .add_command(command::get(key))
                .add_command(command::get_variant(key, "44"))
                .add_command(command::bought_variant(key, "ana", "44"))
                .add_command(command::info(key))
                .add_command(command::info_variant(key, "43"))
                .add_command(command::status(key, "o1"))
                .add_command(command::holds(key, None::<&str>))
                .add_command(command::scan_variant(key, 0, Some(10), "44"));
            #[allow(clippy::type_complexity)]
            let (
                created,
                held,
                limited,
                added,
                total,
                size_44,
                bought,
                info,
                size_43,
                state,
                holds,
                page,
            ): (
                bool,
                DeductResult,
                DeductResult,
                ItemFigure,
                Option<i64>,
                Option<i64>,
                Option<i64>,
                Option<ItemInfo>,
                Option<ItemInfo>,
                Option<OrderState>,
                Option<Vec<Hold>>,
                ScanPage,
            ) = pipe.query(&mut con).unwrap();
            assert!(created);
            assert_eq!((held.stock, held.deadline), (Some(4), Some(FAR_FUTURE_MS)));
            assert_eq!(limited.outcome, Outcome::LimitReached);
            assert_eq!(added, ItemFigure(Some(3)));
            assert_eq!(total, Some(9));
            assert_eq!(size_44, Some(4));
            assert_eq!(bought, Some(1));
            assert_eq!(info.unwrap().variants, 3);
            assert_eq!(size_43.unwrap().added, 2);
            assert_eq!(state.unwrap().variant.as_deref(), Some("44"));
            let holds = holds.unwrap();
            assert_eq!(holds.len(), 1);
            assert_eq!(holds[0].variant.as_deref(), Some("44"));
            assert_eq!(
                sorted(page.records),
                sorted(vec![
                    buyer("ana", 1),
                    request("o1", "ana", RequestStatus::Held, FAR_FUTURE_MS),
                ])
            );
        }
    }
}

#[test]
fn async_connections_have_the_variant_commands() {
    let server = Server::start();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let client = redis::Client::open(format!("redis://127.0.0.1:{}/", server.port)).unwrap();
        let mut con = client.get_multiplexed_async_connection().await.unwrap();
        let key = "{drop:9}";
        assert!(con.seckill_init(&drop_of_sizes(key)).await.unwrap());
        let held = con
            .seckill_deduct(
                &Deduct::new(key, "ana", 1)
                    .request_id("o1")
                    .variant("43")
                    .hold(600),
            )
            .await
            .unwrap();
        assert_eq!(held.stock, Some(0));
        let second = con
            .seckill_deduct(&Deduct::new(key, "ana", 1).variant("42"))
            .await
            .unwrap();
        assert_eq!(second.outcome, Outcome::LimitReached);
        let unnamed = con
            .seckill_deduct(&Deduct::new(key, "ben", 1))
            .await
            .unwrap_err();
        assert_eq!(
            unnamed.seckill().map(|err| err.message.as_str()),
            Some("the item sells variants: name one with VARIANT")
        );
        assert_eq!(con.seckill_get(key).await.unwrap(), Some(7));
        assert_eq!(con.seckill_get_variant(key, "42").await.unwrap(), Some(2));
        assert_eq!(
            con.seckill_bought_variant(key, "ana", "43").await.unwrap(),
            Some(1)
        );
        assert_eq!(con.seckill_info(key).await.unwrap().unwrap().variants, 3);
        assert_eq!(
            con.seckill_info_variant(key, "43")
                .await
                .unwrap()
                .unwrap()
                .held,
            1
        );
        let state = con.seckill_status(key, "o1").await.unwrap().unwrap();
        assert_eq!(
            (state.status, state.variant.as_deref()),
            (RequestStatus::Held, Some("43"))
        );
        let holds = con.seckill_holds(key, Some("ana")).await.unwrap().unwrap();
        assert_eq!(holds.len(), 1);
        assert_eq!(holds[0].variant.as_deref(), Some("43"));
        assert_eq!(
            con.seckill_add_variant(key, 1, "43").await.unwrap(),
            Some(1)
        );
        let page = con.seckill_scan_variant(key, 0, None, "43").await.unwrap();
        assert_eq!(page.records.len(), 2);
        let mut walked = Vec::new();
        let mut scan = con.seckill_scan_iter_variant(key, Some(1), "43");
        while let Some(record) = scan.next_record().await {
            walked.push(record.unwrap());
        }
        assert_eq!(sorted(walked), sorted(page.records));
        assert_eq!(
            con.seckill_confirm(key, "o1").await.unwrap(),
            ConfirmOutcome::Confirmed
        );
    });
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
fn cluster_variant_calls_reach_the_owner_without_a_redirection() {
    let cluster = Cluster::start(3, 0);
    let mut con = cluster.client();
    let keys: Vec<String> = (0..30).map(|n| format!("drop:{n}")).collect();
    for key in &keys {
        assert!(con.seckill_init(&drop_of_sizes(key.as_str())).unwrap());
    }
    let before = moved_count(&cluster);
    for (n, key) in keys.iter().enumerate() {
        let size = ["42", "43", "44"][n % 3];
        let bought = con
            .seckill_deduct(
                &Deduct::new(key.as_str(), "ana", 1)
                    .request_id("o1")
                    .variant(size),
            )
            .unwrap();
        assert!(bought.bought());
        assert_eq!(con.seckill_bought(key, "ana").unwrap(), Some(1));
        assert_eq!(con.seckill_get(key).unwrap(), Some(7));
        con.seckill_add_variant(key, 1, size).unwrap();
        con.seckill_get_variant(key, size).unwrap();
        con.seckill_bought_variant(key, "ana", size).unwrap();
        con.seckill_info_variant(key, size).unwrap();
        assert_eq!(
            con.seckill_scan_variant(key, 0, None, size)
                .unwrap()
                .records
                .len(),
            2
        );
        let state = con.seckill_status(key, "o1").unwrap().unwrap();
        assert_eq!(state.variant.as_deref(), Some(size));
    }
    assert_eq!(moved_count(&cluster), before, "MOVED replies");
}

/// An order of a size and a plain item: the variant line is judged under
/// the limit across sizes, a refused order takes nothing, and the whole
/// order is confirmed in the size it took.
#[test]
fn an_order_buys_a_size_and_a_plain_item_all_or_nothing() {
    let server = Server::start();
    let mut con = connect(&server, false);
    assert!(con.seckill_init(&drop_of_sizes("{c}drop")).unwrap());
    assert!(con.seckill_init(&Init::new("{c}laces", 10)).unwrap());
    let order = |request: &str, size: &str| {
        seckill_client::Order::new("ana", request)
            .variant_line("{c}drop", size, 1)
            .line("{c}laces", 2)
            .hold_until(FAR_FUTURE_MS)
    };
    let placed = con.seckill_order(&order("o1", "43")).unwrap();
    assert!(placed.taken);
    let stocks: Vec<Option<i64>> = placed.lines.iter().map(|line| line.stock).collect();
    assert_eq!(stocks, [Some(0), Some(8)]);
    assert_eq!(placed.deadline, Some(FAR_FUTURE_MS));
    // A second pair, in another size, is over her limit: nothing is taken.
    let refused = con.seckill_order(&order("o2", "44")).unwrap();
    assert!(!refused.taken);
    let outcomes: Vec<Option<Outcome>> = refused.lines.iter().map(|line| line.outcome).collect();
    assert_eq!(outcomes, [Some(Outcome::LimitReached), None]);
    assert_eq!(con.seckill_get("{c}laces").unwrap(), Some(8));
    let paid = con
        .seckill_confirm_order(&["{c}drop", "{c}laces"], "o1")
        .unwrap();
    assert!(paid.confirmed);
    let state = con.seckill_status("{c}drop", "o1").unwrap();
    assert_eq!(
        state.map(|state| state.variant),
        Some(Some("43".to_owned()))
    );
}
