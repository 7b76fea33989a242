//! The ways a team deducts flash-sale stock, each written faithfully to the
//! algorithm it stands for, and the keys each one needs.

use redis::Connection;
use seckill_harness::ok;

/// The published seckill.lua script: check stock, check the user's bought key (built
/// inside the script, as published), DECR, INCR.
pub const SECKILL_LUA: &str = include_str!("../seckill.lua");

/// The Spring StockService's script: exists / get / INCRBY -num; no per-user limit.
pub const STOCK_SERVICE_LUA: &str = "if (redis.call('exists', KEYS[1]) == 1) then \
    local stock = tonumber(redis.call('get', KEYS[1])); \
    local num = tonumber(ARGV[1]); \
    if (stock == -1) then return -1; end; \
    if (stock >= num) then return redis.call('incrby', KEYS[1], 0 - num); end; \
    return -2; end; return -3;";

/// seckill.lua's logic as a Redis Function, the no-module alternative
/// that survives restarts.
pub const FUNCTION_LIBRARY: &str = r#"#!lua name=seckill_bench
redis.register_function('seckill_deduct', function(keys, args)
    local stock = tonumber(redis.call('get', keys[1]) or '0')
    if stock <= 0 then
        return -1
    end
    local boughtKey = keys[2] .. ':' .. args[1]
    local bought = tonumber(redis.call('get', boughtKey) or '0')
    if bought >= tonumber(args[2]) then
        return -2
    end
    redis.call('decr', keys[1])
    redis.call('incr', boughtKey)
    return 1
end)
"#;

pub struct Scripts {
    pub seckill_lua: String,
    pub stock_service: String,
}

/// Loads both scripts and the function library; returns the scripts' SHAs.
pub fn load_scripts(con: &mut Connection) -> Scripts {
    ok::<String>(con, &["FUNCTION", "LOAD", "REPLACE", FUNCTION_LIBRARY]);
    Scripts {
        seckill_lua: ok(con, &["SCRIPT", "LOAD", SECKILL_LUA]),
        stock_service: ok(con, &["SCRIPT", "LOAD", STOCK_SERVICE_LUA]),
    }
}

/// One contender in a redis-benchmark run.
pub struct Command {
    pub name: &'static str,
    /// The INFO commandstats entry that carries its server cost.
    pub stat: &'static str,
    pub args: Vec<String>,
    /// `__rand_int__` in `args` becomes a random number below this.
    pub keyspace: usize,
}

/// Random request ids come from a range this large, so that a run of a
/// million calls repeats almost none.
const REQUEST_ID_SPACE: usize = 2_000_000_000;

fn command(name: &'static str, stat: &'static str, args: &[&str]) -> Command {
    Command {
        name,
        stat,
        args: args.iter().map(|arg| arg.to_string()).collect(),
        keyspace: 0,
    }
}

/// Names used in every table, so rows line up across workloads.
pub const MODULE: &str = "SECKILL.DEDUCT";
pub const MODULE_ID: &str = "SECKILL.DEDUCT ... ID";
pub const MODULE_HOLD: &str = "SECKILL.DEDUCT ... ID ... HOLD";
/// A purchase of one variant of an item with three (a drop's sizes).
pub const MODULE_VARIANT: &str = "SECKILL.DEDUCT ... ID ... VARIANT, 3 variants";
/// One order of three items, every line or none (`SECKILL.MDEDUCT`).
pub const MODULE_ORDER: &str = "SECKILL.MDEDUCT, 3 lines ... ID";
pub const LUA_SECKILL: &str = "Lua seckill.lua (EVALSHA)";
pub const LUA_STOCK_SERVICE: &str = "Lua StockService (EVALSHA)";
pub const FUNCTION: &str = "Function (FCALL)";
pub const WATCH: &str = "WATCH/MULTI/EXEC";
pub const POSTGRES: &str = "PostgreSQL UPDATE, memory speed";
pub const POSTGRES_DURABLE: &str = "PostgreSQL UPDATE, durable";
pub const GET: &str = "GET (reference)";
pub const DECRBY: &str = "DECRBY (reference)";
/// The success path's floor: one write that finds its user, as a hash of
/// a field per buyer does.
pub const HINCRBY: &str = "HINCRBY, a field per buyer (floor)";
/// `SECKILL.DEDUCT` of the module of the baseline commit (`make bench`
/// builds it: `BASELINE`, the previous commit unless told).
pub const BASELINE: &str = "SECKILL.DEDUCT, the baseline commit's module";
/// The sold-out path's floor: a module command that opens its key and
/// replies `-1`, as a sold-out DEDUCT does (`bench/floor`).
pub const FLOOR: &str = "module command, open key and reply (floor)";

/// The floor module's path, beside seckill's, if it was built.
pub fn floor_module() -> Option<String> {
    let path = seckill_harness::module_path().with_file_name("libseckill_floor.so");
    path.exists().then(|| path.display().to_string())
}

/// True if the floor module (`bench/floor`) is loaded.
pub fn floor_loaded(con: &mut Connection) -> bool {
    let info: redis::Value = redis::cmd("COMMAND")
        .arg("INFO")
        .arg("floor.touch")
        .query(con)
        .unwrap_or(redis::Value::Nil);
    matches!(info, redis::Value::Array(ref entries) if entries.first().is_some_and(|entry| *entry != redis::Value::Nil))
}

/// Prepares `prefix`-named keys holding `stock` units for every contender
/// and returns the commands that deduct one unit for a random user.
pub fn single_commands(
    con: &mut Connection,
    scripts: &Scripts,
    prefix: &str,
    stock: i64,
    users: usize,
) -> Vec<Command> {
    let stock = stock.to_string();
    let key = |name: &str| format!("{prefix}:{name}");
    let (item, item_id, item_hold) = (key("item"), key("item-id"), key("item-hold"));
    let item_variants = key("item-variants");
    ok::<i64>(
        con,
        &[
            "SECKILL.INIT",
            &item_variants,
            "VARIANTS",
            "3",
            "s",
            &stock,
            "m",
            &stock,
            "l",
            &stock,
            "LIMIT",
            "1000000000",
            "REPLACE",
        ],
    );
    // An order's items share a hash tag, as they must in a cluster.
    let lines: Vec<String> = (1..=3)
        .map(|n| format!("{{{prefix}:order}}:item{n}"))
        .collect();
    for name in [&item, &item_id, &item_hold].into_iter().chain(&lines) {
        ok::<i64>(
            con,
            &[
                "SECKILL.INIT",
                name,
                &stock,
                "LIMIT",
                "1000000000",
                "REPLACE",
            ],
        );
    }
    for name in ["seckill-lua:stock", "stock-service:stock", "fn:stock"] {
        ok::<String>(con, &["SET", &key(name), &stock]);
    }
    ok::<String>(con, &["SET", "ref:string", "42"]);
    ok::<String>(con, &["SET", "ref:counter", "1000000000000000"]);
    let user = "user:__rand_int__";
    let limit = "1000000000";
    let mut commands = vec![
        command(GET, "get", &["GET", "ref:string"]),
        command(DECRBY, "decrby", &["DECRBY", "ref:counter", "1"]),
        command(HINCRBY, "hincrby", &["HINCRBY", &key("buyers"), user, "1"]),
        command(
            MODULE,
            "seckill.deduct",
            &["SECKILL.DEDUCT", &item, user, "1"],
        ),
        command(
            MODULE_ID,
            "seckill.deduct",
            &[
                "SECKILL.DEDUCT",
                &item_id,
                // redis-benchmark draws each __rand_int__ on its own, so a
                // random user would sometimes reuse another user's request
                // id, which is an error; one user keeps every call valid.
                "user:bench",
                "1",
                "ID",
                "req:__rand_int__",
            ],
        ),
        command(
            MODULE_HOLD,
            "seckill.deduct",
            &[
                "SECKILL.DEDUCT",
                &item_hold,
                "user:bench",
                "1",
                "ID",
                "req:__rand_int__",
                "HOLD",
                "600",
            ],
        ),
        command(
            MODULE_VARIANT,
            "seckill.deduct",
            &[
                "SECKILL.DEDUCT",
                &item_variants,
                "user:bench",
                "1",
                "ID",
                "req:__rand_int__",
                "VARIANT",
                "m",
            ],
        ),
        command(
            MODULE_ORDER,
            "seckill.mdeduct",
            &[
                "SECKILL.MDEDUCT",
                "3",
                &lines[0],
                "1",
                &lines[1],
                "1",
                &lines[2],
                "1",
                "user:bench",
                "req:__rand_int__",
            ],
        ),
        command(
            LUA_SECKILL,
            "evalsha",
            &[
                "EVALSHA",
                &scripts.seckill_lua,
                "2",
                &key("seckill-lua:stock"),
                &key("seckill-lua:bought"),
                user,
                limit,
            ],
        ),
        command(
            LUA_STOCK_SERVICE,
            "evalsha",
            &[
                "EVALSHA",
                &scripts.stock_service,
                "1",
                &key("stock-service:stock"),
                "1",
            ],
        ),
        command(
            FUNCTION,
            "fcall",
            &[
                "FCALL",
                "seckill_deduct",
                "2",
                &key("fn:stock"),
                &key("fn:bought"),
                user,
                limit,
            ],
        ),
    ];
    if floor_loaded(con) {
        commands.push(command(FLOOR, "floor.touch", &["FLOOR.TOUCH", &item]));
    }
    for command in &mut commands {
        command.keyspace =
            if [MODULE_ID, MODULE_HOLD, MODULE_VARIANT, MODULE_ORDER].contains(&command.name) {
                REQUEST_ID_SPACE
            } else {
                users
            };
    }
    commands
}

/// Optimistic locking from the client, what many people try first: watch
/// the stock and the user's bought key, check, then MULTI/DECR/INCR/EXEC,
/// retrying when another client got in between.
pub fn watch_deduct(con: &mut Connection, prefix: &str, user: &str, limit: i64) -> i64 {
    let stock_key = format!("{prefix}:watch:stock");
    let bought_key = format!("{prefix}:watch:bought:{user}");
    loop {
        ok::<String>(con, &["WATCH", &stock_key, &bought_key]);
        let (stock, bought): (Option<i64>, Option<i64>) = redis::pipe()
            .cmd("GET")
            .arg(&stock_key)
            .cmd("GET")
            .arg(&bought_key)
            .query(con)
            .expect("GET stock and bought");
        if stock.unwrap_or(0) <= 0 {
            ok::<String>(con, &["UNWATCH"]);
            return -1;
        }
        if bought.unwrap_or(0) >= limit {
            ok::<String>(con, &["UNWATCH"]);
            return -2;
        }
        let committed: Option<(i64, i64)> = redis::pipe()
            .atomic()
            .cmd("DECR")
            .arg(&stock_key)
            .cmd("INCR")
            .arg(&bought_key)
            .query(con)
            .expect("EXEC");
        if committed.is_some() {
            return 1;
        }
    }
}
