//! The item's order stream, written in the same atomic step as the sale.
//!
//! Entries are appended before the item changes, so that a stream that
//! cannot take them (wrong type, exhausted IDs, a key caught in a slot
//! migration) refuses the whole write with nothing changed. Entries are
//! replicated with the very IDs the server picked, after the item's own
//! command.

use crate::errors::{
    ERR_STREAM_CROSSSLOT, ERR_STREAM_FULL, ERR_STREAM_MIGRATING, ERR_STREAM_WRONGTYPE,
};
use crate::sale_item::{EventView, StreamSetting};
use crate::server::key::{can_add_to_streams, stream_kind, StreamId, StreamKind};
use crate::server::notify::{
    can_replicate, notify_keyspace_event, replicate_xadd, signal_key_as_ready, signal_modified,
};
use crate::server::{now_ms, selected_db, OwnedString, StreamKey, Strings};
use redis_module::{Context, NotifyEvent, RedisError};
use std::cell::RefCell;
use std::os::raw::c_int;

/// An entry appended in this step, kept to replicate it: its ID and the
/// field strings made for the append, replicated as they are.
struct Appended<'ctx> {
    id: StreamId,
    fields: Strings<'ctx>,
}

pub struct OrderStream<'ctx> {
    ctx: &'ctx Context,
    /// Open for writing once the first entry is appended: closing a key
    /// opened for writing signals WATCH, which a refused call must not do.
    key: Option<StreamKey<'ctx>>,
    name: OwnedString<'ctx>,
    maxlen: i64,
    appended: Vec<Appended<'ctx>>,
    /// The stream did not exist when opened: taking back what this step
    /// appended takes back the key too, which the first append made.
    created: bool,
}

/// A stream by its database and name.
type StreamInDb = (c_int, Vec<u8>);

thread_local! {
    /// The streams found with IDs to spare during the sweep step under way
    /// (`None` outside one). A step is one timer call, in which no client
    /// runs: the only entries added meanwhile are the step's own, whose
    /// IDs the server picks after the last one, so a stream whose last ID
    /// was below the largest millisecond stays so for the step. Asking the
    /// server (`XINFO STREAM`, which also builds the first and last
    /// entries) cost a tenth of each release.
    /// Each by its database and name: the step moves between databases.
    static ROOMY_THIS_STEP: RefCell<Option<Vec<StreamInDb>>> = const { RefCell::new(None) };
}

/// Runs one sweep step: `step`, with the streams' room remembered for it.
pub fn in_one_step<R>(step: impl FnOnce() -> R) -> R {
    ROOMY_THIS_STEP.set(Some(Vec::new()));
    let result = step();
    ROOMY_THIS_STEP.set(None);
    result
}

fn known_roomy(db: c_int, stream: &[u8]) -> bool {
    ROOMY_THIS_STEP.with_borrow(|roomy| {
        roomy.as_ref().is_some_and(|streams| {
            streams
                .iter()
                .any(|(in_db, name)| *in_db == db && name == stream)
        })
    })
}

fn remember_roomy(db: c_int, stream: &[u8]) {
    ROOMY_THIS_STEP.with_borrow_mut(|roomy| {
        if let Some(streams) = roomy {
            streams.push((db, stream.to_vec()));
        }
    });
}

/// Checks that `stream` can be an order stream now: empty or a stream.
pub fn check_type(ctx: &Context, stream: &[u8]) -> Result<(), RedisError> {
    let name = OwnedString::new(ctx, stream).ok_or(RedisError::Str(ERR_STREAM_WRONGTYPE))?;
    match stream_kind(ctx, name.as_arg()) {
        StreamKind::OtherType => Err(RedisError::Str(ERR_STREAM_WRONGTYPE)),
        _ => Ok(()),
    }
}

/// True if the client running this command could append to `stream`
/// itself (`XADD stream * ...`, judged by the server's own ACL check with
/// the command and the key in one selector): an item whose stream name came
/// with a RESTORE writes it only for such a caller, which gains nothing it
/// did not have. Clients Redis does not list (timers, scripts, other
/// modules' calls) are not known to be allowed, and are refused.
pub fn caller_may_write(ctx: &Context, stream: &[u8]) -> bool {
    crate::server::acl::caller_may_run(ctx, &[b"XADD", stream, b"*", b"f", b"v"])
}

impl<'ctx> OrderStream<'ctx> {
    /// Opens `stream_setting.stream` for one write: refused if the key holds
    /// another type, or if it is missing while its slot is moving between
    /// cluster nodes (a stream re-created here would collide with the one
    /// being migrated).
    pub fn open(
        ctx: &'ctx Context,
        item: &[u8],
        stream_setting: &StreamSetting,
    ) -> Result<OrderStream<'ctx>, RedisError> {
        // INIT and STREAM check the slot, but an item renamed or restored
        // under another name keeps its stream's name: in a cluster, this
        // node may not own that stream's slot.
        if crate::hash_slot::key_slot(&stream_setting.stream) != crate::hash_slot::key_slot(item)
            && crate::cluster::in_cluster(ctx)
        {
            return Err(RedisError::Str(ERR_STREAM_CROSSSLOT));
        }
        let name = OwnedString::new(ctx, &stream_setting.stream)
            .ok_or(RedisError::Str(ERR_STREAM_FULL))?;
        let found = stream_kind(ctx, name.as_arg());
        let stream = OrderStream {
            ctx,
            key: None,
            name,
            maxlen: stream_setting.maxlen,
            appended: Vec::new(),
            created: found == StreamKind::Missing,
        };
        match found {
            StreamKind::Stream => Ok(stream),
            StreamKind::OtherType => Err(RedisError::Str(ERR_STREAM_WRONGTYPE)),
            StreamKind::Missing if crate::cluster::slot_is_moving(ctx, &stream_setting.stream) => {
                Err(RedisError::Str(ERR_STREAM_MIGRATING))
            }
            StreamKind::Missing => Ok(stream),
        }
    }

    /// Checks, before anything is appended, that the stream has IDs left
    /// for `entries` more: once one entry is in, taking it back would not
    /// take back the stream's last ID. IDs run out only when the last one
    /// reached the largest millisecond, which only an explicit `XADD` does.
    pub fn check_room(&self, ctx: &Context, entries: usize) -> Result<(), RedisError> {
        if entries <= 1 {
            // A single append that fails leaves the stream as it was.
            return Ok(());
        }
        let stream = self.name.as_arg();
        let db = selected_db(ctx);
        if known_roomy(db, stream.as_bytes()) {
            return Ok(());
        }
        // A missing stream has every ID left.
        let last_id = crate::call::field(
            ctx,
            "XINFO",
            &[b"STREAM", stream.as_bytes()],
            "last-generated-id",
        );
        let Some((ms, seq)) = last_id.as_deref().and_then(|id| id.split_once('-')) else {
            return Ok(());
        };
        let (Ok(ms), Ok(seq)) = (ms.parse::<u64>(), seq.parse::<u64>()) else {
            return Ok(());
        };
        if ms < u64::MAX {
            remember_roomy(db, stream.as_bytes());
            Ok(())
        } else if u64::MAX - seq >= entries as u64 {
            Ok(())
        } else {
            Err(RedisError::Str(ERR_STREAM_FULL))
        }
    }

    /// Appends `event` with an ID the server picks. On failure every entry
    /// this step appended is taken back, and the write must be refused.
    pub fn append(&mut self, item: &[u8], event: &EventView) -> Result<(), RedisError> {
        let result = self.try_append(item, event);
        if result.is_err() {
            self.roll_back();
        }
        result
    }

    fn try_append(&mut self, item: &[u8], event: &EventView) -> Result<(), RedisError> {
        if !can_add_to_streams() {
            return Err(RedisError::Str(ERR_STREAM_FULL));
        }
        let (ctx, name) = (self.ctx, &self.name);
        let key = self
            .key
            .get_or_insert_with(|| StreamKey::open_write(ctx, name.as_arg()));
        let qty = event.qty.to_string();
        let at = now_ms().to_string();
        let stock = event.stock.to_string();
        let until = event.until.map(|deadline| deadline.to_string());
        let mut fields: [&[u8]; 18] = [
            b"event",
            event.kind.as_bytes(),
            b"item",
            item,
            b"user",
            event.user,
            b"qty",
            qty.as_bytes(),
            b"request",
            event.request_id,
            b"at",
            at.as_bytes(),
            b"stock",
            stock.as_bytes(),
            b"",
            b"",
            b"",
            b"",
        ];
        // `until` only on an event that has a deadline (a hold), `variant`
        // only on one of an item with variants.
        let mut len = 14;
        for (field, value) in [
            (&b"until"[..], until.as_ref().map(|until| until.as_bytes())),
            (&b"variant"[..], event.variant),
        ] {
            if let Some(value) = value {
                fields[len] = field;
                fields[len + 1] = value;
                len += 2;
            }
        }
        let fields = &fields[..len];
        // Kept until the entry is replicated or taken back, and freed then;
        // a refused entry's go at once.
        let mut fields = Strings::new(ctx, fields).ok_or(RedisError::Str(ERR_STREAM_FULL))?;
        let id = key
            .add(&mut fields)
            .ok_or(RedisError::Str(ERR_STREAM_FULL))?;
        self.appended.push(Appended { id, fields });
        Ok(())
    }

    /// Deletes what this step appended.
    fn roll_back(&mut self) {
        let Some(key) = self.key.as_mut() else {
            return;
        };
        let appended = std::mem::take(&mut self.appended);
        if appended.is_empty() {
            // Published, or nothing appended.
            return;
        }
        // The entries' fields go with them.
        for entry in appended {
            key.delete(entry.id);
        }
        if self.created {
            key.delete_key();
        }
    }

    /// The stream's name, to tell the streams of several items apart.
    pub fn name(&self) -> &[u8] {
        self.name.as_arg().as_bytes()
    }

    /// Once the item changed: trims the stream, replicates every entry
    /// with its ID, wakes blocked readers and fires `xadd`. `later` entries
    /// of other items' writes in the same command were appended after this
    /// step's: the stream is trimmed as a replica trims it when it applies
    /// this step's entries (each with this item's `MAXLEN`) before those,
    /// keeping the last `maxlen` entries up to this step's and every later
    /// one.
    pub fn publish(mut self, later: usize) {
        let Some(key) = self.key.as_mut() else {
            return;
        };
        if self.appended.is_empty() {
            return;
        }
        if self.maxlen > 0 {
            key.trim(
                self.maxlen
                    .saturating_add(i64::try_from(later).unwrap_or(i64::MAX)),
            );
        }
        if !can_replicate() {
            return;
        }
        let (ctx, name) = (self.ctx, self.name.as_arg());
        let maxlen = (self.maxlen > 0).then_some(self.maxlen);
        for entry in std::mem::take(&mut self.appended) {
            let id = format!("{}-{}", entry.id.ms, entry.id.seq);
            replicate_xadd(ctx, name, maxlen, &id, &entry.fields);
            // The entry's fields are replicated, and go now.
            drop(entry);
            notify_keyspace_event(ctx, NotifyEvent::STREAM, c"xadd", name);
        }
        signal_modified(ctx, name);
        signal_key_as_ready(ctx, name);
    }
}

impl Drop for OrderStream<'_> {
    fn drop(&mut self) {
        // Entries appended but never published (an error in between) are
        // taken back; published ones left nothing here. Then the key is
        // closed and the name freed, in that order (fields in declaration
        // order).
        self.roll_back();
    }
}
