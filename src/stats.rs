//! Module-wide counters since the server started, shown by `INFO seckill`.
//!
//! Every counter is written on the main thread only (commands, the
//! sweep's timer), so a bump is a plain load and store: no locked
//! instruction on a purchase's hot path. INFO reads them on the same
//! thread.

use crate::sale_item::Counted;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

pub struct Counter(AtomicU64);

impl Counter {
    pub const fn new() -> Counter {
        Counter(AtomicU64::new(0))
    }

    pub fn add(&self, amount: u64) {
        self.0
            .store(self.0.load(Relaxed).wrapping_add(amount), Relaxed);
    }

    pub fn bump(&self) {
        self.add(1);
    }

    /// Keeps the larger of the current value and `value`.
    pub fn raise_to(&self, value: u64) {
        if value > self.get() {
            self.0.store(value, Relaxed);
        }
    }

    pub fn get(&self) -> u64 {
        self.0.load(Relaxed)
    }
}

/// Every command, by the id that is its place in the command table (see
/// `COMMANDS` in lib.rs, checked at compile time) and its call counter.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum CommandId {
    Init,
    Add,
    Deduct,
    Confirm,
    Release,
    Refund,
    Window,
    Stream,
    Get,
    Bought,
    Holds,
    Info,
    Take,
    Settle,
    Transfers,
    Scan,
    Import,
    LoadChunk,
    Status,
    Mdeduct,
    Mconfirm,
    Mrefund,
    Variants,
}

pub const COMMANDS: usize = CommandId::Variants as usize + 1;

/// Calls of each command, by its `CommandId`.
pub static CALLS: [Counter; COMMANDS] = [const { Counter::new() }; COMMANDS];

pub static UNITS_SOLD: Counter = Counter::new();
pub static UNITS_REFUNDED: Counter = Counter::new();
pub static UNITS_ADDED: Counter = Counter::new();
/// Units moved to and from other parts of split items.
pub static UNITS_MOVED_OUT: Counter = Counter::new();
pub static UNITS_MOVED_IN: Counter = Counter::new();

// DEDUCT calls that sold nothing, by the reason in their reply.
pub static REFUSED_SOLD_OUT: Counter = Counter::new();
pub static REFUSED_LIMIT: Counter = Counter::new();
pub static REFUSED_NO_ITEM: Counter = Counter::new();
pub static REFUSED_CANCELLED: Counter = Counter::new();
pub static REFUSED_NOT_STARTED: Counter = Counter::new();
pub static REFUSED_ENDED: Counter = Counter::new();

pub static HOLDS_PLACED: Counter = Counter::new();
pub static HOLDS_CONFIRMED: Counter = Counter::new();
/// Released by their deadline or by `RELEASE`; refunded holds are not.
pub static HOLDS_LAPSED: Counter = Counter::new();

/// Timer steps that released holds, and the longest of them.
pub static SWEEP_RUNS: Counter = Counter::new();
pub static SWEEP_LONGEST_STEP_US: Counter = Counter::new();

pub static ORDER_EVENTS: Counter = Counter::new();

/// Counts a DEDUCT reply: a refusal by its reason. (Sold units are counted
/// where the sale is applied, so that a replayed reply counts nothing.)
pub fn count_deduct_reply(reply: i64) {
    let refusal = match reply {
        -1 => &REFUSED_SOLD_OUT,
        -2 => &REFUSED_LIMIT,
        -3 => &REFUSED_NO_ITEM,
        -4 => &REFUSED_CANCELLED,
        -5 => &REFUSED_NOT_STARTED,
        -6 => &REFUSED_ENDED,
        _ => return,
    };
    refusal.bump();
}

/// One `INFO` field: its name (Redis prefixes it with `seckill_`) and value.
pub type Field = (String, u64);

/// The counters after the commands' calls, in the order INFO shows them.
static NAMED: [(&str, &Counter); 17] = [
    ("units_sold", &UNITS_SOLD),
    ("units_refunded", &UNITS_REFUNDED),
    ("units_added", &UNITS_ADDED),
    ("units_moved_out", &UNITS_MOVED_OUT),
    ("units_moved_in", &UNITS_MOVED_IN),
    ("refused_sold_out", &REFUSED_SOLD_OUT),
    ("refused_limit", &REFUSED_LIMIT),
    ("refused_no_item", &REFUSED_NO_ITEM),
    ("refused_cancelled", &REFUSED_CANCELLED),
    ("refused_not_started", &REFUSED_NOT_STARTED),
    ("refused_ended", &REFUSED_ENDED),
    ("holds_placed", &HOLDS_PLACED),
    ("holds_confirmed", &HOLDS_CONFIRMED),
    ("holds_lapsed", &HOLDS_LAPSED),
    ("sweep_runs", &SWEEP_RUNS),
    ("sweep_longest_step_us", &SWEEP_LONGEST_STEP_US),
    ("order_events_appended", &ORDER_EVENTS),
];

/// The fields of `INFO seckill`, in the order shown. `commands` are the
/// command names in table order, `items_with_holds` the sweep's registry
/// (left out when it could not be read).
pub fn fields(commands: &[&str], items_with_holds: Option<usize>) -> Vec<Field> {
    let mut fields: Vec<Field> = commands
        .iter()
        .zip(&CALLS)
        .map(|(name, calls)| (format!("{name}_calls"), calls.get()))
        .collect();
    fields.extend(
        NAMED
            .iter()
            .map(|(name, counter)| (name.to_string(), counter.get())),
    );
    if let Some(items) = items_with_holds {
        fields.push(("items_with_pending_holds".into(), items as u64));
    }
    fields
}

/// Counts an applied change: `figure` is what applying it returned,
/// `lapsed` the holds settled before it.
pub fn count_change(counted: Counted, figure: i64, lapsed: usize) {
    let units = |qty: i64| u64::try_from(qty).unwrap_or(0);
    match counted {
        Counted::Sold { qty, hold } => {
            UNITS_SOLD.add(units(qty));
            if hold {
                HOLDS_PLACED.bump();
            }
        }
        Counted::Confirmed => HOLDS_CONFIRMED.bump(),
        Counted::Refunded(qty) => UNITS_REFUNDED.add(units(qty)),
        Counted::Released => HOLDS_LAPSED.add(units(figure)),
        Counted::Added(qty) => UNITS_ADDED.add(units(qty)),
        Counted::MovedOut => UNITS_MOVED_OUT.add(units(figure)),
        Counted::MovedIn(qty) => UNITS_MOVED_IN.add(units(qty)),
        Counted::Other => {}
    }
    HOLDS_LAPSED.add(lapsed as u64);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_name_every_command_then_every_counter_in_a_fixed_order() {
        let owned: Vec<String> = (0..COMMANDS).map(|place| format!("c{place}")).collect();
        let names: Vec<&str> = owned.iter().map(String::as_str).collect();
        let fields = fields(&names, Some(7));
        assert_eq!(fields.len(), COMMANDS + NAMED.len() + 1);
        assert_eq!(fields[0].0, "c0_calls");
        assert_eq!(fields[COMMANDS - 1].0, format!("c{}_calls", COMMANDS - 1));
        assert_eq!(fields[COMMANDS].0, "units_sold");
        assert_eq!(
            fields.last().unwrap(),
            &("items_with_pending_holds".to_owned(), 7)
        );
        // Left out, not shown as 0, when the registry could not be read.
        assert_eq!(super::fields(&names, None).len(), COMMANDS + NAMED.len());
    }

    fn refusals() -> [u64; 6] {
        [
            &REFUSED_SOLD_OUT,
            &REFUSED_LIMIT,
            &REFUSED_NO_ITEM,
            &REFUSED_CANCELLED,
            &REFUSED_NOT_STARTED,
            &REFUSED_ENDED,
        ]
        .map(Counter::get)
    }

    #[test]
    fn a_deduct_reply_counts_as_the_refusal_it_names_and_a_sale_as_none() {
        let before = refusals();
        for reply in [-1, -2, -3, -4, -5, -6, 0, 17, -7] {
            count_deduct_reply(reply);
        }
        assert_eq!(refusals(), before.map(|count| count + 1));
    }

    #[test]
    fn raise_to_keeps_the_largest_value_seen() {
        let counter = Counter::new();
        counter.raise_to(5);
        counter.raise_to(3);
        assert_eq!(counter.get(), 5);
        counter.add(2);
        counter.bump();
        assert_eq!(counter.get(), 8);
    }
}
