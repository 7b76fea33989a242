//! An item's records as `SECKILL.SCAN` lists them, a bounded page a call.

use super::ledger::{BadCursor, Cursor, RequestState, Scanned};
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

impl SaleItem {
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
                    let status = match request.state {
                        RequestState::Purchased if request.deadline == 0 => Status::Purchased,
                        RequestState::Purchased => Status::Confirmed,
                        RequestState::Refunded => Status::Refunded,
                        RequestState::Expired => Status::Lapsed,
                        RequestState::Held if moment.has_passed(request.deadline) => Status::Lapsed,
                        RequestState::Held => Status::Held,
                    };
                    ScanRecord::Request {
                        id: self.ledger.request_id(handle),
                        user: request.user,
                        qty: request.qty,
                        status,
                        deadline: request.deadline,
                    }
                }
            })
            .collect();
        Ok((records, next))
    }
}
