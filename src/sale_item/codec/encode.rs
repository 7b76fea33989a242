//! Writing an item as chunks: the header, then record chunks.

use crate::sale_item::ledger::put_varint;
use crate::sale_item::transfer::Transfer;
use crate::sale_item::{SaleItem, Stock};

use super::*;

impl SaleItem {
    /// Calls `emit` with the header chunk, then with each record chunk.
    pub fn encode_chunks(&self, mut emit: impl FnMut(&[u8])) {
        if self.has_variants() {
            emit(&self.encode_variants_header());
            for variant in self.variants() {
                variant.item.encode_own_chunks(&mut emit);
            }
            return;
        }
        self.encode_own_chunks(&mut emit);
    }

    /// The chunks of an item that sells a stock of its own (one without
    /// variants, or a variant).
    fn encode_own_chunks(&self, emit: &mut dyn FnMut(&[u8])) {
        let mut out = Vec::with_capacity(128);
        out.push(HEADER_TAG);
        out.push(FORMAT_VERSION);
        out.push(u8::from(self.stock == Stock::Unlimited));
        let stock = match self.stock {
            Stock::Limited(units) => units,
            Stock::Unlimited => 0,
        };
        for field in [
            stock,
            self.limit,
            self.initial,
            self.added,
            self.sold,
            self.refunded,
            self.window().start,
            self.window().end,
            self.ledger.expired,
        ] {
            out.extend_from_slice(&field.to_le_bytes());
        }
        match self.order_stream() {
            Some(stream_setting) => {
                out.push(if stream_setting.confirmed {
                    CONFIRMED_STREAM
                } else {
                    UNCONFIRMED_STREAM
                });
                out.extend_from_slice(&(stream_setting.stream.len() as u32).to_le_bytes());
                out.extend_from_slice(&stream_setting.stream);
                out.extend_from_slice(&stream_setting.maxlen.to_le_bytes());
            }
            None => out.push(NO_STREAM),
        }
        self.encode_transfers(&mut out);
        out.extend_from_slice(&self.ledger.replicated_moment.to_le_bytes());
        out.extend_from_slice(&(self.ledger.holder_count() as u64).to_le_bytes());
        out.extend_from_slice(&(self.ledger.request_count() as u64).to_le_bytes());
        emit(&out);

        let (buyers, requests) = self.ledger.groups();
        let mut pending = requests.as_slice();
        let mut records = 0;
        let mut flush = |out: &mut Vec<u8>, records: &mut usize| {
            if *records > 0 {
                if let Some(count) = out.get_mut(1..5) {
                    count.copy_from_slice(&(*records as u32).to_le_bytes());
                }
                emit(out);
            }
            out.clear();
            out.push(GROUPS_TAG);
            out.extend_from_slice(&0u32.to_le_bytes());
            *records = 0;
        };
        flush(&mut out, &mut records);
        for (buyer, units) in buyers {
            // Requests whose buyer sorts before this one have none: skipped.
            while pending.first().is_some_and(|(owner, _)| *owner < buyer) {
                pending = pending.get(1..).unwrap_or(&[]);
            }
            let mine = pending.partition_point(|(owner, _)| *owner == buyer);
            let (mut own, rest) = pending.split_at(mine);
            pending = rest;
            if units == 0 && own.is_empty() {
                continue;
            }
            let mut group_units = units;
            loop {
                // A group starts where it and, if it has any, one request
                // fit: a buyer with neither units nor requests in a chunk
                // says nothing.
                if records + 1 + usize::from(!own.is_empty()) > RECORDS_PER_CHUNK {
                    flush(&mut out, &mut records);
                }
                let fitting = own.len().min(RECORDS_PER_CHUNK - records - 1);
                let (now, later) = own.split_at(fitting);
                put_id(&mut out, self.ledger.name(buyer));
                put_varint(&mut out, group_units as u64);
                put_varint(&mut out, now.len() as u64);
                for (_, handle) in now {
                    let request = self.ledger.request_record(*handle);
                    put_id(&mut out, self.ledger.request_id(*handle));
                    put_varint(&mut out, request.qty as u64);
                    put_varint(&mut out, request.reply as u64);
                    out.push(request.state.code());
                    put_varint(&mut out, request.deadline as u64);
                }
                records += 1 + now.len();
                own = later;
                group_units = 0;
                if own.is_empty() {
                    break;
                }
            }
        }
        flush(&mut out, &mut records);
    }

    pub(super) fn encode_transfers(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.moved_out().to_le_bytes());
        out.extend_from_slice(&self.moved_in().to_le_bytes());
        let Some(transfers) = self.transfers() else {
            out.extend_from_slice(&0u32.to_le_bytes());
            return;
        };
        out.extend_from_slice(&(transfers.by_id.len() as u32).to_le_bytes());
        for (id, transfer) in transfers.iter() {
            match transfer {
                Transfer::Out {
                    requested,
                    taken,
                    destination,
                    open,
                } => {
                    out.push(if *open {
                        TRANSFER_OPEN
                    } else {
                        TRANSFER_SETTLED
                    });
                    put_id(out, id);
                    put_varint(out, *requested as u64);
                    put_varint(out, *taken as u64);
                    match destination {
                        Some(destination) => put_id(out, destination),
                        None => out.push(0),
                    }
                }
                Transfer::In { units, reply } => {
                    out.push(TRANSFER_RECEIVED);
                    put_id(out, id);
                    put_varint(out, *units as u64);
                    put_varint(out, *reply as u64);
                }
            }
        }
    }
}

pub(super) fn put_id(out: &mut Vec<u8>, id: &[u8]) {
    // Ids are bounded by MAX_ID_LEN when they enter the item, so they fit.
    out.push(id.len() as u8);
    out.extend_from_slice(id);
}
