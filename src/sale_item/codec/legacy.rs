//! Record chunks that only older releases wrote: buyers ('B') and
//! requests ('R', 'Q') apart, before version 5 grouped them.

use super::reader::Reader;
use crate::sale_item::ledger::{Lookup, NewRequest, RequestState, READ_AHEAD};

use super::*;
use crate::sale_item::bookkeeping::Tally;
use crate::sale_item::SaleItem;

impl SaleItem {
    pub(super) fn load_buyers(
        &mut self,
        input: &mut Reader<'_>,
        count: usize,
        tally: &mut Tally,
    ) -> Result<(), DecodeError> {
        let mut records = Vec::with_capacity(count);
        for _ in 0..count {
            let user = input.id()?;
            let units = input.non_negative()?;
            records.push((self.ledger.hash_id(user), user, units));
        }
        for (number, (hash, user, units)) in records.iter().enumerate() {
            if let Some((ahead, ..)) = records.get(number + READ_AHEAD) {
                self.ledger.prefetch_buyer(*ahead);
            }
            self.check_buyer(*units)?;
            // A buyer holding nothing is one a request chunk named first.
            let mut buyer = match self.ledger.find_buyer_hashed(*hash, user) {
                Lookup::Found(buyer) if buyer.units > 0 => {
                    return Err(DecodeError("duplicate buyer"));
                }
                Lookup::Found(buyer) => buyer,
                Lookup::Missing(hash) => self
                    .ledger
                    .add_buyer(hash, user, *units)
                    .map_err(|_| DecodeError("item too large"))?,
            };
            self.tally_holder(tally, buyer.handle(), *units)?;
            if buyer.units != *units {
                self.ledger.set_units(&mut buyer, *units);
            }
        }
        Ok(())
    }

    pub(super) fn load_requests(
        &mut self,
        input: &mut Reader<'_>,
        count: usize,
        tag: u8,
        tally: &mut Tally,
    ) -> Result<(), DecodeError> {
        let mut records = Vec::with_capacity(count);
        for _ in 0..count {
            let id = input.id()?;
            let user = input.id()?;
            let qty = input.non_negative()?;
            let reply = input.non_negative()?;
            let (state, deadline) = if tag == REQUESTS_TAG {
                let state =
                    RequestState::from_code(input.u8()?).ok_or(DecodeError("bad request state"))?;
                (state, input.non_negative()?)
            } else {
                match input.u8()? {
                    0 => (RequestState::Purchased, 0),
                    1 => (RequestState::Refunded, 0),
                    _ => return Err(DecodeError("bad refunded flag")),
                }
            };
            let request = NewRequest {
                qty,
                reply,
                state,
                deadline,
            };
            let hashes = (self.ledger.hash_id(id), self.ledger.hash_id(user));
            records.push((hashes, id, user, request));
        }
        for (number, ((id_hash, user_hash), id, user, request)) in records.iter().enumerate() {
            // Two stages ahead: the index slots first, then the name the
            // buyer's slot points to, once that slot has arrived.
            if let Some(((id_ahead, user_ahead), ..)) = records.get(number + READ_AHEAD) {
                self.ledger.prefetch_request(*id_ahead);
                self.ledger.prefetch_buyer(*user_ahead);
            }
            if let Some(((_, user_ahead), ..)) = records.get(number + READ_AHEAD / 2) {
                self.ledger.prefetch_buyer_name(*user_ahead);
            }
            self.load_request(*id_hash, id, *user_hash, user, *request, tally)?;
        }
        Ok(())
    }
}
