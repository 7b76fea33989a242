//! The cart helper on a real 3-master cluster, with the items of each cart
//! on three different shards: placed, confirmed and cancelled; refused
//! whole by one sold-out line; and killed after each of its server
//! commands, in a separate process, then resumed with the same call: every
//! line held under the cart id or none, and no unit taken twice.
//!
//! The killed process is this test binary run again with the environment
//! variables of `CartRun`, which run only `child_process_for_the_crash_tests`.

use redis::{Cmd, ConnectionLike, RedisResult, Value};
use seckill_client::cart::{self, Payment, Placement};
use seckill_client::{
    ConfirmOutcome, Init, ItemInfo, Outcome, RefundOutcome, RefundResult, RequestStatus,
    SeckillCommands,
};
use seckill_harness::cluster::Cluster;
use std::collections::HashMap;
use std::process::Command;

/// Item keys whose slots three different masters own, found by asking the
/// cluster, so that each line of a cart is on its own shard.
fn items_on_three_masters(cluster: &Cluster, prefix: &str) -> Vec<String> {
    let mut owners_seen = Vec::new();
    let mut items = Vec::new();
    for i in 0.. {
        let key = format!("{prefix}:{i}");
        let owner = cluster.owner(cluster.slot(&key));
        if !owners_seen.contains(&owner) {
            owners_seen.push(owner);
            items.push(key);
        }
        if items.len() == 3 {
            break;
        }
    }
    items
}

fn status<C: SeckillCommands>(con: &mut C, key: &str, cart_id: &str) -> RequestStatus {
    con.seckill_status(key, cart_id).unwrap().unwrap().status
}

fn info<C: SeckillCommands>(con: &mut C, key: &str) -> ItemInfo {
    con.seckill_info(key).unwrap().unwrap()
}

/// No unit counted twice or lost: what is on sale and what is sold add up
/// to what came in and what went back.
fn assert_units_add_up<C: SeckillCommands>(con: &mut C, key: &str) {
    let info = info(con, key);
    assert_eq!(
        info.stock + info.sold,
        info.initial + info.added + info.refunded + info.expired,
        "{key}: {info:?}"
    );
}

fn refunded(units: i64) -> RefundResult {
    RefundResult {
        outcome: RefundOutcome::Refunded,
        units: Some(units),
    }
}

fn nothing(outcome: RefundOutcome) -> RefundResult {
    RefundResult {
        outcome,
        units: None,
    }
}

#[test]
fn a_cart_across_three_shards_is_placed_confirmed_and_cancelled() {
    let cluster = Cluster::start(3, 0);
    let mut con = cluster.client();
    let items = items_on_three_masters(&cluster, "sku:cart");
    for item in &items {
        assert!(con.seckill_init(&Init::new(item.as_str(), 10)).unwrap());
    }
    let lines: Vec<(&str, i64)> = items.iter().map(String::as_str).zip([1, 2, 3]).collect();
    let keys: Vec<&str> = items.iter().map(String::as_str).collect();

    // Placed: every line held under the cart id, until the earliest
    // deadline.
    let placed = cart::place(&mut con, "cart:1", "ann", &lines, 600).unwrap();
    let Placement::Placed {
        lines: held,
        deadline,
    } = &placed
    else {
        panic!("not placed: {placed:?}");
    };
    let stocks: Vec<Option<i64>> = held.iter().map(|line| line.stock).collect();
    assert_eq!(stocks, [Some(9), Some(8), Some(7)]);
    let earliest = held.iter().map(|line| line.deadline.unwrap()).min();
    assert_eq!(*deadline, earliest);
    for (key, qty) in &lines {
        let state = con.seckill_status(*key, "cart:1").unwrap().unwrap();
        assert_eq!(
            (state.status, state.user.as_deref(), state.qty),
            (RequestStatus::Held, Some("ann"), *qty)
        );
    }
    // A retry holds nothing more: the very same answer.
    assert_eq!(
        cart::place(&mut con, "cart:1", "ann", &lines, 600).unwrap(),
        placed
    );
    assert_eq!(con.seckill_get(keys[2]).unwrap(), Some(7));

    // Paid: every line confirmed, once.
    assert_eq!(
        cart::confirm(&mut con, "cart:1", &keys).unwrap(),
        Payment::Paid {
            lines: vec![ConfirmOutcome::Confirmed; 3]
        }
    );
    assert_eq!(
        cart::confirm(&mut con, "cart:1", &keys).unwrap(),
        Payment::Paid {
            lines: vec![ConfirmOutcome::AlreadyFinal; 3]
        }
    );
    for key in &keys {
        assert_eq!(status(&mut con, key, "cart:1"), RequestStatus::Confirmed);
    }

    // Cancelled: every line given back, and never taken again under the
    // cart id: a retry of the placement says the cart was refused before.
    assert!(matches!(
        cart::place(&mut con, "cart:2", "bob", &lines, 600).unwrap(),
        Placement::Placed { .. }
    ));
    assert_eq!(
        cart::cancel(&mut con, "cart:2", &keys).unwrap(),
        [refunded(1), refunded(2), refunded(3)]
    );
    assert_eq!(
        cart::place(&mut con, "cart:2", "bob", &lines, 600).unwrap(),
        Placement::Refused {
            line: 0,
            outcome: Outcome::Cancelled,
            given_back: vec![nothing(RefundOutcome::AlreadyRefunded); 3],
        }
    );
    for key in &keys {
        assert_eq!(status(&mut con, key, "cart:2"), RequestStatus::Refunded);
        assert_eq!(con.seckill_bought(*key, "bob").unwrap(), Some(0));
    }

    // Not paid: one line's hold lapsed before the payment, so every line
    // is given back and the application refunds the payment.
    assert!(matches!(
        cart::place(&mut con, "cart:3", "cat", &lines, 600).unwrap(),
        Placement::Placed { .. }
    ));
    assert_eq!(con.seckill_release(keys[1], &["cart:3"]).unwrap(), Some(1));
    let not_paid = Payment::NotPaid {
        line: 1,
        outcome: ConfirmOutcome::Lapsed,
        given_back: vec![refunded(1), nothing(RefundOutcome::Lapsed), refunded(3)],
    };
    assert_eq!(cart::confirm(&mut con, "cart:3", &keys).unwrap(), not_paid);
    // A retry: the first line, given back now, fails first.
    assert_eq!(
        cart::confirm(&mut con, "cart:3", &keys).unwrap(),
        Payment::NotPaid {
            line: 0,
            outcome: ConfirmOutcome::Refunded,
            given_back: vec![
                nothing(RefundOutcome::AlreadyRefunded),
                nothing(RefundOutcome::Lapsed),
                nothing(RefundOutcome::AlreadyRefunded),
            ],
        }
    );
    // An unknown cart: nothing to confirm, nothing to give back.
    assert_eq!(
        cart::confirm(&mut con, "cart:never", &keys).unwrap(),
        Payment::NotPaid {
            line: 0,
            outcome: ConfirmOutcome::UnknownRequest,
            given_back: vec![nothing(RefundOutcome::UnknownRequest); 3],
        }
    );

    // Only cart:1 kept its units.
    let stocks: Vec<Option<i64>> = keys
        .iter()
        .map(|key| con.seckill_get(*key).unwrap())
        .collect();
    assert_eq!(stocks, [Some(9), Some(8), Some(7)]);
    for key in &keys {
        assert_units_add_up(&mut con, key);
    }
}

#[test]
fn a_cart_refused_by_one_sold_out_line_leaves_no_line_held() {
    let cluster = Cluster::start(3, 0);
    let mut con = cluster.client();
    let items = items_on_three_masters(&cluster, "sku:refused");
    for (item, stock) in items.iter().zip([5, 1, 5]) {
        con.seckill_init(&Init::new(item.as_str(), stock)).unwrap();
    }
    let lines: Vec<(&str, i64)> = items.iter().map(String::as_str).zip([1, 2, 1]).collect();
    let refused = Placement::Refused {
        line: 1,
        outcome: Outcome::SoldOut,
        given_back: vec![
            refunded(1),
            nothing(RefundOutcome::UnknownRequest),
            nothing(RefundOutcome::UnknownRequest),
        ],
    };
    assert_eq!(
        cart::place(&mut con, "cart:9", "dan", &lines, 600).unwrap(),
        refused
    );
    let check = |con: &mut redis::cluster::ClusterConnection| {
        for ((key, _), stock) in lines.iter().zip([5, 1, 5]) {
            let status = status(con, key, "cart:9");
            assert!(
                matches!(status, RequestStatus::Refunded | RequestStatus::Unknown),
                "{key} {status:?}"
            );
            assert_eq!(con.seckill_get(*key).unwrap(), Some(stock), "{key}");
            assert_eq!(con.seckill_bought(*key, "dan").unwrap(), Some(0));
            assert!(con
                .seckill_holds(*key, None::<&str>)
                .unwrap()
                .unwrap()
                .is_empty());
            assert_units_add_up(con, key);
        }
    };
    check(&mut con);
    // A retry: the first line was given back, so the cart was refused
    // before; still nothing held.
    assert!(matches!(
        cart::place(&mut con, "cart:9", "dan", &lines, 600).unwrap(),
        Placement::Refused {
            line: 0,
            outcome: Outcome::Cancelled,
            ..
        }
    ));
    check(&mut con);
}

/// A cart with a size of a drop on one shard: held in that size, under the
/// drop's limit across sizes, and confirmed and given back without naming
/// it.
#[test]
fn a_cart_holds_a_size_of_a_drop_and_confirms_it_by_the_cart_id() {
    let cluster = Cluster::start(3, 0);
    let mut con = cluster.client();
    let items = items_on_three_masters(&cluster, "sku:sized");
    con.seckill_init(&Init::with_variants(items[0].as_str(), [("42", 1), ("43", 1)]).limit(1))
        .unwrap();
    for item in &items[1..] {
        con.seckill_init(&Init::new(item.as_str(), 5)).unwrap();
    }
    let lines = [
        (items[0].as_str(), 1, Some("43")),
        (items[1].as_str(), 1, None),
        (items[2].as_str(), 2, None),
    ];
    assert!(matches!(
        cart::place(&mut con, "cart:s1", "eve", &lines, 600).unwrap(),
        Placement::Placed { .. }
    ));
    let state = con
        .seckill_status(items[0].as_str(), "cart:s1")
        .unwrap()
        .unwrap();
    assert_eq!(state.variant.as_deref(), Some("43"));
    // Another size in another cart is over eve's limit of one pair.
    let other = [(items[0].as_str(), 1, Some("42"))];
    assert!(matches!(
        cart::place(&mut con, "cart:s2", "eve", &other, 600).unwrap(),
        Placement::Refused {
            line: 0,
            outcome: Outcome::LimitReached,
            ..
        }
    ));
    let keys: Vec<&str> = items.iter().map(String::as_str).collect();
    assert!(matches!(
        cart::confirm(&mut con, "cart:s1", &keys).unwrap(),
        Payment::Paid { .. }
    ));
    assert_eq!(
        status(&mut con, &items[0], "cart:s1"),
        RequestStatus::Confirmed
    );
    assert_eq!(
        con.seckill_get_variant(items[0].as_str(), "43").unwrap(),
        Some(0)
    );
}

// The crash at each step.

const CHILD_TEST: &str = "child_process_for_the_crash_tests";
const RUN_ENV: &str = "SECKILL_CART_RUN";
const NODES_ENV: &str = "SECKILL_CART_NODES";
const CRASH_AFTER_ENV: &str = "SECKILL_CART_CRASH_AFTER";
/// The child's exit status when it stopped dead after its k-th command.
const CRASHED: i32 = 86;
/// The line the child prints when it ran to the end: how many commands.
const SENT_MARKER: &str = "commands sent: ";

/// What the child runs, and the test process runs again to resume it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    Place,
    PlaceAndConfirm,
    Confirm,
}

#[derive(Clone, Debug)]
struct CartRun {
    step: Step,
    cart_id: String,
    user: String,
    lines: Vec<(String, i64)>,
}

#[derive(Debug)]
struct Finished {
    placement: Option<Placement>,
    payment: Option<Payment>,
}

impl CartRun {
    fn keys(&self) -> Vec<&str> {
        self.lines.iter().map(|(key, _)| key.as_str()).collect()
    }

    /// The helper's calls, exactly as an application would make them.
    fn run<C: SeckillCommands>(&self, con: &mut C) -> Finished {
        let mut finished = Finished {
            placement: None,
            payment: None,
        };
        if matches!(self.step, Step::Place | Step::PlaceAndConfirm) {
            let placement = cart::place(con, &self.cart_id, &self.user, &self.lines, 600).unwrap();
            let placed = matches!(placement, Placement::Placed { .. });
            finished.placement = Some(placement);
            if !placed {
                return finished;
            }
        }
        if matches!(self.step, Step::PlaceAndConfirm | Step::Confirm) {
            finished.payment = Some(cart::confirm(con, &self.cart_id, &self.keys()).unwrap());
        }
        finished
    }

    /// `step cart_id user key=qty ...`: no key has a space or an `=`.
    fn encode(&self) -> String {
        let lines: Vec<String> = self
            .lines
            .iter()
            .map(|(key, qty)| format!("{key}={qty}"))
            .collect();
        format!(
            "{:?} {} {} {}",
            self.step,
            self.cart_id,
            self.user,
            lines.join(" ")
        )
    }

    fn decode(text: &str) -> CartRun {
        let mut words = text.split(' ');
        let step = match words.next().unwrap() {
            "Place" => Step::Place,
            "PlaceAndConfirm" => Step::PlaceAndConfirm,
            "Confirm" => Step::Confirm,
            other => panic!("unknown step {other}"),
        };
        let cart_id = words.next().unwrap().to_owned();
        let user = words.next().unwrap().to_owned();
        let lines = words
            .map(|line| {
                let (key, qty) = line.split_once('=').unwrap();
                (key.to_owned(), qty.parse().unwrap())
            })
            .collect();
        CartRun {
            step,
            cart_id,
            user,
            lines,
        }
    }
}

/// A connection that counts the server commands sent through it and ends
/// the process, with no cleanup, right after the reply to the
/// `crash_after`-th (never if `None`).
struct CrashAfter<C> {
    con: C,
    sent: usize,
    crash_after: Option<usize>,
}

impl<C> CrashAfter<C> {
    fn count(&mut self, commands: usize) {
        self.sent += commands;
        if self.crash_after.is_some_and(|k| self.sent >= k) {
            std::process::exit(CRASHED);
        }
    }
}

impl<C: ConnectionLike> ConnectionLike for CrashAfter<C> {
    fn req_packed_command(&mut self, cmd: &[u8]) -> RedisResult<Value> {
        let reply = self.con.req_packed_command(cmd);
        self.count(1);
        reply
    }

    fn req_packed_commands(
        &mut self,
        cmd: &[u8],
        offset: usize,
        count: usize,
    ) -> RedisResult<Vec<Value>> {
        let replies = self.con.req_packed_commands(cmd, offset, count);
        self.count(offset + count);
        replies
    }

    fn req_command(&mut self, cmd: &Cmd) -> RedisResult<Value> {
        let reply = self.con.req_command(cmd);
        self.count(1);
        reply
    }

    fn get_db(&self) -> i64 {
        self.con.get_db()
    }

    fn supports_pipelining(&self) -> bool {
        self.con.supports_pipelining()
    }

    fn check_connection(&mut self) -> bool {
        self.con.check_connection()
    }

    fn is_open(&self) -> bool {
        self.con.is_open()
    }
}

/// Not a test of its own: the body of the child process the crash tests
/// start (it does nothing when run without their environment).
#[test]
fn child_process_for_the_crash_tests() {
    let Ok(run) = std::env::var(RUN_ENV) else {
        return;
    };
    let run = CartRun::decode(&run);
    let nodes: Vec<String> = std::env::var(NODES_ENV)
        .unwrap()
        .split(',')
        .map(str::to_owned)
        .collect();
    let crash_after = std::env::var(CRASH_AFTER_ENV)
        .ok()
        .map(|k| k.parse().unwrap());
    let client = redis::cluster::ClusterClient::new(nodes).unwrap();
    let mut con = CrashAfter {
        con: client.get_connection().unwrap(),
        sent: 0,
        crash_after,
    };
    run.run(&mut con);
    println!("{SENT_MARKER}{}", con.sent);
}

/// Runs `run` in a child process that stops dead after its
/// `crash_after`-th command (or runs to the end): whether it crashed, and
/// how many commands it sent if it ran to the end.
fn run_child(cluster: &Cluster, run: &CartRun, crash_after: Option<usize>) -> Option<usize> {
    let nodes: Vec<String> = cluster.live().map(|node| node.url()).collect();
    let mut child = Command::new(std::env::current_exe().unwrap());
    child
        .args([CHILD_TEST, "--exact", "--nocapture", "--test-threads=1"])
        .env(RUN_ENV, run.encode())
        .env(NODES_ENV, nodes.join(","))
        .env_remove(CRASH_AFTER_ENV);
    if let Some(k) = crash_after {
        child.env(CRASH_AFTER_ENV, k.to_string());
    }
    let output = child.output().expect("run the child process");
    let stdout = String::from_utf8_lossy(&output.stdout);
    if output.status.code() == Some(CRASHED) {
        return None;
    }
    assert!(
        output.status.success(),
        "the child failed ({}):\n{stdout}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    let sent = stdout
        .lines()
        .find_map(|line| Some(line.split_once(SENT_MARKER)?.1))
        .unwrap_or_else(|| panic!("no command count from the child:\n{stdout}"));
    Some(sent.parse().unwrap())
}

/// A scenario: a cart over three items on three shards, run by a child
/// killed after each of its commands in turn, then resumed here.
struct Scenario<'a> {
    cluster: &'a Cluster,
    con: redis::cluster::ClusterConnection,
    name: &'static str,
    step: Step,
    items: Vec<String>,
    qtys: [i64; 3],
    /// The units each item's carts keep (held or confirmed), for the
    /// stock it must show.
    kept: HashMap<String, i64>,
    initial: HashMap<String, i64>,
}

impl Scenario<'_> {
    fn start<'a>(
        cluster: &'a Cluster,
        name: &'static str,
        step: Step,
        stocks: [i64; 3],
        qtys: [i64; 3],
    ) -> Scenario<'a> {
        let mut con = cluster.client();
        let items = items_on_three_masters(cluster, &format!("sku:{name}"));
        for (item, stock) in items.iter().zip(stocks) {
            assert!(con.seckill_init(&Init::new(item.as_str(), stock)).unwrap());
        }
        Scenario {
            cluster,
            con,
            name,
            step,
            kept: items.iter().map(|item| (item.clone(), 0)).collect(),
            initial: items.iter().cloned().zip(stocks).collect(),
            items,
            qtys,
        }
    }

    fn cart(&self, attempt: &str) -> CartRun {
        CartRun {
            step: self.step,
            cart_id: format!("cart:{}:{attempt}", self.name),
            user: format!("user:{}:{attempt}", self.name),
            lines: self.items.iter().cloned().zip(self.qtys).collect(),
        }
    }

    /// The child runs `cart` (placed first by this process for a `Confirm`
    /// step, with `prepare` applied), dies after `crash_after` commands,
    /// and the same call made here ends it: every line of the cart held
    /// under the cart id or none, each user's units exactly its held
    /// lines, every item's units adding up. Returns the commands of a run
    /// to the end when the child was not killed, and the resumed call's
    /// outcome.
    fn crash_and_resume(
        &mut self,
        cart: &CartRun,
        crash_after: Option<usize>,
        prepare: impl Fn(&mut redis::cluster::ClusterConnection, &CartRun),
    ) -> (Option<usize>, Finished) {
        if cart.step == Step::Confirm {
            let placement =
                cart::place(&mut self.con, &cart.cart_id, &cart.user, &cart.lines, 600).unwrap();
            assert!(
                matches!(placement, Placement::Placed { .. }),
                "{placement:?}"
            );
            prepare(&mut self.con, cart);
        }
        let sent = run_child(self.cluster, cart, crash_after);
        assert_eq!(
            sent.is_none(),
            crash_after.is_some(),
            "{}: the child was to stop after command {crash_after:?}",
            cart.cart_id
        );
        let finished = cart.run(&mut self.con);

        let statuses: Vec<RequestStatus> = cart
            .keys()
            .iter()
            .map(|key| status(&mut self.con, key, &cart.cart_id))
            .collect();
        let kept = |status: &RequestStatus| {
            matches!(status, RequestStatus::Held | RequestStatus::Confirmed)
        };
        let all = statuses.iter().all(kept);
        assert!(
            all || !statuses.iter().any(kept),
            "{} after a crash at {crash_after:?}: some lines kept, not all: {statuses:?}",
            cart.cart_id
        );
        for ((key, qty), status) in cart.lines.iter().zip(&statuses) {
            let units = if kept(status) { *qty } else { 0 };
            assert_eq!(
                self.con.seckill_bought(key.as_str(), &cart.user).unwrap(),
                Some(units),
                "{} on {key}",
                cart.user
            );
            *self.kept.get_mut(key).unwrap() += units;
        }
        for key in &self.items {
            assert_eq!(
                self.con.seckill_get(key.as_str()).unwrap(),
                Some(self.initial[key] - self.kept[key]),
                "{key}: units taken twice or lost"
            );
            assert_units_add_up(&mut self.con, key);
        }
        (sent, finished)
    }

    /// A run to the end in a child first, for the number of commands it
    /// sends; then a child killed after each of them in turn.
    fn every_step(
        &mut self,
        prepare: impl Fn(&mut redis::cluster::ClusterConnection, &CartRun),
        check: impl Fn(&mut redis::cluster::ClusterConnection, &CartRun, Finished),
        commands: usize,
    ) {
        let cart = self.cart("whole");
        let (sent, finished) = self.crash_and_resume(&cart, None, &prepare);
        assert_eq!(
            sent,
            Some(commands),
            "{}: commands of a whole run",
            self.name
        );
        check(&mut self.con, &cart, finished);
        for k in 1..=commands {
            let cart = self.cart(&format!("k{k}"));
            let (_, finished) = self.crash_and_resume(&cart, Some(k), &prepare);
            check(&mut self.con, &cart, finished);
        }
    }
}

fn statuses(con: &mut redis::cluster::ClusterConnection, cart: &CartRun) -> Vec<RequestStatus> {
    cart.keys()
        .iter()
        .map(|key| status(con, key, &cart.cart_id))
        .collect()
}

/// Confirmed after the resume: every line a final purchase.
fn paid(con: &mut redis::cluster::ClusterConnection, cart: &CartRun) {
    let payment = cart::confirm(con, &cart.cart_id, &cart.keys()).unwrap();
    assert!(matches!(payment, Payment::Paid { .. }), "{payment:?}");
    assert_eq!(statuses(con, cart), [RequestStatus::Confirmed; 3]);
}

fn no_prepare(_: &mut redis::cluster::ClusterConnection, _: &CartRun) {}

#[test]
fn a_cart_killed_after_any_command_and_resumed_is_held_whole_or_not_at_all() {
    let cluster = Cluster::start(3, 0);

    // Placed: three holds. Resumed, every line is held; confirmed, every
    // line is paid.
    let mut placed = Scenario::start(&cluster, "placed", Step::Place, [100; 3], [1, 2, 3]);
    placed.every_step(
        no_prepare,
        |con, cart, finished| {
            assert!(
                matches!(finished.placement, Some(Placement::Placed { .. })),
                "{finished:?}"
            );
            assert_eq!(statuses(con, cart), [RequestStatus::Held; 3]);
            paid(con, cart);
        },
        3,
    );

    // Refused by its second line (sold out): two holds tried, three lines
    // given back. Resumed, no line is held.
    let mut refused = Scenario::start(&cluster, "refused", Step::Place, [100, 1, 100], [1, 2, 3]);
    refused.every_step(
        no_prepare,
        |con, cart, finished| {
            let Some(Placement::Refused { outcome, .. }) = finished.placement else {
                panic!("not refused: {finished:?}");
            };
            assert!(
                matches!(outcome, Outcome::SoldOut | Outcome::Cancelled),
                "{outcome:?}"
            );
            for status in statuses(con, cart) {
                assert!(
                    matches!(status, RequestStatus::Refunded | RequestStatus::Unknown),
                    "{status:?}"
                );
            }
        },
        5,
    );

    // Placed and paid in one run: three holds, three confirmations.
    let mut paid_run =
        Scenario::start(&cluster, "paid", Step::PlaceAndConfirm, [100; 3], [1, 2, 3]);
    paid_run.every_step(
        no_prepare,
        |con, cart, finished| {
            assert!(
                matches!(finished.payment, Some(Payment::Paid { .. })),
                "{finished:?}"
            );
            paid(con, cart);
        },
        6,
    );

    // Paid too late: the second line's hold lapsed (released here before
    // the child runs), so the confirmation gives every line back: one
    // confirmation, one refused, three refunds.
    let mut lapsed = Scenario::start(&cluster, "lapsed", Step::Confirm, [100; 3], [1, 2, 3]);
    lapsed.every_step(
        |con, cart| {
            let key = cart.lines[1].0.as_str();
            assert_eq!(
                con.seckill_release(key, &[cart.cart_id.as_str()]).unwrap(),
                Some(1)
            );
        },
        |con, cart, finished| {
            let Some(Payment::NotPaid { outcome, .. }) = finished.payment else {
                panic!("paid: {finished:?}");
            };
            assert!(
                matches!(outcome, ConfirmOutcome::Lapsed | ConfirmOutcome::Refunded),
                "{outcome:?}"
            );
            for status in statuses(con, cart) {
                assert!(
                    matches!(status, RequestStatus::Refunded | RequestStatus::Lapsed),
                    "{status:?}"
                );
            }
        },
        5,
    );
}
