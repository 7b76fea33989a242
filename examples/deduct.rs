//! Deducts one unit for a user, the way an app server would, with the
//! typed commands of the `seckill-client` crate.
//!
//! ```sh
//! make run &                                  # a server with the module
//! cargo run --example deduct -- alice order-1
//! ```
//! `REDIS_URL` selects another server (default `redis://127.0.0.1:6379/`).

use seckill_client::{Deduct, Init, Outcome, SeckillCommands};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let user_id = args.next().unwrap_or_else(|| "alice".to_owned());
    let request_id = args.next().unwrap_or_else(|| "order-1".to_owned());
    let url = std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379/".to_owned());
    let mut con = redis::Client::open(url)?.get_connection()?;

    // Many app servers may run this at once: the first creates the item.
    con.seckill_init(&Init::new("sku:1001", 10).limit(1))?;

    let purchase = Deduct::new("sku:1001", user_id.as_str(), 1).request_id(request_id.as_str());
    let result = con.seckill_deduct(&purchase)?;
    match result.outcome {
        Outcome::Bought => println!(
            "{user_id} bought one unit ({request_id}); {} left",
            result.stock.unwrap_or(0)
        ),
        Outcome::SoldOut => println!("sold out"),
        Outcome::LimitReached => println!("{user_id} reached the per-user limit"),
        Outcome::NoItem => println!("no such item: initialise it and retry"),
        Outcome::Cancelled => println!("{request_id} was refunded"),
        Outcome::NotStarted | Outcome::Ended => println!("the sale is not open"),
    }
    Ok(())
}
