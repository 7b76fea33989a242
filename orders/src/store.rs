//! The orders table in PostgreSQL: one row per order, written so that a
//! redelivered or reordered entry never moves an order backwards.

use crate::event::OrderEvent;
use postgres::{Client, NoTls};

pub struct Store {
    client: Client,
}

const CREATE_TABLE: &str = "CREATE TABLE IF NOT EXISTS seckill_orders (
    item text NOT NULL,
    order_id text NOT NULL,
    user_id text NOT NULL,
    qty bigint NOT NULL,
    status text NOT NULL,
    stock_after bigint NOT NULL,
    created_at_ms bigint NOT NULL,
    updated_at_ms bigint NOT NULL,
    last_entry_ms bigint NOT NULL,
    last_entry_seq bigint NOT NULL,
    PRIMARY KEY (item, order_id)
)";

/// Inserts the order, or moves it on, but only from an older stream entry:
/// a redelivered entry, or one claimed out of order, changes nothing.
const UPSERT: &str = "INSERT INTO seckill_orders AS o
    (item, order_id, user_id, qty, status, stock_after,
     created_at_ms, updated_at_ms, last_entry_ms, last_entry_seq)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $7, $8, $9)
    ON CONFLICT (item, order_id) DO UPDATE SET
        status = EXCLUDED.status,
        stock_after = EXCLUDED.stock_after,
        updated_at_ms = EXCLUDED.updated_at_ms,
        last_entry_ms = EXCLUDED.last_entry_ms,
        last_entry_seq = EXCLUDED.last_entry_seq
    WHERE (o.last_entry_ms, o.last_entry_seq)
        < (EXCLUDED.last_entry_ms, EXCLUDED.last_entry_seq)";

impl Store {
    /// Connects and creates the table when missing.
    pub fn connect(url: &str) -> Result<Store, postgres::Error> {
        let mut client = Client::connect(url, NoTls)?;
        client.batch_execute(CREATE_TABLE)?;
        Ok(Store { client })
    }

    /// Applies `events` in one transaction: all of them, or none.
    pub fn apply(&mut self, events: &[OrderEvent]) -> Result<(), postgres::Error> {
        let mut transaction = self.client.transaction()?;
        let upsert = transaction.prepare(UPSERT)?;
        for event in events {
            transaction.execute(
                &upsert,
                &[
                    &event.item,
                    &event.order_id,
                    &event.user,
                    &event.qty,
                    &event.status.as_str(),
                    &event.stock,
                    &event.at_ms,
                    &event.entry.ms,
                    &event.entry.seq,
                ],
            )?;
        }
        transaction.commit()
    }
}
