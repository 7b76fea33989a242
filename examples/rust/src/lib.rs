//! A flash-sale HTTP service over seckill's Rust client (axum, tokio).
//!
//! ```text
//! SHOP_REDIS_URL=redis://127.0.0.1:6379 cargo run -p seckill-shop     (listens on SHOP_PORT, 3000)
//!
//! POST /items/{item}?stock=N&limit=L    open a sale (again: left as it is)
//! POST /orders/{order}?item=I&user=U    buy one unit, held until paid (the client picks the order id)
//! POST /orders/{order}/pay?item=I       the payment arrived: the hold becomes a sale
//! POST /orders/{order}/cancel?item=I    give the unit back (held or paid)
//! GET  /orders/{order}?item=I           where the order stands (held: pay by when)
//! GET  /items/{item}                    the stock left
//! ```
//!
//! Every outcome has its HTTP status; a retried request (same order id)
//! gets the first answer and never sells twice. With `SHOP_WAIT_REPLICAS=N`
//! a payment is "paid" only once N replicas have it (else 503: the payment
//! provider sends the webhook again, and confirming again is safe).

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::routing::post;
use axum::{Json, Router};
use redis::aio::MultiplexedConnection;
use seckill_client::{AsyncSeckillCommands as _, Confirm, ConfirmOutcome, Deduct, ErrorKind};
use seckill_client::{Init, Outcome, RefundOutcome, RequestStatus};
use serde::Deserialize;
use serde_json::{json, Value};

/// How long a buyer has to pay before the unit goes back on sale.
pub const HOLD_SECONDS: i64 = 900;
/// How long a payment waits for the replicas asked for.
const WAIT_MS: i64 = 1000;

/// A connection for the service: it waits for a reply longer than a
/// payment waits for replicas (redis-rs's default is 500 ms), or the
/// client would give up on a payment the server still confirms.
pub async fn connect(url: &str) -> redis::RedisResult<MultiplexedConnection> {
    let config = redis::AsyncConnectionConfig::new().set_response_timeout(Some(std::time::Duration::from_secs(2)));
    redis::Client::open(url)?
        .get_multiplexed_async_connection_with_config(&config)
        .await
}

/// A status and a JSON body, for an error (a 503 if Redis failed) too.
type Reply = Result<(StatusCode, Json<Value>), (StatusCode, Json<Value>)>;

/// The connection every request shares, and the replicas that must have a
/// payment before it is "paid" (0: the master's word is enough).
#[derive(Clone)]
pub struct Shop {
    pub con: MultiplexedConnection,
    pub wait_replicas: i64,
}

fn reply(status: StatusCode, body: Value) -> Reply {
    Ok((status, Json(body)))
}

fn error(status: StatusCode, order: &str, error: &str) -> Reply {
    reply(status, json!({ "order": order, "error": error }))
}

/// A Redis error the service cannot act on: a 503, the client may retry.
fn unavailable(err: seckill_client::Error) -> (StatusCode, Json<Value>) {
    let status = StatusCode::SERVICE_UNAVAILABLE;
    (status, Json(json!({ "error": err.to_string() })))
}

/// What a refused purchase tells the buyer.
fn refused(outcome: Outcome) -> (StatusCode, &'static str) {
    match outcome {
        Outcome::SoldOut => (StatusCode::CONFLICT, "sold out"),
        Outcome::LimitReached => (StatusCode::CONFLICT, "limit reached"),
        Outcome::NoItem => (StatusCode::NOT_FOUND, "no such sale"),
        Outcome::NotStarted => (StatusCode::FORBIDDEN, "the sale has not started"),
        Outcome::Ended => (StatusCode::GONE, "the sale has ended"),
        _ => (StatusCode::GONE, "order cancelled or expired"),
    }
}

#[derive(Deserialize)]
struct Sale {
    stock: i64,
    limit: Option<i64>,
}

#[derive(Deserialize)]
struct Purchase {
    item: String,
    user: String,
}

#[derive(Deserialize)]
struct Of {
    item: String,
}

async fn open_sale(State(mut shop): State<Shop>, Path(item): Path<String>, Query(q): Query<Sale>) -> Reply {
    let init = Init::new(item.as_str(), q.stock).limit(q.limit.unwrap_or(1));
    let created = shop.con.seckill_init(&init).await.map_err(unavailable)?;
    let status = [StatusCode::OK, StatusCode::CREATED][usize::from(created)];
    reply(status, json!({ "item": item, "created": created }))
}

async fn stock(State(mut shop): State<Shop>, Path(item): Path<String>) -> Reply {
    match shop.con.seckill_get(&item).await.map_err(unavailable)? {
        Some(left) => reply(StatusCode::OK, json!({ "item": item, "stock": left })),
        None => reply(StatusCode::NOT_FOUND, json!({ "error": "no such sale" })),
    }
}

async fn buy(State(mut shop): State<Shop>, Path(order): Path<String>, Query(q): Query<Purchase>) -> Reply {
    let deduct = Deduct::new(q.item, q.user, 1)
        .request_id(order.as_str())
        .hold(HOLD_SECONDS);
    let result = match shop.con.seckill_deduct(&deduct).await {
        Ok(result) => result,
        Err(err) if err.kind() == Some(ErrorKind::RequestIdConflict) => {
            let error = "order id already used for another purchase";
            return reply(StatusCode::CONFLICT, json!({ "order": order, "error": error }));
        }
        Err(err) => return Err(unavailable(err)),
    };
    if result.outcome == Outcome::Bought {
        let body = json!({ "order": order, "status": "held", "pay_within_s": HOLD_SECONDS, "stock": result.stock });
        return reply(StatusCode::CREATED, body);
    }
    let (status, error) = refused(result.outcome);
    reply(status, json!({ "order": order, "error": error }))
}

async fn order_state(State(mut shop): State<Shop>, Path(order): Path<String>, Query(q): Query<Of>) -> Reply {
    let item = q.item;
    let state = match shop.con.seckill_status(&item, &order).await.map_err(unavailable)? {
        None => return error(StatusCode::NOT_FOUND, &order, "no such sale"),
        Some(state) if state.status == RequestStatus::Unknown => {
            return error(StatusCode::NOT_FOUND, &order, "no such order")
        }
        Some(state) => state,
    };
    let (status, user, qty) = (state.status.name(), state.user, state.qty);
    let mut body = json!({ "order": order, "status": status, "user": user, "qty": qty });
    if state.status == RequestStatus::Held {
        body["pay_by_ms"] = state.deadline.into();
    }
    reply(StatusCode::OK, body)
}

async fn pay(State(mut shop): State<Shop>, Path(order): Path<String>, Query(q): Query<Of>) -> Reply {
    let confirm = Confirm::new(q.item, order.as_str()).wait_replicas(shop.wait_replicas, WAIT_MS);
    let done = shop.con.seckill_durably(&confirm).await.map_err(unavailable)?;
    match done.result {
        ConfirmOutcome::Confirmed | ConfirmOutcome::AlreadyFinal if !done.durable() => {
            // On the master alone: a failover could lose it.
            let text = "payment not on enough replicas yet, send it again";
            error(StatusCode::SERVICE_UNAVAILABLE, &order, text)
        }
        ConfirmOutcome::Confirmed | ConfirmOutcome::AlreadyFinal => {
            reply(StatusCode::OK, json!({ "order": order, "status": "paid" }))
        }
        ConfirmOutcome::NoItem => error(StatusCode::NOT_FOUND, &order, "no such sale"),
        // Never placed, expired or cancelled: take no money (or give it back), and say which.
        ConfirmOutcome::UnknownRequest => error(StatusCode::NOT_FOUND, &order, "no such order"),
        ConfirmOutcome::Lapsed => error(StatusCode::GONE, &order, "order expired"),
        ConfirmOutcome::Refunded => error(StatusCode::GONE, &order, "order cancelled"),
        // Only a CONFIRM sent without DETAIL replies it, which the client never does.
        ConfirmOutcome::Cancelled => error(StatusCode::GONE, &order, "order cancelled or expired"),
    }
}

async fn cancel(State(mut shop): State<Shop>, Path(order): Path<String>, Query(q): Query<Of>) -> Reply {
    let refund = shop.con.seckill_refund(&q.item, &order).await.map_err(unavailable)?;
    match refund.outcome {
        RefundOutcome::NoItem => error(StatusCode::NOT_FOUND, &order, "no such sale"),
        RefundOutcome::UnknownRequest => error(StatusCode::NOT_FOUND, &order, "no such order"),
        // Cancelled before, or the hold lapsed: the unit went back once either way.
        RefundOutcome::Refunded | RefundOutcome::AlreadyRefunded | RefundOutcome::Lapsed | RefundOutcome::Nothing => {
            let units = refund.units.unwrap_or(0);
            let body = json!({ "order": order, "status": "cancelled", "units_returned": units });
            reply(StatusCode::OK, body)
        }
    }
}

/// The service's routes.
pub fn shop(shop: Shop) -> Router {
    Router::new()
        .route("/items/{item}", post(open_sale).get(stock))
        .route("/orders/{order}", post(buy).get(order_state))
        .route("/orders/{order}/pay", post(pay))
        .route("/orders/{order}/cancel", post(cancel))
        .with_state(shop)
}
