//! Bad input gets a Redis-style error, changes nothing and never takes the
//! server down.

mod common;

use common::{error, ok, snapshot, Server};

const NOT_INTEGER: &str = "ERR value is not an integer or out of range";
const NOT_POSITIVE: &str = "ERR value is out of range, must be positive";
const SYNTAX: &str = "ERR syntax error";
const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";
const LOADCHUNK_REFUSED: &str =
    "ERR SECKILL.LOADCHUNK is only accepted while loading the AOF or from the master";
const BAD_USER: &str = "ERR user id must be 1 to 128 bytes";
const BAD_REQUEST: &str = "ERR request id must be 1 to 128 bytes";
const OVERFLOW: &str = "ERR increment or decrement would overflow";
const BAD_EXPIRE: &str = "ERR invalid expire time in 'seckill.init' command";
const BAD_HOLD: &str = "ERR invalid hold time in 'seckill.deduct' command";
const BAD_WINDOW: &str =
    "ERR START and END must be non-negative Unix times in milliseconds, END after START";

fn arity(command: &str) -> String {
    format!("ERR wrong number of arguments for '{command}' command")
}

#[test]
fn bad_input_is_refused_with_a_clear_error_and_changes_nothing() {
    let server = Server::start();
    let mut con = server.client();
    ok::<i64>(&mut con, &["SECKILL.INIT", "sku:1", "10", "LIMIT", "5"]);
    ok::<i64>(
        &mut con,
        &["SECKILL.DEDUCT", "sku:1", "alice", "1", "ID", "r1"],
    );
    ok::<i64>(
        &mut con,
        &["SECKILL.INIT", "sku:big", "9223372036854775806"],
    );
    ok::<String>(&mut con, &["SET", "plain", "string"]);
    let long_id = "x".repeat(129);
    let longest_id = "y".repeat(128);

    let cases: &[(&[&str], String)] = &[
        // Arity.
        (&["SECKILL.INIT", "sku:1"], arity("seckill.init")),
        (&["SECKILL.ADD", "sku:1"], arity("seckill.add")),
        (&["SECKILL.ADD", "sku:1", "1", "2"], SYNTAX.into()),
        (&["SECKILL.ADD", "sku:1", "1", "ID"], SYNTAX.into()),
        (
            &["SECKILL.ADD", "sku:1", "1", "ID", ""],
            "ERR transfer id must be 1 to 128 bytes".into(),
        ),
        (&["SECKILL.TAKE", "sku:1", "1", "ID"], arity("seckill.take")),
        (&["SECKILL.TAKE", "sku:1", "1", "FOR", "t"], SYNTAX.into()),
        (
            &["SECKILL.TAKE", "sku:1", "0", "ID", "t"],
            "ERR value is out of range, must be positive".into(),
        ),
        (
            &["SECKILL.TAKE", "sku:1", "1", "ID", "t", "TO"],
            SYNTAX.into(),
        ),
        (
            &["SECKILL.TAKE", "sku:1", "1", "ID", "t", "TO", ""],
            "ERR destination must be 1 to 255 bytes".into(),
        ),
        // Only the master and the AOF may say how much was taken.
        (
            &["SECKILL.TAKE", "sku:1", "1", "ID", "t", "TAKEN", "1"],
            SYNTAX.into(),
        ),
        (&["SECKILL.SETTLE", "sku:1"], arity("seckill.settle")),
        (
            &["SECKILL.DEDUCT", "sku:1", "alice"],
            arity("seckill.deduct"),
        ),
        (
            &["SECKILL.DEDUCT", "sku:1", "a", "1", "ID", "r", "x"],
            SYNTAX.into(),
        ),
        (&["SECKILL.GET"], arity("seckill.get")),
        (&["SECKILL.GET", "sku:1", "extra"], SYNTAX.into()),
        (&["SECKILL.BOUGHT", "sku:1"], arity("seckill.bought")),
        (&["SECKILL.REFUND", "sku:1"], arity("seckill.refund")),
        (&["SECKILL.INFO"], arity("seckill.info")),
        // Numbers.
        (&["SECKILL.INIT", "new", "ten"], NOT_INTEGER.into()),
        (&["SECKILL.INIT", "new", "1.5"], NOT_INTEGER.into()),
        (
            &["SECKILL.INIT", "new", "99999999999999999999"],
            NOT_INTEGER.into(),
        ),
        (
            &["SECKILL.INIT", "new", "-1"],
            "ERR stock must be a non-negative integer below 9223372036854775807, or UNLIMITED"
                .into(),
        ),
        // What an unlimited item reports: a limited one may not read so.
        (
            &["SECKILL.INIT", "new", "9223372036854775807"],
            "ERR stock must be a non-negative integer below 9223372036854775807, or UNLIMITED"
                .into(),
        ),
        (&["SECKILL.ADD", "sku:big", "1"], OVERFLOW.into()),
        (
            &["SECKILL.INIT", "new", "1", "LIMIT", "-1"],
            "ERR LIMIT must be a non-negative integer".into(),
        ),
        (
            &["SECKILL.INIT", "new", "1", "LIMIT", "x"],
            NOT_INTEGER.into(),
        ),
        (&["SECKILL.ADD", "sku:1", "0"], NOT_POSITIVE.into()),
        (&["SECKILL.ADD", "sku:1", "-5"], NOT_POSITIVE.into()),
        (&["SECKILL.ADD", "sku:1", "x"], NOT_INTEGER.into()),
        (
            &["SECKILL.DEDUCT", "sku:1", "alice", "0"],
            NOT_POSITIVE.into(),
        ),
        (
            &["SECKILL.DEDUCT", "sku:1", "alice", "-1"],
            NOT_POSITIVE.into(),
        ),
        (
            &["SECKILL.DEDUCT", "sku:1", "alice", "one"],
            NOT_INTEGER.into(),
        ),
        (
            &["SECKILL.DEDUCT", "sku:1", "alice", " 1"],
            NOT_INTEGER.into(),
        ),
        // Overflow.
        (&["SECKILL.ADD", "sku:big", "2"], OVERFLOW.into()),
        // Options.
        (&["SECKILL.INIT", "new", "1", "FOO"], SYNTAX.into()),
        (&["SECKILL.INIT", "new", "1", "LIMIT"], SYNTAX.into()),
        (
            &["SECKILL.INIT", "new", "1", "LIMIT", "1", "LIMIT", "2"],
            SYNTAX.into(),
        ),
        (
            &["SECKILL.INIT", "new", "1", "EX", "10", "PX", "10"],
            SYNTAX.into(),
        ),
        (
            &["SECKILL.INIT", "new", "1", "REPLACE", "REPLACE"],
            SYNTAX.into(),
        ),
        (&["SECKILL.INIT", "new", "1", "EX"], SYNTAX.into()),
        (&["SECKILL.INIT", "new", "1", "EX", "0"], BAD_EXPIRE.into()),
        (
            &["SECKILL.INIT", "new", "1", "EX", "-10"],
            BAD_EXPIRE.into(),
        ),
        (
            &["SECKILL.INIT", "new", "1", "EX", "9223372036854775807"],
            BAD_EXPIRE.into(),
        ),
        (
            &["SECKILL.INIT", "new", "1", "PXAT", "0"],
            BAD_EXPIRE.into(),
        ),
        // An expiry the clock cannot reach is refused whether or not the
        // item exists, as `SET ... NX EX` refuses it.
        (
            &["SECKILL.INIT", "sku:1", "1", "EX", "9223372036854775"],
            BAD_EXPIRE.into(),
        ),
        (
            &["SECKILL.INIT", "sku:1", "1", "PX", "9223372036854775000"],
            BAD_EXPIRE.into(),
        ),
        (
            &["SECKILL.DEDUCT", "sku:1", "alice", "1", "IDX", "r2"],
            SYNTAX.into(),
        ),
        // Holds.
        (
            &["SECKILL.DEDUCT", "sku:1", "a", "1", "HOLD", "10"],
            "ERR HOLD requires ID".into(),
        ),
        (
            &["SECKILL.DEDUCT", "sku:1", "a", "1", "ID", "h", "HOLD", "0"],
            BAD_HOLD.into(),
        ),
        (
            &["SECKILL.DEDUCT", "sku:1", "a", "1", "ID", "h", "HOLD", "-1"],
            BAD_HOLD.into(),
        ),
        (
            &["SECKILL.DEDUCT", "sku:1", "a", "1", "ID", "h", "HOLD", "x"],
            NOT_INTEGER.into(),
        ),
        (
            &[
                "SECKILL.DEDUCT",
                "sku:1",
                "a",
                "1",
                "ID",
                "h",
                "HOLD",
                "9223372036854775807",
            ],
            BAD_HOLD.into(),
        ),
        (
            &[
                "SECKILL.DEDUCT",
                "sku:1",
                "a",
                "1",
                "ID",
                "h",
                "HOLDUNTIL",
                "0",
            ],
            BAD_HOLD.into(),
        ),
        (
            &[
                "SECKILL.DEDUCT",
                "sku:1",
                "a",
                "1",
                "ID",
                "h",
                "HOLD",
                "1",
                "HOLDUNTIL",
                "5",
            ],
            SYNTAX.into(),
        ),
        (
            &["SECKILL.DEDUCT", "sku:1", "a", "1", "ID", "h", "ID", "i"],
            SYNTAX.into(),
        ),
        (&["SECKILL.CONFIRM", "sku:1"], arity("seckill.confirm")),
        (&["SECKILL.CONFIRM", "sku:1", ""], BAD_REQUEST.into()),
        (&["SECKILL.CONFIRM", "plain", "r1"], WRONGTYPE.into()),
        (&["SECKILL.RELEASE", "sku:1"], arity("seckill.release")),
        (&["SECKILL.RELEASE", "sku:1", "r1", ""], BAD_REQUEST.into()),
        (&["SECKILL.HOLDS"], arity("seckill.holds")),
        (
            &["SECKILL.HOLDS", "sku:1", "a", "b"],
            arity("seckill.holds"),
        ),
        (&["SECKILL.HOLDS", "plain"], WRONGTYPE.into()),
        // Sale windows.
        (&["SECKILL.INIT", "new", "1", "START"], SYNTAX.into()),
        (
            &["SECKILL.INIT", "new", "1", "START", "1", "START", "2"],
            SYNTAX.into(),
        ),
        (
            &["SECKILL.INIT", "new", "1", "START", "soon"],
            NOT_INTEGER.into(),
        ),
        (
            &["SECKILL.INIT", "new", "1", "START", "-1"],
            BAD_WINDOW.into(),
        ),
        (
            &["SECKILL.INIT", "new", "1", "START", "5", "END", "5"],
            BAD_WINDOW.into(),
        ),
        (
            &["SECKILL.INIT", "new", "1", "START", "6", "END", "5"],
            BAD_WINDOW.into(),
        ),
        (&["SECKILL.WINDOW", "sku:1", "0"], arity("seckill.window")),
        (&["SECKILL.WINDOW", "sku:1", "0", "x"], NOT_INTEGER.into()),
        (&["SECKILL.WINDOW", "sku:1", "10", "5"], BAD_WINDOW.into()),
        (&["SECKILL.WINDOW", "plain", "0", "0"], WRONGTYPE.into()),
        (
            &["SECKILL.DEDUCT", "sku:1", "alice", "1", "ID"],
            SYNTAX.into(),
        ),
        // Ids.
        (&["SECKILL.DEDUCT", "sku:1", "", "1"], BAD_USER.into()),
        (&["SECKILL.DEDUCT", "sku:1", &long_id, "1"], BAD_USER.into()),
        (
            &["SECKILL.DEDUCT", "sku:1", "alice", "1", "ID", ""],
            BAD_REQUEST.into(),
        ),
        (
            &["SECKILL.DEDUCT", "sku:1", "alice", "1", "ID", &long_id],
            BAD_REQUEST.into(),
        ),
        (&["SECKILL.BOUGHT", "sku:1", ""], BAD_USER.into()),
        (&["SECKILL.REFUND", "sku:1", ""], BAD_REQUEST.into()),
        (&["SECKILL.REFUND", "sku:1", &long_id], BAD_REQUEST.into()),
        // Request id reuse.
        (
            &["SECKILL.DEDUCT", "sku:1", "bob", "1", "ID", "r1"],
            "ERR request id was already used by another user or for another quantity".into(),
        ),
        // Wrong type, for every command.
        (&["SECKILL.INIT", "plain", "1"], WRONGTYPE.into()),
        (&["SECKILL.INIT", "plain", "1", "REPLACE"], WRONGTYPE.into()),
        (&["SECKILL.ADD", "plain", "1"], WRONGTYPE.into()),
        (&["SECKILL.DEDUCT", "plain", "alice", "1"], WRONGTYPE.into()),
        (&["SECKILL.GET", "plain"], WRONGTYPE.into()),
        (&["SECKILL.BOUGHT", "plain", "alice"], WRONGTYPE.into()),
        (&["SECKILL.REFUND", "plain", "r1"], WRONGTYPE.into()),
        (&["SECKILL.INFO", "plain"], WRONGTYPE.into()),
        (&["GET", "sku:1"], WRONGTYPE.into()),
        // The AOF loader command is not for clients, whatever they send.
        (
            &["SECKILL.LOADCHUNK", "sku:1", "garbage"],
            LOADCHUNK_REFUSED.into(),
        ),
        (
            &["SECKILL.LOADCHUNK", "sku:1", "H"],
            LOADCHUNK_REFUSED.into(),
        ),
        (
            &["SECKILL.LOADCHUNK", "plain", "B\u{1}\0\0\0"],
            LOADCHUNK_REFUSED.into(),
        ),
    ];

    let items = ["sku:1", "sku:big"];
    let before: Vec<_> = items.iter().map(|key| snapshot(&mut con, key)).collect();
    let keys_before: i64 = ok(&mut con, &["DBSIZE"]);
    for (args, expected) in cases {
        assert_eq!(&error(&mut con, args), expected, "for {args:?}");
    }
    assert_eq!(ok::<String>(&mut con, &["PING"]), "PONG");
    let after: Vec<_> = items.iter().map(|key| snapshot(&mut con, key)).collect();
    assert_eq!(before, after, "rejected calls changed an item");
    assert_eq!(ok::<i64>(&mut con, &["DBSIZE"]), keys_before);
    assert_eq!(ok::<String>(&mut con, &["GET", "plain"]), "string");

    // The longest allowed ids are accepted.
    let reply: i64 = ok(
        &mut con,
        &[
            "SECKILL.DEDUCT",
            "sku:1",
            &longest_id,
            "1",
            "ID",
            &longest_id,
        ],
    );
    assert_eq!(reply, 8);
}

#[test]
fn binary_ids_are_kept_byte_for_byte() {
    let server = Server::start();
    let mut con = server.client();
    ok::<i64>(&mut con, &["SECKILL.INIT", "sku:1", "10"]);
    let user = "us\u{0}er\r\n";
    let id = "\u{ff}\u{0}id";
    assert_eq!(
        ok::<i64>(&mut con, &["SECKILL.DEDUCT", "sku:1", user, "1", "ID", id]),
        9
    );
    assert_eq!(ok::<i64>(&mut con, &["SECKILL.BOUGHT", "sku:1", user]), 1);
    assert_eq!(ok::<i64>(&mut con, &["SECKILL.BOUGHT", "sku:1", "us"]), 0);
    assert_eq!(ok::<i64>(&mut con, &["SECKILL.REFUND", "sku:1", id]), 1);
}
