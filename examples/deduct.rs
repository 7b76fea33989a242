//! Deducts one unit for a user, the way an app server would.
//!
//! ```sh
//! make run &                                  # a server with the module
//! cargo run --example deduct -- alice order-1
//! ```
//! `REDIS_URL` selects another server (default `redis://127.0.0.1:6379/`).

fn main() -> redis::RedisResult<()> {
    let mut args = std::env::args().skip(1);
    let user_id = args.next().unwrap_or_else(|| "alice".to_owned());
    let request_id = args.next().unwrap_or_else(|| "order-1".to_owned());
    let url = std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379/".to_owned());
    let mut con = redis::Client::open(url)?.get_connection()?;

    // Many app servers may run this at once: the first creates the item.
    let _: i64 = redis::cmd("SECKILL.INIT")
        .arg("sku:1001")
        .arg(10)
        .arg("LIMIT")
        .arg(1)
        .query(&mut con)?;

    let remaining: i64 = redis::cmd("SECKILL.DEDUCT")
        .arg("sku:1001")
        .arg(&user_id)
        .arg(1)
        .arg("ID")
        .arg(&request_id)
        .query(&mut con)?;

    match remaining {
        n if n >= 0 => println!("{user_id} bought one unit ({request_id}); {n} left"),
        -1 => println!("sold out"),
        -2 => println!("{user_id} reached the per-user limit"),
        -3 => println!("no such item: initialise it and retry"),
        -4 => println!("{request_id} was refunded"),
        other => println!("unexpected reply {other}"),
    }
    Ok(())
}
