//! Who may do what: ACL users limited to some SECKILL commands and to a key
//! pattern. On Redis 7.0 module commands belong to no ACL category, so rules
//! name them; where the server has categories for module commands (Redis
//! 7.2 and later, Valkey), the module puts them in @read or @write.

mod common;

use common::{ok, Server};

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
