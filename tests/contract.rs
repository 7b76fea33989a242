//! The module against `contract/seckill.json`, the file each client
//! library's tests read too: every reply code, outcome and error of the
//! contract provoked on a real server, every error text in `src/` listed
//! there, and INFO's fields in the contract's order. A text changed on one
//! side only fails here and in each client's suite.

mod common;

use common::Server;
use redis::{Connection, RedisError, Value};
use seckill_harness::contract::{list, load as contract, provoke, text};
use serde_json::Value as Json;
use std::collections::{BTreeSet, HashMap};
use std::path::Path;

/// An error reply as the server sent it, code first.
fn error_line(err: &RedisError) -> String {
    match (err.code(), err.detail()) {
        (Some(code), Some(detail)) => format!("{code} {detail}"),
        (Some(code), None) => code.to_owned(),
        _ => panic!("not an error reply: {err}"),
    }
}

#[test]
fn every_outcome_and_reply_code_is_what_the_contract_says() {
    let contract = contract();
    let server = Server::start();
    let mut con = server.client();
    let mut checked = 0;
    for section in ["outcomes", "reply_codes"] {
        for (name, cases) in contract[section].as_object().expect(section) {
            let mut codes = BTreeSet::new();
            for case in cases.as_array().expect("a list of codes") {
                let code = case["code"].as_i64().expect("code");
                assert!(codes.insert(code), "{name}: code {code} listed twice");
                let label = match case.get("name") {
                    Some(outcome) => format!("{name} {}", outcome.as_str().unwrap()),
                    None => format!("{name} {code}"),
                };
                let expected = case["provoke"]["reply"].as_i64().expect("reply");
                match case.get("code_at_least") {
                    Some(least) => assert!(expected >= least.as_i64().unwrap(), "{label}"),
                    None => assert_eq!(expected, code, "{label}: the reply is the code"),
                }
                let key = format!("contract-{}", label.replace(' ', "-"));
                let reply = provoke::<Value>(&server, &mut con, &case["provoke"], &key);
                assert_eq!(
                    reply.map_err(|err| error_line(&err)),
                    Ok(Value::Int(expected)),
                    "{label}"
                );
                checked += 1;
            }
        }
    }
    assert!(checked >= 20, "only {checked} codes in the contract");
}

#[test]
fn every_provocable_error_replies_the_contract_text() {
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
        let err = match provoke::<Value>(&server, &mut con, case, &key) {
            Ok(reply) => panic!("{name} should have failed, replied {reply:?}"),
            Err(err) => err,
        };
        let line = error_line(&err);
        let mut accepted = vec![text(error, "text")];
        accepted.extend(list(error, "other_texts").iter().filter_map(Json::as_str));
        assert!(
            accepted.contains(&line.as_str()),
            "{name}: the server replied {line:?}, the contract says {accepted:?}"
        );
        assert_eq!(err.code(), Some(text(error, "code")), "{name}");
        provoked += 1;
    }
    assert_eq!(ok_ping(&mut con), "PONG");
    assert!(provoked >= 30, "only {provoked} errors provoked");
}

fn ok_ping(con: &mut Connection) -> String {
    redis::cmd("PING").query(con).unwrap()
}

#[test]
fn the_contract_is_sorted_and_each_error_has_a_kind_and_a_way_to_provoke_it() {
    let contract = contract();
    let kinds: HashMap<&str, &Json> = list(&contract, "kinds")
        .iter()
        .map(|kind| (text(kind, "name"), kind))
        .collect();
    let kind_names: Vec<&str> = list(&contract, "kinds")
        .iter()
        .map(|k| text(k, "name"))
        .collect();
    assert!(kind_names.is_sorted(), "kinds out of order: {kind_names:?}");
    let errors = list(&contract, "errors");
    let order: Vec<(&str, &str)> = errors
        .iter()
        .map(|e| (text(e, "kind"), text(e, "name")))
        .collect();
    let mut sorted = order.clone();
    sorted.sort();
    assert_eq!(order, sorted, "errors sorted by kind, then by name");
    let names: BTreeSet<&str> = order.iter().map(|(_, name)| *name).collect();
    assert_eq!(names.len(), order.len(), "error names are unique");
    for error in errors {
        let name = text(error, "name");
        let kind = kinds
            .get(text(error, "kind"))
            .unwrap_or_else(|| panic!("{name}: unknown kind"));
        let code = text(error, "code");
        let shown = error
            .get("text")
            .or_else(|| error.get("template"))
            .expect("a text");
        assert!(
            shown.as_str().unwrap().starts_with(&format!("{code} ")),
            "{name}: the text starts with its code"
        );
        let retryable = kind["retryable"].as_bool().expect("retryable")
            || list(kind, "retryable_codes")
                .iter()
                .any(|c| c.as_str() == Some(code));
        assert_eq!(error["retryable"].as_bool(), Some(retryable), "{name}");
        assert!(
            ["module", "server"].contains(&text(error, "worded_by")),
            "{name}"
        );
        match (error.get("provoke"), error.get("not_provocable")) {
            (Some(case), None) => assert!(case["trigger"].is_array(), "{name}"),
            (None, Some(reason)) => assert!(!reason.as_str().unwrap().is_empty(), "{name}"),
            _ => panic!("{name}: either a way to provoke it or a reason why there is none"),
        }
    }
}

/// Reads the Rust string literal starting at `source[start]` (a `"`):
/// escapes and `\` line continuations as the compiler reads them.
fn literal(source: &str, start: usize) -> (String, usize) {
    let bytes = source.as_bytes();
    assert_eq!(bytes[start], b'"');
    let mut out = String::new();
    let mut chars = source[start + 1..].char_indices();
    while let Some((at, c)) = chars.next() {
        match c {
            '"' => return (out, start + 1 + at + 1),
            '\\' => match chars.next().map(|(_, c)| c) {
                Some('\n') => {
                    let rest = chars.as_str();
                    let skipped = rest.len() - rest.trim_start().len();
                    for _ in 0..rest[..skipped].chars().count() {
                        chars.next();
                    }
                }
                Some('n') => out.push('\n'),
                Some(other) => out.push(other),
                None => break,
            },
            c => out.push(c),
        }
    }
    panic!("an unterminated string literal")
}

fn skip_space(source: &str, at: usize) -> usize {
    at + (source[at..].len() - source[at..].trim_start().len())
}

/// Every error text the module's source can send: the `ERR_*` constants
/// (adjacent literals joined), and the literals and `format!` templates
/// handed to `RedisError` directly.
fn error_texts_in(source: &str) -> Vec<String> {
    let mut texts = Vec::new();
    for (at, _) in source.match_indices("const ERR_") {
        let equals = at + source[at..].find('=').expect("a constant's value");
        let mut pos = skip_space(source, equals + 1);
        let mut text = String::new();
        while source.as_bytes()[pos] == b'"' {
            let (part, end) = literal(source, pos);
            text.push_str(&part);
            pos = skip_space(source, end);
        }
        assert!(!text.is_empty(), "an error constant that is not a literal");
        texts.push(text);
    }
    for pattern in ["RedisError::Str(", "RedisError::String("] {
        for (at, _) in source.match_indices(pattern) {
            let mut pos = skip_space(source, at + pattern.len());
            if source[pos..].starts_with("format!(") {
                pos = skip_space(source, pos + "format!(".len());
            }
            if source.as_bytes()[pos] == b'"' {
                texts.push(literal(source, pos).0);
            }
        }
    }
    texts
}

fn sources(dir: &Path, found: &mut Vec<(String, String)>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, found);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            let source = std::fs::read_to_string(&path).unwrap();
            found.push((path.display().to_string(), source));
        }
    }
}

#[test]
fn every_error_text_in_the_source_is_in_the_contract_and_back() {
    let contract = contract();
    let listed: BTreeSet<&str> = list(&contract, "errors")
        .iter()
        .filter(|error| text(error, "worded_by") == "module")
        .map(|error| {
            error
                .get("template")
                .or_else(|| error.get("text"))
                .and_then(Json::as_str)
                .unwrap()
        })
        .collect();
    let mut files = Vec::new();
    sources(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &mut files,
    );
    let mut in_source = BTreeSet::new();
    for (path, source) in &files {
        for found in error_texts_in(source) {
            assert!(
                listed.contains(found.as_str()),
                "{path} can reply {found:?}, which contract/seckill.json does not list"
            );
            in_source.insert(found);
        }
    }
    for text in &listed {
        assert!(
            in_source.contains(*text),
            "contract/seckill.json lists {text:?}, which no file in src/ sends"
        );
    }
    assert!(in_source.len() >= 30, "the scan found only {in_source:?}");
}

fn field_names_and_values(reply: Value) -> Vec<(String, Value)> {
    let pairs = match reply {
        Value::Array(items) => {
            let mut items = items.into_iter();
            std::iter::from_fn(|| Some((items.next()?, items.next()?))).collect()
        }
        Value::Map(pairs) => pairs,
        other => panic!("unexpected INFO reply {other:?}"),
    };
    pairs
        .into_iter()
        .map(|(name, value)| (redis::from_redis_value(name).unwrap(), value))
        .collect()
}

#[test]
fn info_replies_the_contract_fields_in_order_under_resp2_and_resp3() {
    let contract = contract();
    let fields = list(&contract, "info_fields");
    let server = Server::start();
    for mut con in [server.client(), server.client_resp3()] {
        for (key, stream) in [
            ("{contract}:a", Some("{contract}:orders")),
            ("{contract}:b", None),
        ] {
            let mut init = redis::cmd("SECKILL.INIT");
            init.arg(key).arg(10).arg("REPLACE");
            if let Some(stream) = stream {
                init.arg("STREAM").arg(stream);
            }
            init.query::<i64>(&mut con).unwrap();
            let reply: Value = redis::cmd("SECKILL.INFO").arg(key).query(&mut con).unwrap();
            let got = field_names_and_values(reply);
            let names: Vec<&str> = got.iter().map(|(name, _)| name.as_str()).collect();
            let expected: Vec<&str> = fields.iter().map(|f| text(f, "name")).collect();
            assert_eq!(names, expected, "INFO {key}'s fields");
            for ((name, value), field) in got.iter().zip(fields) {
                let fits = match (text(field, "type"), value) {
                    ("integer", Value::Int(_)) => true,
                    ("flag", Value::Int(flag)) => *flag == 0 || *flag == 1,
                    ("key or nil", Value::BulkString(_) | Value::Nil) => true,
                    _ => false,
                };
                assert!(
                    fits,
                    "INFO {key}: {name} is {value:?}, not {}",
                    field["type"]
                );
            }
        }
    }
}
