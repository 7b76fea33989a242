//! A cart whose items live on different shards of a cluster.
//!
//! `SECKILL.MDEDUCT` takes an order whole only when its items share a hash
//! tag, so that one server holds them all. A cart of items on different
//! shards is taken line by line instead, as a saga built on holds: every
//! line is a `SECKILL.DEDUCT key user qty ID cart_id HOLD seconds`, under
//! the cart id as the request id of every line, and a cart that cannot be
//! taken whole is given back with `SECKILL.REFUND key cart_id` on every
//! line.
//!
//! Every step is idempotent under the cart id, which is what makes a
//! retry, or a resume after the process died at any point, safe: it is the
//! same call with the same arguments.
//!
//! - A line held before replays its reply, and holds nothing more.
//! - A line given back before replays `Cancelled` (`REFUND` keeps the id
//!   in the item's ledger, refunded), so it is never taken again: the
//!   cart was refused before, and `place` gives back its other lines and
//!   says so.
//! - A `REFUND` of a line given back, or never taken, changes nothing.
//!
//! So a process that stops between any two steps, followed by the same call
//! again, leaves every line held under the cart id, or none. A process
//! that stops for good leaves its held lines to their deadline: the module
//! releases a hold that lapses, so no unit stays taken for a cart nobody
//! finishes.
//!
//! Calls for one cart are meant to be made one at a time (a retry after
//! the previous call returned or died), not concurrently: a `cancel`
//! racing a `place` could give back the lines before the `place` holds
//! its last ones, which then wait for their deadline.
//!
//! ```no_run
//! use seckill_client::cart::{self, Payment, Placement};
//!
//! let client = redis::cluster::ClusterClient::new(vec!["redis://127.0.0.1:7000/"])?;
//! let mut con = client.get_connection()?;
//! let lines = [("sku:phone", 1), ("sku:case", 1), ("sku:charger", 2)];
//! match cart::place(&mut con, "cart:42", "user:7", &lines, 900)? {
//!     Placement::Placed { deadline, .. } => println!("held; pay by {deadline:?} (Unix ms)"),
//!     Placement::Refused { line, outcome, .. } => {
//!         println!("{} refused the cart: {}", lines[line].0, outcome.name())
//!     }
//! }
//! // Once the payment went through:
//! let keys = lines.map(|(key, _)| key);
//! match cart::confirm(&mut con, "cart:42", &keys)? {
//!     Payment::Paid { .. } => println!("paid"),
//!     Payment::NotPaid { line, outcome, .. } => {
//!         println!("{} could not be confirmed ({}): refund the payment", keys[line], outcome.name())
//!     }
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use crate::command::Deduct;
use crate::reply::{ConfirmOutcome, DeductResult, Outcome, RefundResult};
use crate::{Result, SeckillCommands};

/// What `place` did with the cart.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Placement {
    /// Every line is held under the cart id.
    Placed {
        /// Each line's `DEDUCT` reply, in line order (a replay for a line
        /// held by an earlier call).
        lines: Vec<DeductResult>,
        /// The earliest of the lines' deadlines, Unix ms: the time to pay
        /// by. `None` if every line was confirmed since.
        deadline: Option<i64>,
    },
    /// No line is held: the cart was given back.
    Refused {
        /// The index of the first line that refused, in this call.
        line: usize,
        /// Why it refused. `Cancelled` is a line given back before: this
        /// cart was refused (or cancelled, or a hold of it lapsed) by an
        /// earlier call.
        outcome: Outcome,
        /// The `REFUND` of every line, in line order.
        given_back: Vec<RefundResult>,
    },
}

/// What `confirm` did with the cart.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Payment {
    /// Every line is a final purchase (`Confirmed` now, or `AlreadyFinal`).
    Paid { lines: Vec<ConfirmOutcome> },
    /// A line could not be confirmed, and every line was given back: the
    /// application refunds the payment.
    NotPaid {
        /// The index of the first line that could not be confirmed.
        line: usize,
        /// Why: `Lapsed` (too late), `Refunded`, `UnknownRequest` (never
        /// placed) or `NoItem`.
        outcome: ConfirmOutcome,
        /// The `REFUND` of every line, in key order.
        given_back: Vec<RefundResult>,
    },
}

/// One line of a cart: `(key, qty)`, or `(key, qty, Some(variant))` for a
/// variant of an item made with `Init::with_variants` (a size of a drop;
/// `(key, qty, None)` beside it for an item without variants),
/// held as `Deduct::variant` holds it. Confirming and giving back need no
/// variant: the item finds it by the cart id.
pub trait CartLine {
    fn key(&self) -> &[u8];
    fn qty(&self) -> i64;
    fn variant(&self) -> Option<&[u8]> {
        None
    }
}

impl<K: AsRef<[u8]>> CartLine for (K, i64) {
    fn key(&self) -> &[u8] {
        self.0.as_ref()
    }
    fn qty(&self) -> i64 {
        self.1
    }
}

impl<K: AsRef<[u8]>, V: AsRef<[u8]>> CartLine for (K, i64, Option<V>) {
    fn key(&self) -> &[u8] {
        self.0.as_ref()
    }
    fn qty(&self) -> i64 {
        self.1
    }
    fn variant(&self) -> Option<&[u8]> {
        self.2.as_ref().map(AsRef::as_ref)
    }
}

/// Holds every line of the cart for `hold_seconds` under `cart_id`, in line
/// order, or none: at the first line that refuses, every line is given
/// back (`cancel`). The same call again, after a failure or a crash at any
/// point, finishes the same way.
///
/// An error (a connection lost, a request id conflict) stops the call where
/// it was, with some lines held perhaps: make the same call again (or
/// `cancel`).
pub fn place<C, L>(
    con: &mut C,
    cart_id: &str,
    user: &str,
    lines: &[L],
    hold_seconds: i64,
) -> Result<Placement>
where
    C: SeckillCommands,
    L: CartLine,
{
    let mut held = Vec::with_capacity(lines.len());
    for (index, line) in lines.iter().enumerate() {
        let mut hold = Deduct::new(line.key(), user, line.qty())
            .request_id(cart_id)
            .hold(hold_seconds);
        if let Some(variant) = line.variant() {
            hold = hold.variant(variant);
        }
        let result = con.seckill_deduct(&hold)?;
        if !result.bought() {
            let keys: Vec<&[u8]> = lines.iter().map(CartLine::key).collect();
            return Ok(Placement::Refused {
                line: index,
                outcome: result.outcome,
                given_back: cancel(con, cart_id, &keys)?,
            });
        }
        held.push(result);
    }
    let deadline = held.iter().filter_map(|result| result.deadline).min();
    Ok(Placement::Placed {
        lines: held,
        deadline,
    })
}

/// Confirms every line of the cart under `cart_id`, in key order. If a line
/// cannot be (its hold lapsed, it was refunded, or never placed), every
/// line is given back (`cancel`), so that no unit stays taken for a cart
/// that cannot be paid, and the answer says which line failed. The same
/// call again, after a failure or a crash at any point, finishes the same
/// way (a line confirmed before answers `AlreadyFinal`).
pub fn confirm<C, K>(con: &mut C, cart_id: &str, keys: &[K]) -> Result<Payment>
where
    C: SeckillCommands,
    K: AsRef<[u8]>,
{
    let mut confirmed = Vec::with_capacity(keys.len());
    for (index, key) in keys.iter().enumerate() {
        let outcome = con.seckill_confirm(key.as_ref(), cart_id)?;
        if !matches!(
            outcome,
            ConfirmOutcome::Confirmed | ConfirmOutcome::AlreadyFinal
        ) {
            return Ok(Payment::NotPaid {
                line: index,
                outcome,
                given_back: cancel(con, cart_id, keys)?,
            });
        }
        confirmed.push(outcome);
    }
    Ok(Payment::Paid { lines: confirmed })
}

/// Gives back every line of the cart under `cart_id` (`REFUND`, in key
/// order): held, confirmed or not. A line given back before answers
/// `AlreadyRefunded`, a lapsed one `Lapsed`, one never taken
/// `UnknownRequest`. A line taken and given back can never be taken again
/// under the cart id.
pub fn cancel<C, K>(con: &mut C, cart_id: &str, keys: &[K]) -> Result<Vec<RefundResult>>
where
    C: SeckillCommands,
    K: AsRef<[u8]>,
{
    keys.iter()
        .map(|key| con.seckill_refund(key.as_ref(), cart_id))
        .collect()
}
