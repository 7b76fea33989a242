//! The Rust client against `contract/seckill.json`, the file the module's
//! tests and the other client libraries' tests read too: every error the
//! contract can provoke, sent to a real server and sorted by this crate's
//! classifier into the contract's kind, code, text and retryability; the
//! outcome names and codes of DEDUCT, CONFIRM, REFUND and SETTLE; INFO's
//! fields.

use redis::{FromRedisValue, Value};
use seckill_client::{
    ConfirmOutcome, DeductResult, Error, ErrorKind, ItemInfo, Outcome, RefundOutcome, RefundResult,
    SeckillError, SettleOutcome,
};
use seckill_harness::contract::{list, load as contract, provoke, text};
use seckill_harness::Server;
use serde_json::Value as Json;

/// Every kind of this crate; the match makes a new one fail to compile
/// here until it is added to the list (and to the contract).
fn all_kinds() -> Vec<ErrorKind> {
    let kinds = [
        ErrorKind::RequestIdConflict,
        ErrorKind::OrderStream,
        ErrorKind::ItemFull,
        ErrorKind::WrongType,
        ErrorKind::NoPermission,
        ErrorKind::InvalidArgument,
        ErrorKind::Unavailable,
    ];
    for kind in kinds {
        match kind {
            ErrorKind::RequestIdConflict
            | ErrorKind::OrderStream
            | ErrorKind::ItemFull
            | ErrorKind::WrongType
            | ErrorKind::NoPermission
            | ErrorKind::InvalidArgument
            | ErrorKind::Unavailable => {}
        }
    }
    kinds.to_vec()
}

#[test]
fn the_kinds_are_the_contracts() {
    let contract = contract();
    let mut ours: Vec<&str> = all_kinds().into_iter().map(ErrorKind::name).collect();
    ours.sort();
    let theirs: Vec<&str> = list(&contract, "kinds")
        .iter()
        .map(|k| text(k, "name"))
        .collect();
    assert_eq!(ours, theirs);
    let unavailable = list(&contract, "kinds")
        .iter()
        .find(|k| text(k, "name") == "UNAVAILABLE")
        .unwrap();
    for code in list(unavailable, "server_codes") {
        let code = code.as_str().unwrap();
        assert_eq!(
            ErrorKind::of_server_error(code, "any text"),
            Some(ErrorKind::Unavailable),
            "{code}"
        );
    }
}

/// Every listed text, provocable or not, is sorted into its kind, and a
/// module error is retryable exactly when the contract says so.
#[test]
fn every_contract_text_is_classified_as_its_kind() {
    let contract = contract();
    for error in list(&contract, "errors") {
        let name = text(error, "name");
        let code = text(error, "code");
        let shown = error.get("text").or_else(|| error.get("template")).unwrap();
        let message = shown.as_str().unwrap()[code.len()..].trim_start();
        let kind = ErrorKind::of_server_error(code, message);
        assert_eq!(
            kind.map(ErrorKind::name),
            Some(text(error, "kind")),
            "{name}"
        );
        if kind != Some(ErrorKind::Unavailable) {
            let err = SeckillError {
                kind: kind.unwrap(),
                code: code.to_owned(),
                message: message.to_owned(),
            };
            assert_eq!(
                Some(err.retryable()),
                error["retryable"].as_bool(),
                "{name}"
            );
        }
    }
}

#[test]
fn every_provocable_error_is_typed_as_the_contract_says() {
    let contract = contract();
    let server = Server::start();
    let mut con = server.client();
    let mut provoked = 0;
    for error in list(&contract, "errors") {
        let name = text(error, "name");
        let Some(case) = error.get("provoke") else {
            continue;
        };
        let key = format!("contract-{name}");
        let raw = match provoke::<Value>(&server, &mut con, case, &key) {
            Ok(reply) => panic!("{name} should have failed, replied {reply:?}"),
            Err(err) => err,
        };
        let typed = Error::from(raw);
        assert_eq!(
            typed.kind().map(ErrorKind::name),
            Some(text(error, "kind")),
            "{name}"
        );
        assert_eq!(
            Some(typed.retryable()),
            error["retryable"].as_bool(),
            "{name}"
        );
        let (code, line) = match &typed {
            Error::Seckill(err) => (err.code.clone(), format!("{} {}", err.code, err.message)),
            Error::Unavailable(err) => (
                err.code().unwrap_or_default().to_owned(),
                format!(
                    "{} {}",
                    err.code().unwrap_or_default(),
                    err.detail().unwrap_or_default()
                ),
            ),
            Error::Redis(err) => panic!("{name}: left untyped: {err}"),
        };
        assert_eq!(code, text(error, "code"), "{name}");
        let mut accepted = vec![text(error, "text")];
        accepted.extend(list(error, "other_texts").iter().filter_map(Json::as_str));
        assert!(
            accepted.contains(&line.as_str()),
            "{name}: typed as {line:?}, the contract says {accepted:?}"
        );
        provoked += 1;
    }
    assert!(provoked >= 30, "only {provoked} errors provoked");
}

#[test]
fn outcome_names_and_codes_are_the_contracts() {
    let contract = contract();
    let server = Server::start();
    let mut con = server.client();
    let outcomes = &contract["outcomes"];
    let names = |command: &str| -> Vec<String> {
        let mut names: Vec<String> = list(outcomes, command)
            .iter()
            .map(|o| text(o, "name").to_owned())
            .collect();
        names.sort();
        names
    };
    let mut ours: Vec<String> = [
        Outcome::Bought,
        Outcome::SoldOut,
        Outcome::LimitReached,
        Outcome::NoItem,
        Outcome::Cancelled,
        Outcome::NotStarted,
        Outcome::Ended,
    ]
    .map(|o| o.name().to_owned())
    .to_vec();
    ours.sort();
    assert_eq!(ours, names("SECKILL.DEDUCT"));
    let mut ours: Vec<String> = [
        ConfirmOutcome::Confirmed,
        ConfirmOutcome::AlreadyFinal,
        ConfirmOutcome::Cancelled,
        ConfirmOutcome::NoItem,
        ConfirmOutcome::Refunded,
        ConfirmOutcome::Lapsed,
        ConfirmOutcome::UnknownRequest,
    ]
    .map(|o| o.name().to_owned())
    .to_vec();
    ours.sort();
    assert_eq!(ours, names("SECKILL.CONFIRM"));
    let mut ours: Vec<String> = [
        RefundOutcome::Refunded,
        RefundOutcome::Nothing,
        RefundOutcome::NoItem,
        RefundOutcome::AlreadyRefunded,
        RefundOutcome::Lapsed,
        RefundOutcome::UnknownRequest,
    ]
    .map(|o| o.name().to_owned())
    .to_vec();
    ours.sort();
    assert_eq!(ours, names("SECKILL.REFUND"));
    let mut ours: Vec<String> = [
        SettleOutcome::Settled,
        SettleOutcome::AlreadySettled,
        SettleOutcome::Unknown,
        SettleOutcome::NoItem,
    ]
    .map(|o| o.name().to_owned())
    .to_vec();
    ours.sort();
    assert_eq!(ours, names("SECKILL.SETTLE"));

    for (command, _) in outcomes.as_object().unwrap() {
        for outcome in list(outcomes, command) {
            let name = text(outcome, "name");
            let code = outcome["code"].as_i64().unwrap();
            let key = format!("contract-{command}-{name}");
            let case = &outcome["provoke"];
            let reply = case["reply"].as_i64().unwrap();
            let got = match command.as_str() {
                "SECKILL.DEDUCT" => {
                    assert_eq!(Outcome::of_reply(code).map(Outcome::name), Some(name));
                    let result: DeductResult = provoke(&server, &mut con, case, &key).unwrap();
                    let stock = (name == "BOUGHT").then_some(reply);
                    assert_eq!(result.stock, stock, "{command} {name}");
                    result.outcome.name().to_owned()
                }
                "SECKILL.CONFIRM" => {
                    let decoded = ConfirmOutcome::from_redis_value(Value::Int(code)).unwrap();
                    assert_eq!(decoded.name(), name);
                    provoke::<ConfirmOutcome>(&server, &mut con, case, &key)
                        .unwrap()
                        .name()
                        .to_owned()
                }
                "SECKILL.REFUND" => {
                    let decoded = RefundResult::from_redis_value(Value::Int(code)).unwrap();
                    assert_eq!(decoded.outcome.name(), name);
                    assert_eq!(
                        RefundOutcome::of_reply(code).map(RefundOutcome::name),
                        Some(name)
                    );
                    let result: RefundResult = provoke(&server, &mut con, case, &key).unwrap();
                    let units = (name == "REFUNDED").then_some(reply);
                    assert_eq!(result.units, units, "{command} {name}");
                    result.outcome.name().to_owned()
                }
                "SECKILL.SETTLE" => {
                    let decoded = SettleOutcome::from_redis_value(Value::Int(code)).unwrap();
                    assert_eq!(decoded.name(), name);
                    provoke::<SettleOutcome>(&server, &mut con, case, &key)
                        .unwrap()
                        .name()
                        .to_owned()
                }
                other => {
                    panic!("the contract names outcomes of {other}, which this crate does not type")
                }
            };
            assert_eq!(got, name, "{command}");
        }
    }
}

/// `ItemInfo { stock: 1, unlimited: true, ... }` as (field, value) pairs.
fn debug_fields(info: &ItemInfo) -> Vec<(String, String)> {
    let shown = format!("{info:?}");
    let inner = shown
        .strip_prefix("ItemInfo { ")
        .and_then(|rest| rest.strip_suffix(" }"))
        .expect("ItemInfo's Debug form");
    inner
        .split(", ")
        .map(|pair| {
            let (name, value) = pair.split_once(": ").expect("field: value");
            (name.to_owned(), value.to_owned())
        })
        .collect()
}

#[test]
fn item_info_reads_the_contract_fields() {
    let contract = contract();
    let fields = list(&contract, "info_fields");
    let names: Vec<&str> = fields.iter().map(|f| text(f, "name")).collect();

    // What the server sends, in order, is what the contract lists ...
    let server = Server::start();
    let mut con = server.client();
    redis::cmd("SECKILL.INIT")
        .arg("{contract}")
        .arg(10)
        .arg("STREAM")
        .arg("{contract}:orders")
        .query::<i64>(&mut con)
        .unwrap();
    let raw: Vec<Value> = redis::cmd("SECKILL.INFO")
        .arg("{contract}")
        .query(&mut con)
        .unwrap();
    let sent: Vec<String> = raw
        .iter()
        .step_by(2)
        .map(|name| String::from_redis_value(name.clone()).unwrap())
        .collect();
    assert_eq!(sent, names);
    let info: ItemInfo = redis::cmd("SECKILL.INFO")
        .arg("{contract}")
        .query(&mut con)
        .unwrap();
    assert_eq!(info.stream.as_deref(), Some("{contract}:orders"));

    // ... and ItemInfo has those fields, in that order, each read from the
    // field of its name: every one gets a value of its own, with the flags
    // both ways.
    for flag in [0, 1] {
        let mut reply = Vec::new();
        let mut expected = Vec::new();
        for (i, field) in fields.iter().enumerate() {
            let name = text(field, "name");
            reply.push(Value::BulkString(name.as_bytes().to_vec()));
            let (value, shown) = match text(field, "type") {
                "integer" => (Value::Int(100 + i as i64), (100 + i).to_string()),
                "flag" => (Value::Int(flag), (flag == 1).to_string()),
                "key or nil" => (Value::BulkString(b"s".to_vec()), "Some(\"s\")".to_owned()),
                other => panic!("an INFO field of type {other}"),
            };
            reply.push(value);
            expected.push((name.to_owned(), shown));
        }
        let info = ItemInfo::from_redis_value(Value::Array(reply)).unwrap();
        assert_eq!(debug_fields(&info), expected);
    }
}
