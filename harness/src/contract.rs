//! `contract/seckill.json`, read by the module's tests and by each client
//! library's: loading it, reading its fields, and provoking one of its cases
//! on a real server.

use crate::Server;
use redis::{Connection, FromRedisValue, RedisError, Value};
use serde_json::Value as Json;
use std::path::Path;

/// The contract, from the repository's root.
pub fn load() -> Json {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../contract/seckill.json");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|err| panic!("cannot read {}: {err}", path.display()));
    serde_json::from_str(&text).expect("contract/seckill.json is not valid JSON")
}

pub fn text<'a>(value: &'a Json, field: &str) -> &'a str {
    value[field]
        .as_str()
        .unwrap_or_else(|| panic!("{field} should be a string in {value}"))
}

pub fn list<'a>(value: &'a Json, field: &str) -> &'a [Json] {
    value[field].as_array().map_or(&[], Vec::as_slice)
}

/// A command of the contract with `$KEY` (and `$N`) replaced.
pub fn command(args: &Json, key: &str, n: Option<usize>) -> redis::Cmd {
    let args = args.as_array().expect("a command is an array of strings");
    let mut words = args.iter().map(|arg| {
        let arg = arg.as_str().expect("a command is an array of strings");
        let arg = arg.replace("$KEY", key);
        match n {
            Some(n) => arg.replace("$N", &n.to_string()),
            None => arg,
        }
    });
    let mut cmd = redis::cmd(&words.next().expect("an empty command"));
    for word in words {
        cmd.arg(word);
    }
    cmd
}

fn must_run(con: &mut Connection, args: &Json, key: &str) {
    command(args, key, None)
        .query::<Value>(con)
        .unwrap_or_else(|err| panic!("{args} for {key} failed: {err}"));
}

/// Provokes one case on `server`: setup, the trigger decoded as `T`,
/// cleanup. The trigger's reply is returned, error or not; the cleanup runs
/// either way, so that the server is as fresh for the next case.
pub fn provoke<T: FromRedisValue>(
    server: &Server,
    con: &mut Connection,
    case: &Json,
    key: &str,
) -> Result<T, RedisError> {
    for args in list(case, "setup") {
        must_run(con, args, key);
    }
    if let Some(repeated) = case.get("setup_repeated") {
        let times = repeated["times"].as_u64().expect("times") as usize;
        let mut pipe = redis::pipe();
        for n in 0..times {
            pipe.add_command(command(&repeated["command"], key, Some(n)));
        }
        pipe.query::<Vec<Value>>(con)
            .unwrap_or_else(|err| panic!("the repeated setup for {key} failed: {err}"));
    }
    let reply = match case.get("trigger_as") {
        Some(user) => {
            let mut as_user = server.client();
            redis::cmd("AUTH")
                .arg(text(user, "user").replace("$KEY", key))
                .arg(text(user, "password"))
                .query::<()>(&mut as_user)
                .expect("AUTH as the case's user");
            command(&case["trigger"], key, None).query(&mut as_user)
        }
        None => command(&case["trigger"], key, None).query(con),
    };
    for args in list(case, "cleanup") {
        must_run(con, args, key);
    }
    reply
}
