//! The order-stream events of a write, read from the item before it
//! changes: what `write` appends to the stream in the same step.

use super::change::{Change, HoldRef};
use super::{Moment, SaleItem, Stock};

/// One order-stream event a write produces, read from the item before it
/// changes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EventView<'s> {
    /// `purchase`, `hold`, `confirm`, `refund` or `expire`.
    pub kind: &'static str,
    pub user: &'s [u8],
    pub qty: i64,
    pub request_id: &'s [u8],
    /// The stock after the event, as reads report it.
    pub stock: i64,
    /// A hold's deadline (Unix ms), as `SECKILL.HOLDS` reports it; `None`
    /// for every other kind.
    pub until: Option<i64>,
    /// The variant of an item with variants the event is about.
    pub variant: Option<&'s [u8]>,
}

impl SaleItem {
    /// The events of releasing `settle` and then making `change`, judged
    /// at `moment` as the change was.
    pub fn events<'s>(
        &'s self,
        settle: &[HoldRef],
        change: &'s Change,
        moment: Moment,
    ) -> Vec<EventView<'s>> {
        let stock = self.virtual_stock(self.lapsing(moment, None).0);
        let variant = self.variant_label();
        let request_event = |kind, handle: u32, stock| {
            let request = self.ledger.request(handle);
            EventView {
                kind,
                user: request.user,
                qty: request.qty,
                request_id: self.ledger.request_id(handle),
                stock,
                until: None,
                variant,
            }
        };
        // Lapsed holds count as given back already: their release leaves
        // the stock reads report as it is.
        let mut events: Vec<EventView> = settle
            .iter()
            .map(|(_, handle)| request_event("expire", *handle, stock))
            .collect();
        match change {
            Change::Deduct(purchase) => events.push(EventView {
                kind: if purchase.order.hold_until.is_some() {
                    "hold"
                } else {
                    "purchase"
                },
                user: purchase.order.user,
                qty: purchase.order.qty,
                request_id: purchase.order.request_id.unwrap_or_default(),
                stock: purchase.remaining,
                // The deadline the hold is recorded with.
                until: purchase.order.hold_until.map(|deadline| deadline.max(0)),
                variant,
            }),
            Change::Confirm((_, handle)) => events.push(request_event("confirm", *handle, stock)),
            Change::Refund { handle, qty, .. } => {
                let after = match self.stock {
                    Stock::Limited(_) => stock.saturating_add(*qty),
                    Stock::Unlimited => stock,
                };
                events.push(request_event("refund", *handle, after));
            }
            Change::Release(holds) => {
                let mut after = stock;
                for (deadline, handle) in holds {
                    if !moment.has_passed(*deadline) {
                        if let (Stock::Limited(_), Some(qty)) =
                            (self.stock, self.ledger.holds.qty(&(*deadline, *handle)))
                        {
                            after = after.saturating_add(qty);
                        }
                    }
                    events.push(request_event("expire", *handle, after));
                }
            }
            Change::Nothing
            | Change::Add(_)
            | Change::Window(_)
            | Change::StreamSetting(_)
            | Change::Take { .. }
            | Change::TransferIn { .. }
            | Change::Settle(_)
            // Imported records were sales made, and told, before.
            | Change::Import(_) => {}
        }
        events
    }
}
