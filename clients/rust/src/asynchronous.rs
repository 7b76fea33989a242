//! The same commands on async connections.

use crate::command::{self, Deduct, Durably, Init, Order, Waitable};
use crate::reply::{
    ConfirmOutcome, DeductResult, Durable, Hold, ItemFigure, ItemInfo, OrderConfirmation,
    OrderResult, OrderState, RefundResult, ScanPage, ScanRecord, SettleOutcome, Transfer,
};
use crate::Result;
use redis::{FromRedisValue, ToRedisArgs};
use std::future::Future;

async fn query<T: FromRedisValue, C: redis::aio::ConnectionLike + Send>(
    cmd: redis::Cmd,
    con: &mut C,
) -> Result<T> {
    Ok(cmd.query_async(con).await?)
}

/// Sends a command that names its keys after a count (`MDEDUCT`,
/// `MCONFIRM`, `MREFUND`): on a redis-rs async cluster connection, to the
/// master of `first_key`, where it would otherwise be routed by the count;
/// on any other connection, as it is (see the sync `query_by_key`).
async fn query_by_key<T: FromRedisValue, C: redis::aio::ConnectionLike + Send + 'static>(
    cmd: redis::Cmd,
    first_key: Option<Vec<u8>>,
    con: &mut C,
) -> Result<T> {
    #[cfg(feature = "cluster-async")]
    if let (Some(key), Some(cluster)) = (
        first_key.as_ref(),
        (con as &mut (dyn std::any::Any + Send))
            .downcast_mut::<redis::cluster_async::ClusterConnection>(),
    ) {
        use redis::cluster_routing::{Route, RoutingInfo, SingleNodeRoutingInfo, SlotAddr};
        let route = Route::with_key(key, SlotAddr::Master);
        let routing = RoutingInfo::SingleNode(SingleNodeRoutingInfo::SpecificNode(route));
        let value = cluster.route_command(cmd, routing).await?.extract_error()?;
        return Ok(redis::from_redis_value(value).map_err(redis::RedisError::from)?);
    }
    #[cfg(not(feature = "cluster-async"))]
    let _ = first_key;
    query(cmd, con).await
}

/// The seckill commands on any async connection. Each command is built
/// before the returned future, which borrows only the connection.
pub trait AsyncSeckillCommands: redis::aio::ConnectionLike + Send + Sized {
    /// Creates the item; false if it existed (and was left untouched).
    fn seckill_init(&mut self, init: &Init) -> impl Future<Output = Result<bool>> + Send {
        query(init.to_cmd(), self)
    }

    /// The purchase's outcome and the stock left; with a hold, its
    /// deadline too.
    fn seckill_deduct(
        &mut self,
        deduct: &Deduct,
    ) -> impl Future<Output = Result<DeductResult>> + Send {
        query(deduct.to_cmd(), self)
    }

    /// Makes a hold a final purchase; a refunded, lapsed or unknown
    /// request id is told apart (`Refunded`, `Lapsed`, `UnknownRequest`).
    fn seckill_confirm<K: ToRedisArgs, I: ToRedisArgs>(
        &mut self,
        key: K,
        request_id: I,
    ) -> impl Future<Output = Result<ConfirmOutcome>> + Send {
        query(command::confirm(key, request_id), self)
    }

    fn seckill_release<K: ToRedisArgs, I: ToRedisArgs>(
        &mut self,
        key: K,
        request_ids: &[I],
    ) -> impl Future<Output = Result<Option<i64>>> + Send {
        let cmd = command::release(key, request_ids);
        async move {
            query::<ItemFigure, _>(cmd, self)
                .await
                .map(|figure| figure.0)
        }
    }

    /// Gives the purchase's units back: `Refunded` with the units, or why
    /// nothing was given back (`AlreadyRefunded`, `Lapsed`,
    /// `UnknownRequest`, `NoItem`).
    fn seckill_refund<K: ToRedisArgs, I: ToRedisArgs>(
        &mut self,
        key: K,
        request_id: I,
    ) -> impl Future<Output = Result<RefundResult>> + Send {
        query(command::refund(key, request_id), self)
    }

    /// Takes every line of the order or none, in one step; see
    /// `SeckillCommands::seckill_order`. On a redis-rs async
    /// `ClusterConnection` (feature `cluster-async`), it is sent to the
    /// master of the first key.
    fn seckill_order(&mut self, order: &Order) -> impl Future<Output = Result<OrderResult>> + Send
    where
        Self: 'static,
    {
        query_by_key(order.to_cmd(), order.first_key(), self)
    }

    /// Confirms every line of the order, or none; see
    /// `SeckillCommands::seckill_confirm_order`.
    fn seckill_confirm_order<K: ToRedisArgs, I: ToRedisArgs>(
        &mut self,
        keys: &[K],
        request_id: I,
    ) -> impl Future<Output = Result<OrderConfirmation>> + Send
    where
        Self: 'static,
    {
        let keys = command::order_keys(keys);
        let first_key = keys.first().cloned();
        query_by_key(command::confirm_order(&keys, request_id), first_key, self)
    }

    /// Refunds every line of the order that can be; see
    /// `SeckillCommands::seckill_refund_order`.
    fn seckill_refund_order<K: ToRedisArgs, I: ToRedisArgs>(
        &mut self,
        keys: &[K],
        request_id: I,
    ) -> impl Future<Output = Result<Vec<RefundResult>>> + Send
    where
        Self: 'static,
    {
        let keys = command::order_keys(keys);
        let first_key = keys.first().cloned();
        query_by_key(command::refund_order(&keys, request_id), first_key, self)
    }

    /// Sends the write and `WAIT` right after it on this connection, in
    /// one round trip, as `SeckillCommands::seckill_durably` does (the
    /// async cluster connection sends the pair to the master of the key
    /// too). The connection's response timeout must be longer than the
    /// wait's (redis-rs gives async connections 500 ms by default): else
    /// the client gives up while `WAIT` still waits, with an error that
    /// does not tell whether the write ran.
    fn seckill_durably<W: Waitable>(
        &mut self,
        write: &Durably<W>,
    ) -> impl Future<Output = Result<Durable<W::Reply>>> + Send {
        let pipe = write.to_pipeline();
        let wanted = write.wanted();
        async move {
            let replies: Vec<redis::Value> = pipe.query_async(self).await?;
            Durable::of_replies(replies, wanted, W::reply)
        }
    }

    fn seckill_add<K: ToRedisArgs>(
        &mut self,
        key: K,
        qty: i64,
    ) -> impl Future<Output = Result<Option<i64>>> + Send {
        let cmd = command::add(key, qty);
        async move {
            query::<ItemFigure, _>(cmd, self)
                .await
                .map(|figure| figure.0)
        }
    }

    /// Restocks one variant; see `SeckillCommands::seckill_add_variant`.
    fn seckill_add_variant<K: ToRedisArgs, V: ToRedisArgs>(
        &mut self,
        key: K,
        qty: i64,
        variant: V,
    ) -> impl Future<Output = Result<Option<i64>>> + Send {
        let cmd = command::add_variant(key, qty, variant);
        async move {
            query::<ItemFigure, _>(cmd, self)
                .await
                .map(|figure| figure.0)
        }
    }

    fn seckill_window<K: ToRedisArgs>(
        &mut self,
        key: K,
        start_ms: i64,
        end_ms: i64,
    ) -> impl Future<Output = Result<bool>> + Send {
        let cmd = command::window(key, start_ms, end_ms);
        async move {
            query::<ItemFigure, _>(cmd, self)
                .await
                .map(|f| f.0.is_some())
        }
    }

    fn seckill_stream<K: ToRedisArgs, S: ToRedisArgs>(
        &mut self,
        key: K,
        stream: Option<(S, Option<i64>)>,
    ) -> impl Future<Output = Result<bool>> + Send {
        let cmd = command::stream(key, stream);
        async move {
            query::<ItemFigure, _>(cmd, self)
                .await
                .map(|f| f.0.is_some())
        }
    }

    fn seckill_get<K: ToRedisArgs>(
        &mut self,
        key: K,
    ) -> impl Future<Output = Result<Option<i64>>> + Send {
        query(command::get(key), self)
    }

    /// The stock left of one variant; `None` without an item.
    fn seckill_get_variant<K: ToRedisArgs, V: ToRedisArgs>(
        &mut self,
        key: K,
        variant: V,
    ) -> impl Future<Output = Result<Option<i64>>> + Send {
        query(command::get_variant(key, variant), self)
    }

    fn seckill_bought<K: ToRedisArgs, U: ToRedisArgs>(
        &mut self,
        key: K,
        user: U,
    ) -> impl Future<Output = Result<Option<i64>>> + Send {
        query(command::bought(key, user), self)
    }

    /// The units of one variant `user` holds now; `None` without an item.
    fn seckill_bought_variant<K: ToRedisArgs, U: ToRedisArgs, V: ToRedisArgs>(
        &mut self,
        key: K,
        user: U,
        variant: V,
    ) -> impl Future<Output = Result<Option<i64>>> + Send {
        query(command::bought_variant(key, user, variant), self)
    }

    fn seckill_holds<K: ToRedisArgs, U: ToRedisArgs>(
        &mut self,
        key: K,
        user: Option<U>,
    ) -> impl Future<Output = Result<Option<Vec<Hold>>>> + Send {
        query(command::holds(key, user), self)
    }

    fn seckill_info<K: ToRedisArgs>(
        &mut self,
        key: K,
    ) -> impl Future<Output = Result<Option<ItemInfo>>> + Send {
        query(command::info(key), self)
    }

    /// One variant's counters; `None` without an item.
    fn seckill_info_variant<K: ToRedisArgs, V: ToRedisArgs>(
        &mut self,
        key: K,
        variant: V,
    ) -> impl Future<Output = Result<Option<ItemInfo>>> + Send {
        query(command::info_variant(key, variant), self)
    }

    /// Where the purchase under `request_id` stands; `None` if no item.
    fn seckill_status<K: ToRedisArgs, I: ToRedisArgs>(
        &mut self,
        key: K,
        request_id: I,
    ) -> impl Future<Output = Result<Option<OrderState>>> + Send {
        query(command::status(key, request_id), self)
    }

    /// One page of the item's records from `cursor` (0 starts a scan); see
    /// `SeckillCommands::seckill_scan`.
    fn seckill_scan<K: ToRedisArgs>(
        &mut self,
        key: K,
        cursor: u64,
        count: Option<u64>,
    ) -> impl Future<Output = Result<ScanPage>> + Send {
        query(command::scan(key, cursor, count), self)
    }

    /// One page of one variant's records; see
    /// `SeckillCommands::seckill_scan_variant`.
    fn seckill_scan_variant<K: ToRedisArgs, V: ToRedisArgs>(
        &mut self,
        key: K,
        cursor: u64,
        count: Option<u64>,
        variant: V,
    ) -> impl Future<Output = Result<ScanPage>> + Send {
        query(command::scan_variant(key, cursor, count, variant), self)
    }

    /// Every record of the item, following `SECKILL.SCAN`'s cursor until
    /// it is 0: `while let Some(record) = scan.next_record().await`.
    fn seckill_scan_iter<K: ToRedisArgs>(
        &mut self,
        key: K,
        count: Option<u64>,
    ) -> AsyncScanIter<'_, Self> {
        AsyncScanIter {
            con: self,
            key: key.to_redis_args(),
            variant: None,
            count,
            cursor: Some(0),
            page: Vec::new().into_iter(),
        }
    }

    /// Every record of one variant of an item with variants, as
    /// `seckill_scan_iter` follows the cursor.
    fn seckill_scan_iter_variant<K: ToRedisArgs, V: ToRedisArgs>(
        &mut self,
        key: K,
        count: Option<u64>,
        variant: V,
    ) -> AsyncScanIter<'_, Self> {
        AsyncScanIter {
            con: self,
            key: key.to_redis_args(),
            variant: Some(variant.to_redis_args()),
            count,
            cursor: Some(0),
            page: Vec::new().into_iter(),
        }
    }

    fn seckill_take<K: ToRedisArgs, T: ToRedisArgs, D: ToRedisArgs>(
        &mut self,
        key: K,
        qty: i64,
        transfer_id: T,
        destination: Option<D>,
    ) -> impl Future<Output = Result<Option<i64>>> + Send {
        let cmd = command::take(key, qty, transfer_id, destination);
        async move { query::<ItemFigure, _>(cmd, self).await.map(|f| f.0) }
    }

    fn seckill_add_transfer<K: ToRedisArgs, T: ToRedisArgs>(
        &mut self,
        key: K,
        qty: i64,
        transfer_id: T,
    ) -> impl Future<Output = Result<Option<i64>>> + Send {
        let cmd = command::add_transfer(key, qty, transfer_id);
        async move { query::<ItemFigure, _>(cmd, self).await.map(|f| f.0) }
    }

    fn seckill_settle<K: ToRedisArgs, T: ToRedisArgs>(
        &mut self,
        key: K,
        transfer_id: T,
    ) -> impl Future<Output = Result<SettleOutcome>> + Send {
        query(command::settle(key, transfer_id), self)
    }

    fn seckill_transfers<K: ToRedisArgs>(
        &mut self,
        key: K,
    ) -> impl Future<Output = Result<Option<Vec<Transfer>>>> + Send {
        query(command::transfers(key), self)
    }

    /// See `SeckillCommands::seckill_take_variant`.
    fn seckill_take_variant<K: ToRedisArgs, T: ToRedisArgs, D: ToRedisArgs, V: ToRedisArgs>(
        &mut self,
        key: K,
        qty: i64,
        transfer_id: T,
        destination: Option<D>,
        variant: V,
    ) -> impl Future<Output = Result<Option<i64>>> + Send {
        let cmd = command::take_variant(key, qty, transfer_id, destination, variant);
        async move { query::<ItemFigure, _>(cmd, self).await.map(|f| f.0) }
    }

    /// See `SeckillCommands::seckill_add_transfer_variant`.
    fn seckill_add_transfer_variant<K: ToRedisArgs, T: ToRedisArgs, V: ToRedisArgs>(
        &mut self,
        key: K,
        qty: i64,
        transfer_id: T,
        variant: V,
    ) -> impl Future<Output = Result<Option<i64>>> + Send {
        let cmd = command::add_transfer_variant(key, qty, transfer_id, variant);
        async move { query::<ItemFigure, _>(cmd, self).await.map(|f| f.0) }
    }

    fn seckill_settle_variant<K: ToRedisArgs, T: ToRedisArgs, V: ToRedisArgs>(
        &mut self,
        key: K,
        transfer_id: T,
        variant: V,
    ) -> impl Future<Output = Result<SettleOutcome>> + Send {
        query(command::settle_variant(key, transfer_id, variant), self)
    }

    /// See `SeckillCommands::seckill_variants`.
    fn seckill_variants<K: ToRedisArgs>(
        &mut self,
        key: K,
    ) -> impl Future<Output = Result<Option<Vec<(String, i64)>>>> + Send {
        query(command::variants(key), self)
    }
}

impl<C: redis::aio::ConnectionLike + Send> AsyncSeckillCommands for C {}

/// The records of an item, a `SECKILL.SCAN` page at a time, on an async
/// connection (see `AsyncSeckillCommands::seckill_scan_iter`).
pub struct AsyncScanIter<'a, C> {
    con: &'a mut C,
    key: Vec<Vec<u8>>,
    /// The variant scanned, on an item with variants.
    variant: Option<Vec<Vec<u8>>>,
    count: Option<u64>,
    /// The cursor of the next page; `None` once the scan is over.
    cursor: Option<u64>,
    page: std::vec::IntoIter<ScanRecord>,
}

impl<C: AsyncSeckillCommands> AsyncScanIter<'_, C> {
    /// The next record, `None` at the end of the scan. An error ends the
    /// scan after it is returned.
    pub async fn next_record(&mut self) -> Option<Result<ScanRecord>> {
        loop {
            if let Some(record) = self.page.next() {
                return Some(Ok(record));
            }
            let cursor = self.cursor?;
            let page = match &self.variant {
                None => self.con.seckill_scan(&self.key, cursor, self.count).await,
                Some(variant) => {
                    self.con
                        .seckill_scan_variant(&self.key, cursor, self.count, variant)
                        .await
                }
            };
            match page {
                Ok(page) => {
                    self.cursor = (page.cursor != 0).then_some(page.cursor);
                    self.page = page.records.into_iter();
                }
                Err(err) => {
                    self.cursor = None;
                    return Some(Err(err));
                }
            }
        }
    }
}
