//! An item's records as `SECKILL.SCAN` lists them, a bounded page a call,
//! and one request's as `SECKILL.STATUS` reports it.

use super::ledger::{BadCursor, Cursor, RequestState, RequestView, Scanned};
use super::{Moment, SaleItem};
use std::ffi::CStr;

/// Where a request stands, as a scan reports it at a moment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// Bought without a hold.
    Purchased,
    /// A pending hold.
    Held,
    /// A hold that was confirmed.
    Confirmed,
    Refunded,
    /// A hold whose deadline passed unconfirmed, released or not yet.
    Lapsed,
}

impl Status {
    /// The name replies use, as the order stream's event kinds do.
    pub fn name(self) -> &'static str {
        self.c_name().to_str().unwrap_or_default()
    }

    /// The name, as the C string a simple-string reply takes.
    pub fn c_name(self) -> &'static CStr {
        match self {
            Status::Purchased => c"purchased",
            Status::Held => c"held",
            Status::Confirmed => c"confirmed",
            Status::Refunded => c"refunded",
            Status::Lapsed => c"lapsed",
        }
    }
}

/// One record of a scan.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScanRecord<'a> {
    /// A buyer and the units it holds, as `BOUGHT` reports them.
    Buyer { user: &'a [u8], units: i64 },
    /// A purchase made under a request id; `deadline` is a hold's (Unix
    /// ms), 0 for a purchase made without one.
    Request {
        id: &'a [u8],
        user: &'a [u8],
        qty: i64,
        status: Status,
        deadline: i64,
    },
}

impl Status {
    /// Where `request` stands at `moment`: a hold due by then is lapsed,
    /// as reads report it, released by the sweep or not yet.
    fn of(request: &RequestView, moment: Moment) -> Status {
        match request.state {
            RequestState::Purchased if request.deadline == 0 => Status::Purchased,
            RequestState::Purchased => Status::Confirmed,
            RequestState::Refunded => Status::Refunded,
            RequestState::Expired => Status::Lapsed,
            RequestState::Held if moment.has_passed(request.deadline) => Status::Lapsed,
            RequestState::Held => Status::Held,
        }
    }
}

/// One request as `SECKILL.STATUS` reports it: who bought how many, where
/// the purchase stands, and a hold's deadline (Unix ms; 0 for a purchase
/// made without a hold).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RequestReport<'a> {
    pub user: &'a [u8],
    pub qty: i64,
    pub status: Status,
    pub deadline: i64,
}

impl SaleItem {
    /// The request `request_id` judged at `now`, if this item has it.
    pub fn request_report(&self, request_id: &[u8], now: i64) -> Option<RequestReport<'_>> {
        let request = self.request(request_id)?;
        Some(RequestReport {
            user: request.user,
            qty: request.qty,
            status: Status::of(&request, Moment::Now(now)),
            deadline: request.deadline,
        })
    }

    /// Where `request_id` stands at `moment`, the moment a write is judged
    /// at; None if this item never saw it.
    pub fn request_status(&self, request_id: &[u8], moment: Moment) -> Option<Status> {
        Some(Status::of(&self.request(request_id)?, moment))
    }

    /// The deadline of `request_id`'s hold if it is pending at `moment`.
    pub fn pending_deadline(&self, request_id: &[u8], moment: Moment) -> Option<i64> {
        let request = self.request(request_id)?;
        (Status::of(&request, moment) == Status::Held).then_some(request.deadline)
    }

    /// Up to `count` records from `cursor` on, judged at `now` (a hold due
    /// by then is lapsed, as reads report it), and the cursor of the next
    /// call: 0 when the scan is over. A cursor this item did not give is
    /// refused.
    pub fn scan(
        &self,
        cursor: Cursor,
        count: usize,
        now: i64,
    ) -> Result<(Vec<ScanRecord<'_>>, Cursor), BadCursor> {
        let (found, next) = self.ledger.scan(cursor, count)?;
        let moment = Moment::Now(now);
        let records = found
            .into_iter()
            .map(|record| match record {
                Scanned::Buyer(handle) => {
                    let (_, lapsed) = self.lapsing(moment, Some(handle));
                    ScanRecord::Buyer {
                        user: self.ledger.name(handle),
                        units: self
                            .ledger
                            .buyer_units(handle)
                            .saturating_sub(lapsed)
                            .max(0),
                    }
                }
                Scanned::Request(handle) => {
                    let request = self.ledger.request(handle);
                    ScanRecord::Request {
                        id: self.ledger.request_id(handle),
                        user: request.user,
                        qty: request.qty,
                        status: Status::of(&request, moment),
                        deadline: request.deadline,
                    }
                }
            })
            .collect();
        Ok((records, next))
    }
}
