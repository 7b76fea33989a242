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
use seckill_client::{
    AsyncSeckillCommands, Confirm, ConfirmOutcome, Deduct, ErrorKind, Init, Outcome, RequestStatus,
};
use serde::Deserialize;
use serde_json::{json, Value};

/// How long a buyer has to pay before the unit goes back on sale.
pub const HOLD_SECONDS: i64 = 900;

/// A status and a JSON body; an error is a reply too (a 503).
type Reply = (StatusCode, Json<Value>);

/// What every request is served with: the connection, and the replicas
/// that must have a payment before it is "paid" (0: the master's word).
#[derive(Clone)]
pub struct Shop {
    pub con: MultiplexedConnection,
    pub wait_replicas: i64,
}

/// An error body for `order`.
fn error(status: StatusCode, order: &str, error: &str) -> Reply {
    (status, Json(json!({ "order": order, "error": error })))
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

/// A Redis error the service cannot act on: a 503, the client may retry.
fn unavailable(err: seckill_client::Error) -> Reply {
    let status = StatusCode::SERVICE_UNAVAILABLE;
    (status, Json(json!({ "error": err.to_string() })))
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
struct OfItem {
    item: String,
}

async fn open_sale(
    State(Shop { mut con, .. }): State<Shop>,
    Path(item): Path<String>,
    Query(sale): Query<Sale>,
) -> Result<Reply, Reply> {
    let init = Init::new(item.as_str(), sale.stock).limit(sale.limit.unwrap_or(1));
    let created = con.seckill_init(&init).await.map_err(unavailable)?;
    let status = if created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((status, Json(json!({ "item": item, "created": created }))))
}

async fn stock(
    State(Shop { mut con, .. }): State<Shop>,
    Path(item): Path<String>,
) -> Result<Reply, Reply> {
    Ok(match con.seckill_get(&item).await.map_err(unavailable)? {
        Some(left) => (StatusCode::OK, Json(json!({ "item": item, "stock": left }))),
        None => (
            StatusCode::NOT_FOUND,
            Json(json!({ "error": "no such sale" })),
        ),
    })
}

async fn buy(
    State(Shop { mut con, .. }): State<Shop>,
    Path(order): Path<String>,
    Query(purchase): Query<Purchase>,
) -> Result<Reply, Reply> {
    let deduct = Deduct::new(purchase.item, purchase.user, 1)
        .request_id(order.as_str())
        .hold(HOLD_SECONDS);
    let result = match con.seckill_deduct(&deduct).await {
        Ok(result) => result,
        Err(err) if err.kind() == Some(ErrorKind::RequestIdConflict) => {
            let error = "order id already used for another purchase";
            let body = json!({ "order": order, "error": error });
            return Ok((StatusCode::CONFLICT, Json(body)));
        }
        Err(err) => return Err(unavailable(err)),
    };
    if result.outcome == Outcome::Bought {
        let body = json!({
            "order": order,
            "status": "held",
            "pay_within_s": HOLD_SECONDS,
            "stock": result.stock,
        });
        return Ok((StatusCode::CREATED, Json(body)));
    }
    let (status, error) = refused(result.outcome);
    Ok((status, Json(json!({ "order": order, "error": error }))))
}

async fn order_state(
    State(Shop { mut con, .. }): State<Shop>,
    Path(order): Path<String>,
    Query(of): Query<OfItem>,
) -> Result<Reply, Reply> {
    let state = con.seckill_status(&of.item, &order).await;
    Ok(match state.map_err(unavailable)? {
        None => error(StatusCode::NOT_FOUND, &order, "no such sale"),
        Some(state) if state.status == RequestStatus::Unknown => {
            error(StatusCode::NOT_FOUND, &order, "no such order")
        }
        Some(state) => {
            let mut body = json!({
                "order": order,
                "status": state.status.name(),
                "user": state.user,
                "qty": state.qty,
            });
            if state.status == RequestStatus::Held {
                body["pay_by_ms"] = state.deadline.into();
            }
            (StatusCode::OK, Json(body))
        }
    })
}

async fn pay(
    State(Shop {
        mut con,
        wait_replicas,
    }): State<Shop>,
    Path(order): Path<String>,
    Query(of): Query<OfItem>,
) -> Result<Reply, Reply> {
    let confirm = Confirm::new(of.item.as_str(), order.as_str()).wait_replicas(wait_replicas, 1000);
    let done = con.seckill_durably(&confirm).await.map_err(unavailable)?;
    match done.result {
        ConfirmOutcome::Confirmed | ConfirmOutcome::AlreadyFinal if !done.durable() => {
            // On the master alone: a failover could lose it.
            let text = "payment not on enough replicas yet, send it again";
            return Ok(error(StatusCode::SERVICE_UNAVAILABLE, &order, text));
        }
        ConfirmOutcome::Confirmed | ConfirmOutcome::AlreadyFinal => {
            return Ok((
                StatusCode::OK,
                Json(json!({ "order": order, "status": "paid" })),
            ));
        }
        ConfirmOutcome::NoItem => return Ok(error(StatusCode::NOT_FOUND, &order, "no such sale")),
        ConfirmOutcome::Cancelled => {}
    }
    // Expired, cancelled or never placed: take no money (or give it back),
    // and say which.
    let state = con.seckill_status(&of.item, &order).await;
    Ok(
        match state.map_err(unavailable)?.map(|state| state.status) {
            None | Some(RequestStatus::Unknown) => {
                error(StatusCode::NOT_FOUND, &order, "no such order")
            }
            Some(RequestStatus::Lapsed) => error(StatusCode::GONE, &order, "order expired"),
            Some(_) => error(StatusCode::GONE, &order, "order cancelled"),
        },
    )
}

async fn cancel(
    State(Shop { mut con, .. }): State<Shop>,
    Path(order): Path<String>,
    Query(of): Query<OfItem>,
) -> Result<Reply, Reply> {
    Ok(
        match con
            .seckill_refund(&of.item, &order)
            .await
            .map_err(unavailable)?
        {
            None => {
                let body = json!({ "order": order, "error": "no such sale" });
                (StatusCode::NOT_FOUND, Json(body))
            }
            // 0: unknown, or cancelled before; the unit went back once either way.
            Some(units) => {
                let body =
                    json!({ "order": order, "status": "cancelled", "units_returned": units });
                (StatusCode::OK, Json(body))
            }
        },
    )
}

/// The service's routes over one multiplexed connection, shared by every
/// request.
pub fn shop(shop: Shop) -> Router {
    Router::new()
        .route("/items/{item}", post(open_sale).get(stock))
        .route("/orders/{order}", post(buy).get(order_state))
        .route("/orders/{order}/pay", post(pay))
        .route("/orders/{order}/cancel", post(cancel))
        .with_state(shop)
}
