//! A purchase made under a request id: where it stands, and the forms its
//! record takes on the way in and out of the ledger.

/// Where a purchase made under a request id stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum RequestState {
    /// Bought for good: without a hold, or a hold that was confirmed.
    Purchased,
    Refunded,
    /// A reservation awaiting CONFIRM until its deadline.
    Held,
    /// A reservation whose deadline passed unconfirmed.
    Expired,
}

impl RequestState {
    pub fn code(self) -> u8 {
        match self {
            RequestState::Purchased => 0,
            RequestState::Refunded => 1,
            RequestState::Held => 2,
            RequestState::Expired => 3,
        }
    }

    pub fn from_code(code: u8) -> Option<RequestState> {
        Some(match code {
            0 => RequestState::Purchased,
            1 => RequestState::Refunded,
            2 => RequestState::Held,
            3 => RequestState::Expired,
            _ => return None,
        })
    }
}

/// A purchase recorded under a request id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct RequestView<'a> {
    pub user: &'a [u8],
    pub qty: i64,
    /// The remaining stock the purchase replied with.
    pub reply: i64,
    pub state: RequestState,
    /// Unix ms a hold lapses at; 0 for a purchase made without a hold.
    pub deadline: i64,
}

/// A request record as the ledger stores it: its user by the handle of
/// the name (see [`Buyer::handle`]).
#[derive(Clone, Copy, Debug)]
pub struct RequestRecord {
    pub buyer: u32,
    pub qty: i64,
    pub reply: i64,
    pub state: RequestState,
    pub deadline: i64,
}

/// What `add_request` stores besides the id and the buyer.
#[derive(Clone, Copy, Debug)]
pub struct NewRequest {
    pub qty: i64,
    pub reply: i64,
    pub state: RequestState,
    pub deadline: i64,
}
