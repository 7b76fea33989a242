//! Whatever a client sends, the server stays up: a panic in a module would
//! abort redis-server, so random arguments to every command must only ever
//! produce replies or errors.

mod common;

use common::{ok, Server};
use proptest::prelude::*;

const COMMANDS: &[&str] = &[
    "SECKILL.INIT",
    "SECKILL.ADD",
    "SECKILL.DEDUCT",
    "SECKILL.REFUND",
    "SECKILL.GET",
    "SECKILL.BOUGHT",
    "SECKILL.INFO",
    "SECKILL.LOADCHUNK",
    "SECKILL.WINDOW",
    "SECKILL.CONFIRM",
    "SECKILL.RELEASE",
    "SECKILL.HOLDS",
    "SECKILL.STREAM",
];

/// Arguments biased towards what the parsers look for.
fn argument() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        Just(b"sku:1".to_vec()),
        Just(b"sku:u".to_vec()),
        Just(b"plain".to_vec()),
        Just(b"ID".to_vec()),
        Just(b"LIMIT".to_vec()),
        Just(b"EX".to_vec()),
        Just(b"PXAT".to_vec()),
        Just(b"REPLACE".to_vec()),
        Just(b"START".to_vec()),
        Just(b"HOLD".to_vec()),
        Just(b"STREAM".to_vec()),
        Just(b"MAXLEN".to_vec()),
        Just(b"{sku:1}:orders".to_vec()),
        Just(b"HOLDUNTIL".to_vec()),
        Just(b"END".to_vec()),
        Just(b"UNLIMITED".to_vec()),
        Just(b"9223372036854775807".to_vec()),
        Just(b"-9223372036854775808".to_vec()),
        (-3i64..5).prop_map(|n| n.to_string().into_bytes()),
        proptest::collection::vec(any::<u8>(), 0..40),
        // Chunk-like payloads for LOADCHUNK.
        (
            prop_oneof![Just(b'H'), Just(b'B'), Just(b'R')],
            proptest::collection::vec(any::<u8>(), 0..90)
        )
            .prop_map(|(tag, rest)| [vec![tag], rest].concat()),
    ]
}

#[test]
fn random_arguments_never_take_the_server_down() {
    let server = Server::start();
    let mut con = server.client();
    ok::<i64>(&mut con, &["SECKILL.INIT", "sku:1", "5", "LIMIT", "2"]);
    ok::<i64>(&mut con, &["SECKILL.INIT", "sku:u", "UNLIMITED"]);
    ok::<String>(&mut con, &["SET", "plain", "x"]);

    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
        cases: 3_000,
        ..ProptestConfig::default()
    });
    let con = std::cell::RefCell::new(con);
    let calls = (
        0..COMMANDS.len(),
        proptest::collection::vec(argument(), 0..8),
    );
    runner
        .run(&calls, |(command, args)| {
            let mut call = redis::cmd(COMMANDS[command]);
            for arg in &args {
                call.arg(arg.as_slice());
            }
            // Any reply or error is fine; a dead server is not.
            let mut con = con.borrow_mut();
            let _: redis::RedisResult<redis::Value> = call.query(&mut *con);
            prop_assert_eq!(ok::<String>(&mut con, &["PING"]), "PONG");
            Ok(())
        })
        .expect("the server survived every call");
    // Whatever the calls left behind still saves and loads.
    ok::<String>(&mut con.borrow_mut(), &["DEBUG", "RELOAD"]);
}
