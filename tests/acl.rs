//! Who may do what: ACL users limited to some SECKILL commands and to a key
//! pattern. On Redis 7.0 module commands belong to no ACL category, so rules
//! name them; where the server has categories for module commands (Redis
//! 7.2 and later, Valkey), the module puts them in @read or @write.
//! Also: a user with @write still cannot send SECKILL.LOADCHUNK, and a user
//! who may not write the order stream key cannot name it as the stream.

mod common;

use common::{error, hold_chunk, load_chunk, ok, refusal_line, Server};
use std::time::Duration;

fn as_user(server: &Server, user: &str) -> redis::Connection {
    let mut con = server.client();
    ok::<String>(&mut con, &["AUTH", user, "secret"]);
    con
}

fn refusal(con: &mut redis::Connection, args: &[&str]) -> String {
    match common::run::<redis::Value>(con, args) {
        Ok(value) => panic!("{args:?} was allowed: {value:?}"),
        Err(err) => err.code().unwrap_or_default().to_owned(),
    }
}

#[test]
fn a_reader_reads_but_cannot_deduct_and_a_buyer_stays_in_its_keys() {
    let server = Server::start();
    let mut admin = server.client();
    ok::<i64>(&mut admin, &["SECKILL.INIT", "sku:1", "10"]);
    ok::<i64>(&mut admin, &["SECKILL.INIT", "other:1", "10"]);
    ok::<String>(
        &mut admin,
        &[
            "ACL",
            "SETUSER",
            "reader",
            "on",
            ">secret",
            "~sku:*",
            "+seckill.get",
            "+seckill.info",
        ],
    );
    ok::<String>(
        &mut admin,
        &[
            "ACL",
            "SETUSER",
            "buyer",
            "on",
            ">secret",
            "~sku:*",
            "+seckill.deduct",
            "+seckill.get",
        ],
    );

    let mut reader = as_user(&server, "reader");
    assert_eq!(ok::<i64>(&mut reader, &["SECKILL.GET", "sku:1"]), 10);
    assert_eq!(common::info_field(&mut reader, "sku:1", "stock"), 10);
    assert_eq!(
        refusal(&mut reader, &["SECKILL.DEDUCT", "sku:1", "eve", "1"]),
        "NOPERM"
    );
    assert_eq!(refusal(&mut reader, &["SECKILL.GET", "other:1"]), "NOPERM");

    let mut buyer = as_user(&server, "buyer");
    assert_eq!(
        ok::<i64>(&mut buyer, &["SECKILL.DEDUCT", "sku:1", "bob", "1"]),
        9
    );
    assert_eq!(
        refusal(&mut buyer, &["SECKILL.DEDUCT", "other:1", "bob", "1"]),
        "NOPERM"
    );
    assert_eq!(
        refusal(&mut buyer, &["SECKILL.REFUND", "sku:1", "r1"]),
        "NOPERM"
    );
    assert_eq!(ok::<i64>(&mut admin, &["SECKILL.GET", "other:1"]), 10);
}

#[test]
fn commands_join_the_read_and_write_categories_where_the_server_has_them() {
    let server = Server::start();
    let mut con = server.client();
    let version: String =
        common::server_info(&mut con, "server", "redis_version").unwrap_or_default();
    let has_module_categories = common::server_info(&mut con, "server", "server_name").is_some()
        || version.as_str() >= "7.2";
    let read: Vec<String> = ok(&mut con, &["ACL", "CAT", "read"]);
    let write: Vec<String> = ok(&mut con, &["ACL", "CAT", "write"]);
    let in_read = read.iter().any(|c| c == "seckill.get");
    let in_write = write.iter().any(|c| c == "seckill.deduct");
    assert_eq!(in_read, has_module_categories, "seckill.get in @read");
    assert_eq!(in_write, has_module_categories, "seckill.deduct in @write");
    assert!(!write.iter().any(|c| c == "seckill.get"));
}

/// Creates `user` with password "secret" and `rules`.
fn add_user(admin: &mut redis::Connection, user: &str, rules: &[&str]) {
    let mut args = vec!["ACL", "SETUSER", user, "reset", "on", ">secret"];
    args.extend_from_slice(rules);
    ok::<String>(admin, &args);
}

/// SECKILL.STREAM names a key the item will write on every later sale, so
/// the server checks it with SECKILL.STREAM's own rights: a selector that
/// lets the user only read that key (or run another command on it) is no
/// licence to make the module write it.
#[test]
fn stream_needs_the_right_to_write_the_stream_key_with_this_command() {
    let server = Server::start();
    let mut admin = server.client();
    ok::<i64>(&mut admin, &["SECKILL.INIT", "sku:{t}", "10"]);
    let root = ["~sku:*", "+seckill.stream", "+seckill.deduct"];
    let cases: &[(&str, &[&str], bool)] = &[
        // (user, rules besides the root's, may name other:{t}:s)
        ("selector-get", &["(~other:* +get)"], false),
        (
            "selector-stream",
            &["(~other:* ~sku:* +seckill.stream)"],
            true,
        ),
        ("read-only", &["%R~other:*"], false),
        ("write-only", &["%W~other:*"], true),
        ("no-key", &[], false),
    ];
    for &(user, rules, allowed) in cases {
        let mut all = root.to_vec();
        all.extend_from_slice(rules);
        add_user(&mut admin, user, &all);
        let mut con = as_user(&server, user);
        let args = ["SECKILL.STREAM", "sku:{t}", "other:{t}:s"];
        if allowed {
            assert_eq!(ok::<i64>(&mut con, &args), 1, "{user}");
            ok::<i64>(&mut admin, &["SECKILL.STREAM", "sku:{t}"]);
        } else {
            assert_eq!(refusal(&mut con, &args), "NOPERM", "{user}");
            let info: redis::Value = ok(&mut admin, &["SECKILL.INFO", "sku:{t}"]);
            assert!(
                !format!("{info:?}").contains("other:"),
                "{user} set the stream anyway: {info:?}"
            );
        }
        // Nothing written where the user may not write.
        ok::<i64>(&mut con, &["SECKILL.DEDUCT", "sku:{t}", user, "1"]);
        assert_eq!(
            ok::<i64>(&mut admin, &["EXISTS", "other:{t}:s"]),
            0,
            "{user}"
        );
    }
}

/// The same rules through INIT ... STREAM, which declares the stream after
/// its keyword.
#[test]
fn init_needs_the_right_to_write_the_stream_key_with_this_command() {
    let server = Server::start();
    let mut admin = server.client();
    let cases: &[(&str, &[&str], bool)] = &[
        ("selector-get", &["(~other:* +get)"], false),
        ("read-only", &["%R~other:*"], false),
        ("write-only", &["%W~other:*"], true),
    ];
    for &(user, rules, allowed) in cases {
        let mut all = vec!["~sku:*", "+seckill.init"];
        all.extend_from_slice(rules);
        add_user(&mut admin, user, &all);
        let mut con = as_user(&server, user);
        let key = format!("sku:{{{user}}}");
        let stream = format!("other:{{{user}}}:s");
        let args = ["SECKILL.INIT", &key, "10", "STREAM", &stream];
        if allowed {
            assert_eq!(ok::<i64>(&mut con, &args), 1, "{user}");
        } else {
            assert_eq!(refusal(&mut con, &args), "NOPERM", "{user}");
            assert_eq!(ok::<i64>(&mut admin, &["EXISTS", &key]), 0, "{user}");
        }
    }
}

/// A variant or a VARIANTLIMIT named STREAM is not the option: the stream
/// INIT reads is the key the server checks, not the argument after the
/// first word STREAM.
#[test]
fn init_declares_the_stream_it_reads_past_a_variant_named_stream() {
    let server = Server::start();
    let mut admin = server.client();
    add_user(&mut admin, "maker", &["~sku:*", "~5", "+seckill.init"]);
    let mut con = as_user(&server, "maker");
    for args in [
        &[
            "SECKILL.INIT",
            "sku:{1}",
            "VARIANTS",
            "2",
            "STREAM",
            "5",
            "m",
            "5",
            "STREAM",
            "x{1}",
        ][..],
        // The server's keyword search ignores case, as INIT's options do.
        &[
            "SECKILL.INIT",
            "sku:{1}",
            "VARIANTS",
            "2",
            "m",
            "5",
            "stream",
            "5",
            "VARIANTLIMIT",
            "stream",
            "5",
            "STREAM",
            "x{1}",
        ],
    ] {
        assert_eq!(refusal(&mut con, args), "NOPERM", "{args:?}");
        assert_eq!(ok::<i64>(&mut admin, &["EXISTS", "sku:{1}"]), 0);
    }
    let keys: Vec<String> = ok(
        &mut admin,
        &[
            "COMMAND",
            "GETKEYS",
            "SECKILL.INIT",
            "sku:{1}",
            "VARIANTS",
            "1",
            "STREAM",
            "5",
            "VARIANTLIMIT",
            "STREAM",
            "1",
            "STREAM",
            "sku:{1}:o",
        ],
    );
    assert_eq!(keys, ["sku:{1}", "sku:{1}:o"]);
    // A variant named STREAM is a variant, with no stream.
    let args = [
        "SECKILL.INIT",
        "sku:{1}",
        "VARIANTS",
        "2",
        "STREAM",
        "5",
        "m",
        "5",
    ];
    assert_eq!(ok::<i64>(&mut con, &args), 1);
}

/// Clearing the stream names only the item: the server still finds that
/// key (for ACL and cluster routing) by asking the module.
#[test]
fn stream_without_a_stream_key_is_checked_against_the_item_key() {
    let server = Server::start();
    let mut admin = server.client();
    ok::<i64>(
        &mut admin,
        &["SECKILL.INIT", "sku:{1}", "10", "STREAM", "sku:{1}:o"],
    );
    ok::<i64>(
        &mut admin,
        &["SECKILL.INIT", "other:{1}", "10", "STREAM", "other:{1}:o"],
    );
    let keys: Vec<String> = ok(
        &mut admin,
        &["COMMAND", "GETKEYS", "SECKILL.STREAM", "sku:{1}"],
    );
    assert_eq!(keys, ["sku:{1}"]);
    let keys: Vec<String> = ok(
        &mut admin,
        &[
            "COMMAND",
            "GETKEYS",
            "SECKILL.STREAM",
            "sku:{1}",
            "s",
            "MAXLEN",
            "5",
        ],
    );
    assert_eq!(keys, ["sku:{1}", "s"]);

    add_user(&mut admin, "app", &["~sku:*", "+seckill.stream"]);
    let mut app = as_user(&server, "app");
    assert_eq!(
        refusal(&mut app, &["SECKILL.STREAM", "other:{1}"]),
        "NOPERM"
    );
    assert_eq!(ok::<i64>(&mut app, &["SECKILL.STREAM", "sku:{1}"]), 1);
    let info: redis::Value = ok(&mut admin, &["SECKILL.INFO", "other:{1}"]);
    assert!(format!("{info:?}").contains("other:{1}:o"), "{info:?}");
}

fn dump(con: &mut redis::Connection, key: &str) -> Vec<u8> {
    redis::cmd("DUMP").arg(key).query(con).expect("DUMP")
}

fn restore(con: &mut redis::Connection, key: &str, payload: &[u8]) -> redis::RedisResult<String> {
    redis::cmd("RESTORE")
        .arg(key)
        .arg(0)
        .arg(payload)
        .query(con)
}

/// `payload` with every `from` replaced by `to` (of the same length) and
/// sealed again: what an attacker with DUMP and RESTORE can make.
fn forge(payload: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    assert_eq!(from.len(), to.len());
    let mut forged = payload.to_vec();
    let at = forged
        .windows(from.len())
        .position(|window| window == from)
        .expect("the name is in the payload");
    forged[at..at + from.len()].copy_from_slice(to);
    common::dump::reseal(&forged)
}

fn stream_confirmed(con: &mut redis::Connection, key: &str) -> i64 {
    common::info_field(con, key, "stream_confirmed")
}

/// An app user allowed its own items only DUMPs one, renames its order
/// stream in the payload to a stream it may not write, and RESTOREs it.
/// The restored item keeps the name but writes that stream only for a
/// caller allowed to write it; the app's own sales are refused, unchanged.
#[test]
fn a_forged_restore_writes_no_stream_the_restoring_user_may_not_write() {
    let server = Server::start();
    let mut admin = server.client();
    ok::<i64>(
        &mut admin,
        &["SECKILL.INIT", "sku:{a}", "100", "STREAM", "sku:{a}:o"],
    );
    add_user(
        &mut admin,
        "app",
        &[
            "~sku:*",
            "+@read",
            "+@write",
            "+seckill.deduct",
            "+seckill.info",
        ],
    );
    let mut app = as_user(&server, "app");
    assert_eq!(
        refusal(&mut app, &["XADD", "orders:{v", "*", "f", "v"]),
        "NOPERM"
    );

    let forged = forge(&dump(&mut app, "sku:{a}"), b"sku:{a}:o", b"orders:{v");
    assert_eq!(
        restore(&mut app, "sku:{b}", &forged).expect("RESTORE"),
        "OK"
    );
    let info: redis::Value = ok(&mut app, &["SECKILL.INFO", "sku:{b}"]);
    assert!(format!("{info:?}").contains("orders:{v"), "{info:?}");
    assert_eq!(stream_confirmed(&mut app, "sku:{b}"), 0);

    let args = ["SECKILL.DEDUCT", "sku:{b}", "mallory", "1", "ID", "fake-1"];
    assert_eq!(refusal(&mut app, &args), "NOPERM");
    assert_eq!(ok::<i64>(&mut admin, &["EXISTS", "orders:{v"]), 0);
    assert_eq!(ok::<i64>(&mut admin, &["SECKILL.GET", "sku:{b}"]), 100);
    assert_eq!(
        ok::<i64>(&mut admin, &["SECKILL.BOUGHT", "sku:{b}", "mallory"]),
        0
    );

    // The genuine item, and one restored without a change, are untouched
    // for the app only in what they write: its own stream it may write.
    assert_eq!(stream_confirmed(&mut app, "sku:{a}"), 1);
    assert_eq!(
        ok::<i64>(
            &mut app,
            &["SECKILL.DEDUCT", "sku:{a}", "bob", "1", "ID", "r1"]
        ),
        99
    );
}

/// A restored item's stream is confirmed by a write of a caller allowed to
/// write it, and the confirmation reaches the replica, also for an item
/// restored under a name in another slot than its stream's (allowed outside
/// a cluster); after that the app's sales go through as before.
#[test]
fn a_write_by_a_user_allowed_the_stream_confirms_a_restored_item_on_replicas_too() {
    let master = Server::start();
    let replica = Server::start_replica_of(&master);
    let mut admin = master.client();
    ok::<i64>(
        &mut admin,
        &["SECKILL.INIT", "sku:{a}", "10", "STREAM", "sku:{a}:o"],
    );
    add_user(&mut admin, "app", &["~moved:*", "+seckill.deduct"]);
    let payload = dump(&mut admin, "sku:{a}");
    // MIGRATE sends the same RESTORE.
    restore(&mut admin, "moved:{z}", &payload).expect("RESTORE");
    assert_eq!(stream_confirmed(&mut admin, "moved:{z}"), 0);

    let mut app = as_user(&master, "app");
    let args = ["SECKILL.DEDUCT", "moved:{z}", "ann", "1"];
    assert_eq!(refusal(&mut app, &args), "NOPERM");
    assert_eq!(
        ok::<i64>(&mut admin, &["SECKILL.DEDUCT", "moved:{z}", "root", "1"]),
        9
    );
    assert_eq!(stream_confirmed(&mut admin, "moved:{z}"), 1);
    assert_eq!(ok::<i64>(&mut app, &args), 8);
    assert_eq!(ok::<i64>(&mut admin, &["XLEN", "sku:{a}:o"]), 2);

    ok::<i64>(&mut admin, &["WAIT", "1", "5000"]);
    let mut on_replica = replica.client();
    assert_eq!(stream_confirmed(&mut on_replica, "moved:{z}"), 1);
    let digests = |con: &mut redis::Connection| -> Vec<String> {
        ok(con, &["DEBUG", "DIGEST-VALUE", "moved:{z}", "sku:{a}:o"])
    };
    assert_eq!(digests(&mut admin), digests(&mut on_replica));
    assert!(!replica.log().contains("CRITICAL"), "{}", replica.log());
}

/// What confirms a restored stream is the right to append to it oneself
/// (`XADD`, in one selector with the key): a selector that only matches
/// the key, or allows other commands on it, confirms nothing.
#[test]
fn only_a_user_who_could_xadd_to_the_stream_confirms_a_restored_one() {
    let server = Server::start();
    let mut admin = server.client();
    ok::<i64>(
        &mut admin,
        &["SECKILL.INIT", "sku:{a}", "10", "STREAM", "sku:{a}:o"],
    );
    let payload = dump(&mut admin, "sku:{a}");
    let root = ["~sku:*", "+seckill.deduct"];
    let cases: &[(&str, &[&str], bool)] = &[
        ("key-only", &["(~sku:{a}:o -@all)"], false),
        ("get", &["(~sku:{a}:o +get)"], false),
        ("consumer", &["(~sku:{a}:o +xreadgroup +xack)"], false),
        ("write-get", &["(%W~sku:{a}:o +get)"], false),
        ("read-xadd", &["(%R~sku:{a}:o +xadd)"], false),
        ("xadd", &["(~sku:{a}:o +xadd)"], true),
        ("root-xadd", &["+xadd", "~sku:{a}:o"], true),
    ];
    for (n, &(user, rules, allowed)) in cases.iter().enumerate() {
        let mut all = root.to_vec();
        all.extend_from_slice(rules);
        add_user(&mut admin, user, &all);
        let key = format!("sku:{{a}}{n}");
        restore(&mut admin, &key, &payload).expect("RESTORE");
        let mut con = as_user(&server, user);
        let args = ["SECKILL.DEDUCT", &key, user, "1"];
        if allowed {
            assert_eq!(ok::<i64>(&mut con, &args), 9, "{user}");
            assert_eq!(stream_confirmed(&mut admin, &key), 1, "{user}");
        } else {
            assert_eq!(refusal(&mut con, &args), "NOPERM", "{user}");
            assert_eq!(stream_confirmed(&mut admin, &key), 0, "{user}");
        }
    }
    assert_eq!(ok::<i64>(&mut admin, &["XLEN", "sku:{a}:o"]), 2);
}

/// COPY makes an item that writes events under another key than the one
/// whoever named the stream vouched for: its stream is unconfirmed too.
#[test]
fn a_copy_of_an_item_has_its_stream_unconfirmed() {
    let server = Server::start();
    let mut admin = server.client();
    ok::<i64>(
        &mut admin,
        &["SECKILL.INIT", "sku:{a}", "10", "STREAM", "sku:{a}:o"],
    );
    add_user(&mut admin, "app", &["~sku:*", "+copy", "+seckill.deduct"]);
    let mut app = as_user(&server, "app");
    assert_eq!(ok::<i64>(&mut app, &["COPY", "sku:{a}", "sku:{a}copy"]), 1);
    assert_eq!(stream_confirmed(&mut admin, "sku:{a}copy"), 0);
    assert_eq!(stream_confirmed(&mut admin, "sku:{a}"), 1);
    let args = ["SECKILL.DEDUCT", "sku:{a}copy", "mallory", "1"];
    assert_eq!(refusal(&mut app, &args), "NOPERM");
    assert_eq!(ok::<i64>(&mut admin, &["EXISTS", "sku:{a}:o"]), 0);
}

/// A RESTORE that the AOF replays at startup is as unconfirmed as it was
/// when it ran: the server cannot tell its load from the snapshot's, but
/// hears RESTORE's keyspace event. (Valkey's events are not listened to:
/// see README, Security.)
#[test]
fn a_restore_replayed_from_the_aof_stays_unconfirmed() {
    let mut server = Server::start_with(&["--appendonly", "yes"]);
    let mut admin = server.client();
    if common::server_info(&mut admin, "server", "server_name").is_some() {
        return;
    }
    ok::<i64>(
        &mut admin,
        &["SECKILL.INIT", "sku:{a}", "10", "STREAM", "sku:{a}:o"],
    );
    let forged = forge(&dump(&mut admin, "sku:{a}"), b"sku:{a}:o", b"orders:{v");
    restore(&mut admin, "sku:{b}", &forged).expect("RESTORE");
    drop(admin);
    server.restart();
    let mut admin = server.client();
    assert_eq!(stream_confirmed(&mut admin, "sku:{b}"), 0);
    assert_eq!(stream_confirmed(&mut admin, "sku:{a}"), 1);
    // A snapshot keeps it so too.
    ok::<String>(&mut admin, &["DEBUG", "RELOAD"]);
    assert_eq!(stream_confirmed(&mut admin, "sku:{b}"), 0);
    assert_eq!(stream_confirmed(&mut admin, "sku:{a}"), 1);
}

/// The sweep releases lapsed holds with no user to vouch for a restored
/// item's stream, so it leaves that item's holds for a write by a caller
/// allowed to write the stream, and writes nothing meanwhile.
#[test]
fn the_sweep_writes_no_event_into_an_unconfirmed_stream() {
    let server = Server::start();
    let mut admin = server.client();
    ok::<i64>(
        &mut admin,
        &["SECKILL.INIT", "sku:{a}", "10", "STREAM", "sku:{a}:o"],
    );
    let hold = [
        "SECKILL.DEDUCT",
        "sku:{a}",
        "ann",
        "1",
        "ID",
        "h1",
        "HOLD",
        "1",
    ];
    assert_eq!(ok::<i64>(&mut admin, &hold), 9);
    let forged = forge(&dump(&mut admin, "sku:{a}"), b"sku:{a}:o", b"orders:{v");
    restore(&mut admin, "sku:{b}", &forged).expect("RESTORE");

    // The genuine item's hold lapses and is released by the sweep...
    common::wait_until(
        "the sweep releases the genuine hold",
        Duration::from_secs(10),
        || ok::<i64>(&mut admin, &["XLEN", "sku:{a}:o"]) == 2,
    );
    std::thread::sleep(Duration::from_millis(300));
    // ...the restored one's is not, though its stock counts it as lapsed.
    assert_eq!(ok::<i64>(&mut admin, &["EXISTS", "orders:{v"]), 0);
    assert_eq!(ok::<i64>(&mut admin, &["SECKILL.GET", "sku:{b}"]), 10);
    // A write by a user allowed the stream releases it, with its event.
    assert_eq!(ok::<i64>(&mut admin, &["SECKILL.ADD", "sku:{b}", "1"]), 11);
    assert_eq!(ok::<i64>(&mut admin, &["XLEN", "orders:{v"]), 1);
    assert_eq!(stream_confirmed(&mut admin, "sku:{b}"), 1);
}

#[test]
fn an_acl_user_with_the_write_category_cannot_loadchunk() {
    let server = Server::start();
    let mut admin = server.client();
    ok::<i64>(&mut admin, &["SECKILL.INIT", "sku:6", "5"]);
    let before = dump(&mut admin, "sku:6");
    ok::<String>(
        &mut admin,
        &["ACL", "SETUSER", "u", "on", ">p", "+@write", "~*"],
    );
    let mut con = server.client();
    ok::<String>(&mut con, &["AUTH", "u", "p"]);
    let forged = hold_chunk(b"forged", b"mallory", 1_000_000, 1);
    let refused = refusal_line(load_chunk(&mut con, "sku:6", &forged), "LOADCHUNK by u");
    assert!(
        refused.starts_with("NOPERM") || refused.starts_with("ERR"),
        "LOADCHUNK by an @write user: {refused}"
    );
    assert_eq!(dump(&mut admin, "sku:6"), before);
    assert_eq!(ok::<i64>(&mut admin, &["SECKILL.GET", "sku:6"]), 5);
}

fn is_permission_refusal(line: &str) -> bool {
    line.starts_with("NOPERM")
        || (line.starts_with("ERR") && line.to_lowercase().contains("permission"))
}

/// A user allowed the item's key only may not name an order stream it
/// cannot write: the module would write it on the user's behalf.
#[test]
fn a_user_without_access_to_the_stream_key_cannot_declare_it() {
    let server = Server::start();
    let mut admin = server.client();
    ok::<String>(
        &mut admin,
        &[
            "ACL",
            "SETUSER",
            "u",
            "on",
            ">p",
            "+@all",
            "~{k}",
            "-@dangerous",
        ],
    );
    let mut con = server.client();
    ok::<String>(&mut con, &["AUTH", "u", "p"]);
    // The rules as meant: the item yes, the stream no.
    let xadd = error(&mut con, &["XADD", "{k}:o", "*", "f", "v"]);
    assert!(xadd.starts_with("NOPERM"), "XADD by u: {xadd}");

    let refused = error(&mut con, &["SECKILL.INIT", "{k}", "10", "STREAM", "{k}:o"]);
    assert!(
        is_permission_refusal(&refused),
        "INIT naming a stream u may not write: {refused}"
    );
    assert_eq!(ok::<i64>(&mut admin, &["EXISTS", "{k}"]), 0);

    assert_eq!(
        ok::<i64>(&mut con, &["SECKILL.INIT", "{k}", "10"]),
        1,
        "INIT without a stream"
    );
    let before = dump(&mut admin, "{k}");
    let refused = error(&mut con, &["SECKILL.STREAM", "{k}", "{k}:o"]);
    assert!(
        is_permission_refusal(&refused),
        "STREAM naming a stream u may not write: {refused}"
    );
    assert_eq!(dump(&mut admin, "{k}"), before);
    assert_eq!(ok::<i64>(&mut admin, &["EXISTS", "{k}:o"]), 0);
}
