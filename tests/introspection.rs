//! What the server says about the module: `COMMAND DOCS` and `COMMAND
//! INFO` (checked against the command reference, docs/commands.md), the arity the
//! server enforces, `INFO seckill`, and `CONFIG GET/SET seckill.*`.

mod common;

use common::*;
use redis::{Connection, Value};
use std::collections::BTreeMap;
use std::time::Duration;

/// A reply's map entries, whether RESP2 (flat array) or RESP3 (map).
fn entries(value: &Value) -> Vec<(String, Value)> {
    let items: Vec<Value> = match value {
        Value::Array(items) => items.clone(),
        Value::Map(pairs) => pairs
            .iter()
            .flat_map(|(k, v)| [k.clone(), v.clone()])
            .collect(),
        other => panic!("not a map: {other:?}"),
    };
    items
        .chunks(2)
        .map(|pair| {
            let name: String = redis::from_redis_value(pair[0].clone()).expect("field name");
            (name, pair[1].clone())
        })
        .collect()
}

fn text(value: &Value) -> String {
    redis::from_redis_value(value.clone()).unwrap_or_default()
}

/// One argument of `COMMAND DOCS`, rendered the way Redis's own docs write
/// a synopsis: `[LIMIT limit]`, `<units | UNLIMITED>`, `id [id ...]`.
fn render(arg: &[(String, Value)]) -> String {
    let field = |name: &str| arg.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
    let name = field("name").map(|v| text(&v)).unwrap_or_default();
    let kind = field("type").map(|v| text(&v)).unwrap_or_default();
    let token = field("token").map(|v| text(&v));
    let flags: Vec<String> = match field("flags") {
        Some(Value::Array(flags)) => flags.iter().map(text).collect(),
        Some(Value::Set(flags)) => flags.iter().map(text).collect(),
        _ => Vec::new(),
    };
    let optional = flags.iter().any(|f| f == "optional");
    let multiple = flags.iter().any(|f| f == "multiple");
    let nested = || -> Vec<String> {
        match field("arguments") {
            Some(Value::Array(args)) => args.iter().map(|a| render(&entries(a))).collect(),
            _ => Vec::new(),
        }
    };
    let mut body = match kind.as_str() {
        "pure-token" => token.clone().unwrap_or_default(),
        "oneof" => {
            let choices = nested().join(" | ");
            if optional {
                choices
            } else {
                format!("<{choices}>")
            }
        }
        "block" => nested().join(" "),
        _ => match &token {
            Some(token) => format!("{token} {name}"),
            None => name.clone(),
        },
    };
    if kind == "block" {
        if let Some(token) = token {
            body = format!("{token} {body}");
        }
    }
    if multiple {
        body = format!("{body} [{body} ...]");
    }
    if optional {
        format!("[{body}]")
    } else {
        body
    }
}

/// Every module command's synopsis, from `COMMAND DOCS`.
fn synopses(con: &mut Connection) -> BTreeMap<String, String> {
    let docs: Value = ok(con, &["COMMAND", "DOCS"]);
    entries(&docs)
        .into_iter()
        .filter(|(name, _)| name.starts_with("seckill."))
        .map(|(name, doc)| {
            let doc = entries(&doc);
            let args = doc
                .iter()
                .find(|(k, _)| k == "arguments")
                .map(|(_, v)| v.clone());
            let rendered: Vec<String> = match args {
                Some(Value::Array(args)) => args.iter().map(|a| render(&entries(a))).collect(),
                _ => Vec::new(),
            };
            let synopsis = format!("{} {}", name.to_uppercase(), rendered.join(" "));
            (name, synopsis)
        })
        .collect()
}

/// The synopses in the first column of the command table of
/// docs/commands.md.
fn readme_synopses() -> Vec<String> {
    let reference =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/commands.md"))
            .expect("docs/commands.md");
    let table = reference
        .split("# Command reference")
        .nth(1)
        .expect("a Command reference section");
    table
        .lines()
        .skip_while(|line| !line.starts_with("| command |"))
        .skip(2)
        .take_while(|line| line.starts_with('|'))
        .map(|line| {
            let cell = line.split("` |").next().unwrap_or_default();
            cell.trim_start_matches("| `").replace("\\|", "|")
        })
        .collect()
}

#[test]
fn command_docs_describe_every_command_as_the_readme_does() {
    let server = Server::start();
    let mut con = server.client();
    let docs = synopses(&mut con);
    let mut documented: Vec<String> = readme_synopses();
    // LOADCHUNK is documented apart: no client sends it.
    documented.push("SECKILL.LOADCHUNK key payload".into());
    let mut served: Vec<String> = docs.values().cloned().collect();
    served.sort();
    documented.sort();
    assert_eq!(served, documented, "COMMAND DOCS against docs/commands.md");
    // Each also carries a summary, a complexity and the module's name.
    let docs: Value = ok(&mut con, &["COMMAND", "DOCS", "seckill.deduct"]);
    let (_, deduct) = entries(&docs).into_iter().next().expect("seckill.deduct");
    let deduct = entries(&deduct);
    let field = |name: &str| {
        deduct
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| text(v))
            .unwrap_or_default()
    };
    assert!(field("summary").starts_with("Sells units to a user"));
    assert_eq!(field("complexity"), "O(1)");
    assert_eq!(field("module"), "seckill");
}

#[test]
fn command_info_declares_arity_flags_and_key_access() {
    let server = Server::start();
    let mut con = server.client();
    // (command, arity, flag, key flags)
    let cases: [(&str, i64, &str, &[&str]); 17] = [
        ("seckill.init", -3, "write", &["RW", "insert"]),
        ("seckill.add", -3, "write", &["RW", "access", "update"]),
        ("seckill.deduct", -4, "write", &["RW", "access", "update"]),
        ("seckill.confirm", -3, "write", &["RW", "update"]),
        ("seckill.release", -3, "write", &["RW", "update"]),
        ("seckill.refund", -3, "write", &["RW", "update"]),
        ("seckill.window", 4, "write", &["RW", "update"]),
        ("seckill.stream", -2, "write", &["RW", "update"]),
        ("seckill.get", -2, "readonly", &["RO", "access"]),
        ("seckill.bought", -3, "readonly", &["RO", "access"]),
        ("seckill.holds", -2, "readonly", &["RO", "access"]),
        ("seckill.info", -2, "readonly", &["RO", "access"]),
        ("seckill.take", -5, "write", &["RW", "access", "update"]),
        ("seckill.settle", -3, "write", &["RW", "update"]),
        ("seckill.transfers", 2, "readonly", &["RO", "access"]),
        ("seckill.variants", 2, "readonly", &["RO", "access"]),
        ("seckill.loadchunk", 3, "write", &["RW", "insert"]),
    ];
    for (command, arity, flag, key_flags) in cases {
        let info: Vec<Value> = ok(&mut con, &["COMMAND", "INFO", command]);
        let Value::Array(info) = &info[0] else {
            panic!("{command}: no COMMAND INFO")
        };
        assert_eq!(info[1], Value::Int(arity), "{command} arity");
        let flags: Vec<String> = redis::from_redis_value(info[2].clone()).unwrap();
        assert!(flags.iter().any(|f| f == flag), "{command} flags {flags:?}");
        // First key 1, last key 1, step 1: what cluster clients route by.
        // SECKILL.STREAM's last key is its stream key, when given.
        let last_key = if command == "seckill.stream" { 2 } else { 1 };
        assert_eq!(
            info[3..6],
            [Value::Int(1), Value::Int(last_key), Value::Int(1)]
        );
        let item_key_flags: Value = {
            let specs = match &info[8] {
                Value::Array(specs) => specs.clone(),
                other => panic!("{command}: key specs {other:?}"),
            };
            let first = entries(&specs[0]);
            first.into_iter().find(|(k, _)| k == "flags").unwrap().1
        };
        let item_key_flags: Vec<String> = redis::from_redis_value(item_key_flags).unwrap();
        assert_eq!(item_key_flags, key_flags, "{command} key flags");
    }
    // INIT names two keys: the item, and the order stream it will append to.
    let keys: Vec<(String, Vec<String>)> = ok(
        &mut con,
        &[
            "COMMAND",
            "GETKEYSANDFLAGS",
            "seckill.init",
            "{sku:1}",
            "10",
            "LIMIT",
            "2",
            "STREAM",
            "{sku:1}:orders",
            "MAXLEN",
            "100",
        ],
    );
    assert_eq!(
        keys,
        [
            ("{sku:1}".into(), vec!["RW".into(), "insert".into()]),
            ("{sku:1}:orders".into(), vec!["RW".into(), "insert".into()]),
        ]
    );
    let keys: Vec<String> = ok(&mut con, &["COMMAND", "GETKEYS", "seckill.init", "k", "10"]);
    assert_eq!(keys, ["k"]);
}

#[test]
fn the_server_enforces_arity_before_the_module_runs() {
    let server = Server::start();
    let mut con = server.client();
    for (args, command) in [
        (&["SECKILL.GET"][..], "seckill.get"),
        (&["SECKILL.TRANSFERS", "a", "b"][..], "seckill.transfers"),
        (&["SECKILL.DEDUCT", "k", "u"][..], "seckill.deduct"),
        (&["SECKILL.WINDOW", "k", "0"][..], "seckill.window"),
        (&["SECKILL.INIT", "k"][..], "seckill.init"),
    ] {
        assert_eq!(
            error(&mut con, args),
            format!("ERR wrong number of arguments for '{command}' command")
        );
    }
    // Refused by the server: the module never counted a call.
    assert_eq!(seckill_info(&mut con)["deduct_calls"], 0);
    assert_eq!(seckill_info(&mut con)["get_calls"], 0);
}

/// `INFO seckill` as field (without the `seckill_` prefix) → value.
fn seckill_info(con: &mut Connection) -> BTreeMap<String, u64> {
    let text: String = ok(con, &["INFO", "seckill"]);
    assert!(text.starts_with("# seckill"), "{text}");
    text.lines()
        .filter_map(|line| line.strip_prefix("seckill_"))
        .filter_map(|line| {
            let (name, value) = line.split_once(':')?;
            Some((name.to_owned(), value.trim().parse().ok()?))
        })
        .collect()
}

/// Where the section shows, as the README says: asked for by name, with
/// `INFO modules` and `INFO everything`, and not in plain `INFO`.
#[test]
fn info_seckill_is_in_the_module_sections_of_info() {
    let server = Server::start();
    let mut con = server.client();
    for (sections, shown) in [
        (&["INFO", "seckill"][..], true),
        (&["INFO", "modules"][..], true),
        (&["INFO", "everything"][..], true),
        (&["INFO"][..], false),
        (&["INFO", "all"][..], false),
    ] {
        let text: String = ok(&mut con, sections);
        assert_eq!(text.contains("seckill_units_sold:"), shown, "{sections:?}");
    }
}

#[test]
fn info_seckill_counts_calls_sales_refusals_holds_and_events() {
    let server = Server::start();
    let mut con = server.client();
    let steps: &[&[&str]] = &[
        &[
            "SECKILL.INIT",
            "{s}",
            "5",
            "LIMIT",
            "2",
            "STREAM",
            "{s}:orders",
        ],
        &["SECKILL.DEDUCT", "{s}", "ann", "2", "ID", "o1"],
        &["SECKILL.DEDUCT", "{s}", "ann", "2", "ID", "o1"], // replay: counts nothing
        &["SECKILL.DEDUCT", "{s}", "ann", "1"],             // limit
        &["SECKILL.DEDUCT", "{s}", "bob", "9"],             // sold out
        &["SECKILL.DEDUCT", "nothing", "bob", "1"],         // no item
        &[
            "SECKILL.DEDUCT",
            "{s}",
            "cat",
            "1",
            "ID",
            "h1",
            "HOLD",
            "600",
        ],
        &[
            "SECKILL.DEDUCT",
            "{s}",
            "dan",
            "1",
            "ID",
            "h2",
            "HOLD",
            "600",
        ],
        &["SECKILL.CONFIRM", "{s}", "h1"],
        &["SECKILL.RELEASE", "{s}", "h2"],
        &["SECKILL.DEDUCT", "{s}", "dan", "1", "ID", "h2"], // cancelled
        &["SECKILL.REFUND", "{s}", "o1"],
        &["SECKILL.ADD", "{s}", "3"],
        &["SECKILL.WINDOW", "{s}", "1", "2"],
        &["SECKILL.DEDUCT", "{s}", "eve", "1"], // ended
        &["SECKILL.WINDOW", "{s}", "32503680000000", "0"],
        &["SECKILL.DEDUCT", "{s}", "eve", "1"], // not started
        &["SECKILL.GET", "{s}"],
        &["SECKILL.BOUGHT", "{s}", "ann"],
        &["SECKILL.HOLDS", "{s}"],
        &["SECKILL.INFO", "{s}"],
        &["SECKILL.STREAM", "{s}"],
    ];
    for step in steps {
        ok::<Value>(&mut con, step);
    }
    let info = seckill_info(&mut con);
    let expected: &[(&str, u64)] = &[
        ("init_calls", 1),
        ("add_calls", 1),
        ("deduct_calls", 10),
        ("confirm_calls", 1),
        ("release_calls", 1),
        ("refund_calls", 1),
        ("window_calls", 2),
        ("stream_calls", 1),
        ("get_calls", 1),
        ("bought_calls", 1),
        ("holds_calls", 1),
        ("info_calls", 1),
        ("take_calls", 0),
        ("settle_calls", 0),
        ("transfers_calls", 0),
        ("scan_calls", 0),
        ("import_calls", 0),
        ("loadchunk_calls", 0),
        ("status_calls", 0),
        ("mdeduct_calls", 0),
        ("mconfirm_calls", 0),
        ("mrefund_calls", 0),
        ("variants_calls", 0),
        ("units_sold", 4),
        ("units_refunded", 2),
        ("units_added", 3),
        ("units_moved_out", 0),
        ("units_moved_in", 0),
        ("refused_sold_out", 1),
        ("refused_limit", 1),
        ("refused_no_item", 1),
        ("refused_cancelled", 1),
        ("refused_not_started", 1),
        ("refused_ended", 1),
        ("holds_placed", 2),
        ("holds_confirmed", 1),
        ("holds_lapsed", 1),
        // purchase, 2 holds, confirm, release, refund
        ("order_events_appended", 6),
        ("items_with_pending_holds", 0),
    ];
    for (field, value) in expected {
        assert_eq!(info.get(*field), Some(value), "seckill_{field}");
    }
    assert_eq!(info.len(), expected.len() + 2, "{info:?}"); // + the sweep's two

    // A hold lapsing by the clock: the sweep releases it and counts a run.
    ok::<i64>(
        &mut con,
        &[
            "SECKILL.DEDUCT",
            "{s}",
            "fay",
            "1",
            "ID",
            "h3",
            "HOLD",
            "600",
        ],
    );
    // (not started: refused, nothing held)
    ok::<String>(
        &mut con,
        &["CONFIG", "SET", "seckill.sweep-interval-ms", "10"],
    );
    ok::<i64>(&mut con, &["SECKILL.WINDOW", "{s}", "0", "0"]);
    let now: Vec<i64> = ok(&mut con, &["TIME"]);
    let soon = (now[0] * 1000 + now[1] / 1000 + 50).to_string();
    ok::<i64>(
        &mut con,
        &[
            "SECKILL.DEDUCT",
            "{s}",
            "fay",
            "1",
            "ID",
            "h4",
            "HOLDUNTIL",
            &soon,
        ],
    );
    assert_eq!(seckill_info(&mut con)["items_with_pending_holds"], 1);
    wait_until(
        "the sweep to release the hold",
        Duration::from_secs(10),
        || seckill_info(&mut con)["holds_lapsed"] == 2,
    );
    let info = seckill_info(&mut con);
    assert!(info["sweep_runs"] >= 1);
    assert_eq!(info["items_with_pending_holds"], 0);
}

fn config(con: &mut Connection, name: &str) -> String {
    let reply: Vec<String> = ok(con, &["CONFIG", "GET", name]);
    assert_eq!(reply.len(), 2, "CONFIG GET {name}: {reply:?}");
    reply[1].clone()
}

#[test]
fn module_configuration_has_defaults_and_refuses_bad_values() {
    let server = Server::start();
    let mut con = server.client();
    let all: Vec<String> = ok(&mut con, &["CONFIG", "GET", "seckill.*"]);
    let mut names: Vec<&String> = all.iter().step_by(2).collect();
    names.sort();
    assert_eq!(
        names,
        [
            "seckill.max-id-length",
            "seckill.sweep-interval-ms",
            "seckill.sweep-step-budget-us"
        ]
    );
    assert_eq!(config(&mut con, "seckill.sweep-interval-ms"), "100");
    assert_eq!(config(&mut con, "seckill.sweep-step-budget-us"), "1000");
    assert_eq!(config(&mut con, "seckill.max-id-length"), "128");

    for (name, value, why) in [
        (
            "seckill.max-id-length",
            "129",
            "argument must be between 1 and 128 inclusive",
        ),
        (
            "seckill.max-id-length",
            "0",
            "argument must be between 1 and 128 inclusive",
        ),
        (
            "seckill.sweep-interval-ms",
            "often",
            "argument couldn't be parsed into an integer",
        ),
        (
            "seckill.sweep-step-budget-us",
            "1000000",
            "argument must be between 50 and 100000 inclusive",
        ),
    ] {
        let refused = error(&mut con, &["CONFIG", "SET", name, value]);
        assert!(refused.starts_with("ERR CONFIG SET failed"), "{refused}");
        assert!(refused.ends_with(why), "{name} {value}: {refused}");
    }
    // Nothing was changed by the refusals.
    assert_eq!(config(&mut con, "seckill.max-id-length"), "128");

    ok::<String>(
        &mut con,
        &["CONFIG", "SET", "seckill.sweep-step-budget-us", "500"],
    );
    assert_eq!(config(&mut con, "seckill.sweep-step-budget-us"), "500");
}

#[test]
fn max_id_length_holds_clients_to_shorter_ids_but_never_a_replica() {
    // As module arguments after the path: `loadmodule seckill.so name value`.
    let master = Server::start_with(&["max-id-length", "16"]);
    let mut con = master.client();
    assert_eq!(config(&mut con, "seckill.max-id-length"), "16");
    ok::<i64>(&mut con, &["SECKILL.INIT", "k", "100"]);
    let long = "u".repeat(17);
    assert_eq!(
        error(&mut con, &["SECKILL.DEDUCT", "k", &long, "1"]),
        "ERR user id must be 1 to 16 bytes"
    );
    assert_eq!(
        error(&mut con, &["SECKILL.DEDUCT", "k", "ann", "1", "ID", &long]),
        "ERR request id must be 1 to 16 bytes"
    );
    assert_eq!(ok::<i64>(&mut con, &["SECKILL.GET", "k"]), 100);

    // A replica with a shorter setting still applies its master's sales.
    let replica = Server::start_replica_of(&master);
    let mut replica_con = replica.client();
    ok::<String>(
        &mut replica_con,
        &["CONFIG", "SET", "seckill.max-id-length", "4"],
    );
    ok::<String>(&mut con, &["CONFIG", "SET", "seckill.max-id-length", "128"]);
    ok::<i64>(&mut con, &["SECKILL.DEDUCT", "k", &long, "1", "ID", &long]);
    assert_eq!(ok::<i64>(&mut con, &["WAIT", "1", "5000"]), 1);
    assert_eq!(
        ok::<i64>(&mut replica_con, &["SECKILL.BOUGHT", "k", &long]),
        1
    );
    assert_eq!(ok::<i64>(&mut replica_con, &["SECKILL.GET", "k"]), 99);

    // Ids already in the item are found whatever the setting: a retry of
    // the purchase answers as the first call did, and the buyer may buy
    // again under a new, short id; a new long id is still refused.
    ok::<String>(&mut con, &["CONFIG", "SET", "seckill.max-id-length", "4"]);
    assert_eq!(
        ok::<i64>(&mut con, &["SECKILL.DEDUCT", "k", &long, "1", "ID", &long]),
        99
    );
    assert_eq!(
        ok::<i64>(&mut con, &["SECKILL.DEDUCT", "k", &long, "1", "ID", "r2"]),
        98
    );
    let longer = "v".repeat(17);
    assert_eq!(
        error(
            &mut con,
            &["SECKILL.DEDUCT", "k", &long, "1", "ID", &longer]
        ),
        "ERR request id must be 1 to 4 bytes"
    );
    assert_eq!(
        error(&mut con, &["SECKILL.DEDUCT", "k", &longer, "1"]),
        "ERR user id must be 1 to 4 bytes"
    );
    assert_eq!(ok::<i64>(&mut con, &["SECKILL.REFUND", "k", &long]), 1);

    // On an item with variants, a buyer in one variant is in the item: a
    // purchase of another size passes, alone or in an order.
    ok::<String>(&mut con, &["CONFIG", "SET", "seckill.max-id-length", "128"]);
    ok::<i64>(
        &mut con,
        &["SECKILL.INIT", "{d}", "VARIANTS", "2", "s", "5", "m", "5"],
    );
    ok::<i64>(
        &mut con,
        &["SECKILL.DEDUCT", "{d}", &long, "1", "VARIANT", "s"],
    );
    ok::<String>(&mut con, &["CONFIG", "SET", "seckill.max-id-length", "4"]);
    assert_eq!(
        ok::<i64>(
            &mut con,
            &["SECKILL.DEDUCT", "{d}", &long, "1", "VARIANT", "m"]
        ),
        4
    );
    let order: Vec<i64> = ok(
        &mut con,
        &[
            "SECKILL.MDEDUCT",
            "1",
            "{d}",
            "1",
            &long,
            "r3",
            "VARIANT",
            "1",
            "s",
        ],
    );
    assert_eq!(order, [3]);
    assert_eq!(
        error(
            &mut con,
            &["SECKILL.DEDUCT", "{d}", &longer, "1", "VARIANT", "m"]
        ),
        "ERR user id must be 1 to 4 bytes"
    );
}

#[test]
fn bad_module_arguments_refuse_to_load_the_module() {
    for (args, logged) in [
        (
            &["sweep-interval-ms", "-1"][..],
            "module argument sweep-interval-ms must be an integer from 1 to 60000",
        ),
        (
            &["max-id-length", "0"],
            "module argument max-id-length must be an integer from 1 to 128",
        ),
        // Not a number: the crate refuses it before the module's check.
        (&["max-id-length", "many"], "initialization failed"),
        (&["bogus", "5"], "unknown module argument \"bogus\""),
        (
            &["max-id-length"],
            "module argument max-id-length needs a value",
        ),
        (
            &["sweep-interval-ms", "5", "sweep-interval-ms", "7"],
            "module argument sweep-interval-ms given twice",
        ),
    ] {
        match Server::try_start_with_files(&[], args) {
            Ok(_) => panic!("{args:?}: the server started"),
            Err(failure) => assert!(failure.log.contains(logged), "{args:?}: {}", failure.log),
        }
    }
}
