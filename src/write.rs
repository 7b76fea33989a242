//! The one way an item is written.
//!
//! ```text
//! parse + validate                    (the command; errors return, nothing touched)
//!   -> open the item -> judge         (pure; a reply or an error returns, nothing touched)
//!   -> pick the lapsed holds to settle
//!   -> append the order events        (refused: taken back, error, nothing touched)
//!   -> apply: settle, then the change (cannot fail)
//!   -> publish: signal, replicate, notify, register the next deadline
//! ```
//!
//! Commands, the sweeper, INIT and LOADCHUNK all end in [`publish`], so no
//! handler replicates or notifies by hand: a call that errors or is refused
//! changes nothing, fires nothing and leaves WATCH alone, and a sale and its
//! order event happen together or not at all.

use crate::hold_registry;
use crate::order_stream::{self, OrderStream};
use crate::rewrite::Rewrite;
use crate::sale_item::{Change, HoldRef, Moment, SaleItem, StreamSetting};
use crate::server::notify::{notify_keyspace_event, replicate, replicate_verbatim, ReplicaArg};
use crate::server::{now_ms, selected_db, signal_modified, Arg, ItemKey};
use crate::stats;
use redis_module::{raw, Context, NotifyEvent, RedisError, RedisResult, RedisValue};
use smallvec::SmallVec;
use std::cell::Cell;
use std::ffi::CStr;
use std::sync::atomic::{AtomicBool, Ordering};

/// One value per line of a write to several items: kept on the stack for
/// orders of up to four lines, the bundles and carts a checkout sends, so
/// that an order pays no allocation per step (on the heap beyond).
pub type PerLine<T> = SmallVec<[T; 4]>;

/// Lapsed holds a command releases besides those its change needs: none.
/// A backlog of lapsed holds costs a call nothing (the item keeps running
/// figures of them), so draining it is the sweep's job alone, in steps of
/// its own time budget; a purchase that released 64 others' holds on the
/// way, as it once did, cost 30 times one that released none.
pub const SETTLE_PER_WRITE: usize = 0;

/// Lapsed holds a command releases besides those its change needs on an
/// item the sweep leaves alone: one whose order stream came in a restore
/// and is not vouched for yet, so that only a caller allowed to write the
/// stream releases them, with their events, and vouches for it.
const SETTLE_PER_WRITE_UNVOUCHED: usize = 64;

/// Reply of a write to a key with no item.
pub const NO_SUCH_ITEM: i64 = -3;

/// What replicas and the AOF receive for a write.
pub enum Effect<'a> {
    /// Nothing of the command itself (a sweep; its releases are sent).
    Nothing,
    /// The command as the client sent it: its outcome does not depend on
    /// anything a replica could see differently.
    Verbatim,
    /// This command instead, e.g. with a clock reading made absolute. The
    /// rewrite lives in the command's frame: a decision is moved on its way
    /// to being applied, and a rewrite in place is some 300 bytes.
    Rewritten(&'a Rewrite<'a>),
}

/// What a write decided, once judged.
pub struct Decision<'a> {
    pub change: Change<'a>,
    pub effect: Effect<'a>,
    /// The keyspace event of the change (`seckill.deduct`, ...).
    pub event: Option<&'static CStr>,
    /// The moment the change was judged at.
    pub moment: Moment,
}

/// The moment this server judges a write to `item` at: its clock where it
/// decides (a master), untimed where it applies its master's decisions (a
/// replica, an AOF replay). An item with no holds, no window and no order
/// stream is judged alike at any moment, so the hot path of a plain sale
/// asks neither the server's role nor its clock.
pub fn moment_of(ctx: &Context, item: &SaleItem) -> Moment {
    moment_given(ctx, item, item.earliest_deadline())
}

/// [`moment_of`], given the item's `earliest_deadline`, found already.
pub fn moment_given(ctx: &Context, item: &SaleItem, earliest_deadline: Option<i64>) -> Moment {
    let untimed = earliest_deadline.is_none()
        && item.window().is_always_open()
        && item.order_stream().is_none();
    if untimed || master_decided(ctx) {
        Moment::Untimed
    } else {
        Moment::Now(now_ms())
    }
}

/// What a judge makes of a write.
pub enum Judgement<'a> {
    /// Reply this; nothing changes.
    Answer(RedisValue),
    /// Apply this change, then reply with its figure.
    Decide(Decision<'a>),
}

/// Which part of an item a write is made to.
#[derive(Clone, Copy)]
pub enum Part<'a> {
    /// The item as a whole: its settings, given to every variant too.
    Whole,
    /// The variant of this name, or the item's own stock if given none.
    Variant(Option<&'a [u8]>),
    /// The part that recorded this request id (the item itself, for an
    /// unknown id of an item with variants: it records nothing).
    OfRequest(&'a [u8]),
    /// The variant of this name (or the item's own stock) for a transfer:
    /// a transfer id names one transfer of one variant, so an id another
    /// variant recorded is refused, as a request id is.
    Transfer {
        variant: Option<&'a [u8]>,
        transfer_id: &'a [u8],
    },
}

/// Where in `item` a write to `part` goes: None for the item itself, or
/// the index of a variant; or why nowhere.
pub fn part_index(item: &SaleItem, part: Part) -> Result<Option<usize>, RedisError> {
    use crate::errors::{
        ERR_NO_SUCH_VARIANT, ERR_NO_VARIANTS, ERR_TRANSFER_OTHER_VARIANT, ERR_VARIANT_NEEDED,
    };
    match part {
        Part::Transfer {
            variant,
            transfer_id,
        } => {
            let index = part_index(item, Part::Variant(variant))?;
            let elsewhere = |index| {
                item.variants()
                    .iter()
                    .enumerate()
                    .any(|(place, other)| place != index && other.item.knows_transfer(transfer_id))
            };
            if index.is_some_and(elsewhere) {
                return Err(RedisError::Str(ERR_TRANSFER_OTHER_VARIANT));
            }
            Ok(index)
        }
        Part::Whole => Ok(None),
        Part::Variant(None) if item.has_variants() => Err(RedisError::Str(ERR_VARIANT_NEEDED)),
        Part::Variant(None) => Ok(None),
        Part::Variant(Some(_)) if !item.has_variants() => Err(RedisError::Str(ERR_NO_VARIANTS)),
        Part::Variant(Some(name)) => item
            .variant_index(name)
            .map(Some)
            .ok_or(RedisError::Str(ERR_NO_SUCH_VARIANT)),
        Part::OfRequest(request_id) => Ok(item.variant_of_request(request_id)),
    }
}

/// The part of `item` a write goes to, or why none.
pub fn part_of<'i>(item: &'i mut SaleItem, part: Part) -> Result<&'i mut SaleItem, RedisError> {
    match part_index(item, part)? {
        None => Ok(item),
        Some(index) => item
            .variant_mut(index)
            .ok_or(RedisError::Str(crate::errors::ERR_NO_SUCH_VARIANT)),
    }
}

/// Runs a write on one part of the item at `name`: `judge` looks at that
/// part and answers (nothing changes) or decides a change, and `reply`
/// turns the applied change's figure into the reply. A missing item
/// answers `-3`.
pub fn write_part<'a>(
    ctx: &Context,
    name: &Arg,
    part: Part,
    judge: impl FnOnce(&SaleItem, Moment) -> Result<Judgement<'a>, RedisError>,
    reply: impl FnOnce(&SaleItem, i64, Moment) -> RedisValue,
) -> RedisResult {
    let mut key = ItemKey::open_read(ctx, name);
    let Some(item) = key.item_mut()? else {
        return Ok(RedisValue::Integer(NO_SUCH_ITEM));
    };
    let reply = write_opened(ctx, name, part_of(item, part)?, judge, reply);
    vouch_whole(item);
    reply
}

/// Refuses up front a command that writes one item in several steps (a
/// RELEASE of holds in several variants) when its order stream has no room
/// for every event the steps could append, `events` and what each of the
/// `steps` could settle on its way: each step checks its own room, and a
/// later step refused would follow an earlier one's change.
pub fn check_stream_room(
    ctx: &Context,
    name: &Arg,
    item: &SaleItem,
    steps: usize,
    events: usize,
) -> Result<(), RedisError> {
    if master_decided(ctx) {
        // Its master or the AOF sends what was done: nothing is refused.
        return Ok(());
    }
    let Some(stream_setting) = item.order_stream() else {
        return Ok(());
    };
    // A step settles at most the budget of an item whose stream is not
    // vouched for, the larger one.
    let most = steps
        .saturating_mul(SETTLE_PER_WRITE_UNVOUCHED)
        .saturating_add(events);
    OrderStream::open(ctx, name.as_bytes(), stream_setting)?.check_room(ctx, most)
}

/// A write by a caller allowed to write the order stream vouches for the
/// stream of the variant it wrote, and replicates that as `SECKILL.STREAM`
/// for the whole item: the whole item is vouched for here too, as on its
/// replicas and in its AOF.
pub fn vouch_whole(item: &mut SaleItem) {
    let vouched = |part: &SaleItem| {
        part.order_stream()
            .is_some_and(|stream_setting| stream_setting.confirmed)
    };
    let variants = item.variants();
    if variants.iter().any(|variant| vouched(&variant.item))
        && (!vouched(item) || !variants.iter().all(|variant| vouched(&variant.item)))
    {
        item.confirm_order_stream();
    }
}

/// [`write_part`] on an item its command opened itself (with
/// [`ItemKey::open_read`]), to answer some calls before any of this. Not
/// inlined into the command: its judge is, which saves moving the
/// decision it builds.
pub fn write_opened<'a>(
    ctx: &Context,
    name: &Arg,
    item: &mut SaleItem,
    judge: impl FnOnce(&SaleItem, Moment) -> Result<Judgement<'a>, RedisError>,
    reply: impl FnOnce(&SaleItem, i64, Moment) -> RedisValue,
) -> RedisResult {
    let moment = moment_of(ctx, item);
    let decision = match judge(item, moment)? {
        Judgement::Decide(decision) => decision,
        Judgement::Answer(answer) => return Ok(answer),
    };
    let figure = commit(ctx, name, item, decision, SETTLE_PER_WRITE)?;
    Ok(reply(item, figure, moment))
}

/// What a judge makes of a write to several items.
pub enum Judgements {
    /// Reply this; nothing changes.
    Answer(RedisValue),
    /// Apply the changes the judge put in its decisions, one per item in
    /// order; None (or none given) leaves that item as it is.
    Decide,
}

/// A judge for [`write_items`], typed where it is written: a closure
/// kept in a variable would not learn its argument types from the call.
pub fn items_judge<'a, F>(judge: F) -> F
where
    F: FnOnce(
        &[Option<Seen>],
        &mut PerLine<Option<Decision<'a>>>,
    ) -> Result<Judgements, RedisError>,
{
    judge
}

/// One item of a write to several, as its judge sees it: the item, and
/// the part of it the write goes to (the item itself, or a variant).
#[derive(Clone, Copy)]
pub struct Seen<'i> {
    pub whole: &'i SaleItem,
    pub part: &'i SaleItem,
    /// The part's index among the item's variants, if it is one.
    pub variant: Option<usize>,
}

/// Runs one write on the items at `names`, all or nothing, each to its
/// `parts` entry: `judge` sees every item (None where a name holds none)
/// and answers, or decides a change per item. Every change is prepared
/// (its order events appended) before any is applied, so an error on one
/// leaves every item as it was; each item's change is then applied and
/// published as a write to it alone, and the server hands replicas and the
/// AOF what one command replicated in one MULTI/EXEC. Replies the figure
/// of each item's change (None where none was decided), or the judge's
/// answer.
pub fn write_items<'a>(
    ctx: &Context,
    names: &[&Arg],
    parts: &[Part],
    judge: impl FnOnce(
        &[Option<Seen>],
        &mut PerLine<Option<Decision<'a>>>,
    ) -> Result<Judgements, RedisError>,
) -> Result<Result<PerLine<Option<i64>>, RedisValue>, RedisError> {
    // Built by pushes, not collected: a collected small vector is returned
    // by value, a copy of its whole inline buffer, on an order's hot path.
    let mut keys: PerLine<ItemKey> = SmallVec::new();
    for name in names {
        keys.push(ItemKey::open_read(ctx, name));
    }
    let mut wholes: PerLine<Option<&mut SaleItem>> = SmallVec::new();
    for key in keys.iter_mut() {
        wholes.push(key.item_mut()?);
    }
    // One item under two names would be changed through two borrows.
    for (place, item) in wholes.iter().enumerate() {
        let Some(item) = item else { continue };
        if wholes[..place]
            .iter()
            .flatten()
            .any(|earlier| std::ptr::eq::<SaleItem>(*earlier, *item))
        {
            return Err(RedisError::Str(crate::errors::ERR_ORDER_REPEATED_KEY));
        }
    }
    let mut variants: PerLine<Option<usize>> = SmallVec::new();
    for (item, part) in wholes.iter().zip(parts) {
        variants.push(match item.as_deref() {
            Some(item) => part_index(item, *part)?,
            None => None,
        });
    }
    // Filled in place by the judge: a decision is large, and an order's
    // are never moved as a whole.
    let mut decisions: PerLine<Option<Decision<'a>>> = SmallVec::new();
    {
        let mut seen: PerLine<Option<Seen>> = SmallVec::new();
        for (item, variant) in wholes.iter().zip(&variants) {
            seen.push(item.as_deref().map(|whole| {
                Seen {
                    whole,
                    part: variant
                        .and_then(|index| whole.variant(index))
                        .unwrap_or(whole),
                    variant: *variant,
                }
            }));
        }
        if let Judgements::Answer(answer) = judge(&seen, &mut decisions)? {
            return Ok(Err(answer));
        }
    }
    decisions.resize_with(names.len(), || None);
    let mut items: PerLine<Option<&mut SaleItem>> = SmallVec::new();
    for (item, variant) in wholes.iter_mut().zip(&variants) {
        items.push(item.as_deref_mut().and_then(|whole| match variant {
            Some(index) => whole.variant_mut(*index),
            None => Some(whole),
        }));
    }
    // Every line's stream is checked before any is written: a refusal
    // after another line's entries were in would leave the stream changed
    // on this server alone.
    let mut prepared: PerLine<Option<Prepared>> = SmallVec::new();
    for ((name, item), decision) in names.iter().zip(&items).zip(&decisions) {
        prepared.push(match (item, decision) {
            (Some(item), Some(decision)) => {
                Some(plan(ctx, name, item, decision, SETTLE_PER_WRITE)?)
            }
            _ => None,
        });
    }
    if prepared.iter().flatten().any(|line| line.stream.is_some()) {
        check_streams_room(ctx, &mut prepared)?;
    }
    for (((name, item), decision), line) in names
        .iter()
        .zip(&items)
        .zip(&decisions)
        .zip(prepared.iter_mut())
    {
        let (Some(item), Some(decision), Some(line)) = (item, decision, line) else {
            continue;
        };
        if let Some((stream, _)) = line.stream.as_mut() {
            for event in item.events(&line.settle, &decision.change, decision.moment) {
                stream.append(name.as_bytes(), &event)?;
            }
        }
    }
    let mut figures: PerLine<Option<i64>> = SmallVec::new();
    for (((name, item), decision), prepared) in names
        .iter()
        .zip(items.iter_mut())
        .zip(decisions.drain(..))
        .zip(prepared.drain(..))
    {
        figures.push(match (item, decision, prepared) {
            (Some(item), Some(decision), Some(prepared)) => {
                Some(finish(ctx, name, item, decision, prepared))
            }
            _ => None,
        });
    }
    drop(items);
    for whole in wholes.iter_mut().flatten() {
        vouch_whole(whole);
    }
    Ok(Ok(figures))
}

/// Checks that each order stream the lines of one command write to has
/// room for all their entries, shared or not, and tells each line how many
/// entries the lines after it append to its stream: the stream's trim
/// keeps them (see `OrderStream::publish`).
fn check_streams_room(ctx: &Context, prepared: &mut [Option<Prepared>]) -> Result<(), RedisError> {
    let later: PerLine<usize> = {
        let mut streams: PerLine<Option<(&[u8], usize)>> = SmallVec::new();
        for line in prepared.iter() {
            streams.push(
                line.as_ref()
                    .and_then(|line| line.stream.as_ref())
                    .map(|(stream, events)| (stream.name(), *events)),
            );
        }
        for (place, line) in prepared.iter().enumerate() {
            let Some((stream, _)) = line.as_ref().and_then(|line| line.stream.as_ref()) else {
                continue;
            };
            let earlier = streams[..place]
                .iter()
                .flatten()
                .any(|(other, _)| *other == stream.name());
            if !earlier {
                let entries = streams[place..]
                    .iter()
                    .flatten()
                    .filter(|(other, _)| *other == stream.name())
                    .map(|(_, events)| events)
                    .sum();
                stream.check_room(ctx, entries)?;
            }
        }
        let mut later = SmallVec::new();
        for (place, stream) in streams.iter().enumerate() {
            later.push(stream.map_or(0, |(name, _)| {
                streams[place + 1..]
                    .iter()
                    .flatten()
                    .filter(|(other, _)| *other == name)
                    .map(|(_, events)| events)
                    .sum()
            }));
        }
        later
    };
    for (line, later) in prepared.iter_mut().zip(later) {
        if let Some(line) = line {
            line.later = later;
        }
    }
    Ok(())
}

/// Settles, records the events of, applies and publishes `decision`.
/// Returns the change's figure; an error means nothing changed. Inlined
/// into each command so that the decision is built in place, not moved:
/// a purchase is on a flash sale's hot path.
#[inline(always)]
fn commit(
    ctx: &Context,
    name: &Arg,
    item: &mut SaleItem,
    decision: Decision,
    settle_budget: usize,
) -> Result<i64, RedisError> {
    let prepared = prepare(ctx, name, item, &decision, settle_budget)?;
    Ok(finish(ctx, name, item, decision, prepared))
}

/// What [`prepare`] readied for [`finish`]: the lapsed holds to settle on
/// the way, and the order stream with the write's events appended, which
/// are taken back if it is dropped unpublished.
struct Prepared<'ctx> {
    settle: Vec<HoldRef>,
    lapsing: bool,
    stream: Option<(OrderStream<'ctx>, usize)>,
    /// Entries other items' writes in the same command append to the same
    /// stream after these.
    later: usize,
}

/// The part of a commit that can fail: picks the lapsed holds to settle
/// and appends the order events. Nothing is applied yet.
#[inline(always)]
fn prepare<'ctx>(
    ctx: &'ctx Context,
    name: &Arg,
    item: &SaleItem,
    decision: &Decision,
    settle_budget: usize,
) -> Result<Prepared<'ctx>, RedisError> {
    let mut prepared = plan(ctx, name, item, decision, settle_budget)?;
    if let Some((stream, _)) = prepared.stream.as_mut() {
        let events = item.events(&prepared.settle, &decision.change, decision.moment);
        stream.check_room(ctx, events.len())?;
        for event in &events {
            stream.append(name.as_bytes(), event)?;
        }
    }
    Ok(prepared)
}

/// Picks the lapsed holds to settle, and opens the order stream its events
/// go to, counting them and checking everything that could refuse them
/// (the stream's type, slot and migration, the caller's right to write it)
/// but its room. Changes nothing.
#[inline(always)]
fn plan<'ctx>(
    ctx: &'ctx Context,
    name: &Arg,
    item: &SaleItem,
    decision: &Decision,
    settle_budget: usize,
) -> Result<Prepared<'ctx>, RedisError> {
    let Decision { change, moment, .. } = decision;
    let moment = *moment;
    // Only the server that decides releases lapsed holds; its replicas and
    // its AOF receive each release as SECKILL.RELEASE.
    let lapsing = matches!(
        (moment.now(), item.next_deadline()),
        (Some(now), Some(deadline)) if deadline <= now
    );
    let settle: Vec<HoldRef> = match moment.now() {
        Some(now) if lapsing => {
            let unvouched = item
                .order_stream()
                .is_some_and(|stream_setting| !stream_setting.confirmed);
            let budget = if unvouched {
                settle_budget.max(SETTLE_PER_WRITE_UNVOUCHED)
            } else {
                settle_budget
            };
            item.settle_plan(change, now, budget)
        }
        _ => Vec::new(),
    };
    let stream = match (moment.now(), item.order_stream()) {
        (Some(_), Some(stream_setting)) => {
            let events = item.events(&settle, change, moment).len();
            if events == 0 {
                None
            } else {
                if !stream_setting.confirmed
                    && !order_stream::caller_may_write(ctx, &stream_setting.stream)
                {
                    return Err(RedisError::Str(crate::errors::ERR_STREAM_UNCONFIRMED));
                }
                Some((
                    OrderStream::open(ctx, name.as_bytes(), stream_setting)?,
                    events,
                ))
            }
        }
        _ => None,
    };
    Ok(Prepared {
        settle,
        lapsing,
        stream,
        later: 0,
    })
}

/// The part of a commit that cannot fail: applies the prepared write and
/// publishes it. Returns the change's figure.
#[inline(always)]
fn finish(
    ctx: &Context,
    name: &Arg,
    item: &mut SaleItem,
    decision: Decision,
    prepared: Prepared,
) -> i64 {
    let Decision {
        change,
        effect,
        event,
        ..
    } = decision;
    let Prepared {
        settle,
        lapsing,
        stream,
        later,
    } = prepared;
    let stream = stream.map(|(stream, events)| {
        stats::ORDER_EVENTS.add(events as u64);
        stream
    });
    let released: Vec<Vec<u8>> = if settle.is_empty() {
        Vec::new()
    } else {
        settle
            .iter()
            .map(|hold| item.hold_request_id(*hold).to_vec())
            .collect()
    };
    let adds_hold = change.adds_hold();
    let counted = change.counted();
    let ends_holds = !settle.is_empty() || change.ends_holds();
    // A caller allowed to write a restored item's stream has just written
    // it: the name is vouched for from now on, on replicas too.
    let confirms = stream.is_some()
        && item
            .order_stream()
            .is_some_and(|stream_setting| !stream_setting.confirmed);
    let earliest_before = item.next_deadline();
    let figure = item.apply(&settle, change);
    stats::count_change(counted, figure, settle.len());
    if confirms {
        item.confirm_order_stream();
    }
    publish(
        ctx,
        name,
        &Published {
            released: &released,
            confirmed: if confirms { item.order_stream() } else { None },
            effect,
            event,
        },
    );
    if let Some(stream) = stream {
        stream.publish(later);
    }
    // An item with lapsed holds is told to the sweep again, which drains
    // them: wherever it lives now (on Valkey a RENAME or MOVE is not
    // followed), its writes find it.
    // A hold that leaves the earliest deadline as it was tells the sweep
    // nothing new: it knows the item by its earliest deadline, and a hold
    // is on a flash sale's hot path.
    let sweep_knows = adds_hold
        && !ends_holds
        && !lapsing
        && earliest_before.is_some()
        && item.next_deadline() == earliest_before;
    if (adds_hold || ends_holds || lapsing) && !sweep_knows {
        match item.next_deadline() {
            Some(deadline) => {
                hold_registry::watch(item, selected_db(ctx), name.as_bytes(), deadline)
            }
            // The sweep has nothing left to do here: the registry counts
            // the items with pending holds (`INFO seckill`).
            None => hold_registry::forget(item),
        }
    }
    figure
}

/// What a write that changed an item tells the rest of the server.
pub struct Published<'a> {
    /// Request ids of holds released by clock in this write.
    pub released: &'a [Vec<u8>],
    /// The order stream a caller allowed to write it just confirmed.
    pub confirmed: Option<&'a StreamSetting>,
    pub effect: Effect<'a>,
    pub event: Option<&'static CStr>,
}

/// After an item changed: tells WATCH and client tracking, replicates the
/// releases and then the command's effect, and fires the keyspace events.
/// The one place any of this happens.
pub fn publish(ctx: &Context, name: &Arg, published: &Published) {
    signal_modified(ctx, name);
    if !published.released.is_empty() {
        let mut args = Vec::with_capacity(published.released.len() + 1);
        args.push(ReplicaArg::String(name));
        args.extend(published.released.iter().map(|id| ReplicaArg::Bytes(id)));
        replicate(ctx, c"SECKILL.RELEASE", &args);
        notify(ctx, name, c"seckill.expire");
    }
    if let Some(stream_setting) = published.confirmed {
        let args = [
            ReplicaArg::String(name),
            ReplicaArg::Bytes(&stream_setting.stream),
            ReplicaArg::Bytes(b"MAXLEN"),
            ReplicaArg::Number(stream_setting.maxlen),
        ];
        replicate(ctx, c"SECKILL.STREAM", &args);
    }
    match &published.effect {
        Effect::Nothing => {}
        Effect::Verbatim => replicate_verbatim(ctx),
        Effect::Rewritten(rewrite) => {
            replicate(ctx, rewrite.command(), rewrite.args());
        }
    }
    if let Some(event) = published.event {
        notify(ctx, name, event);
    }
}

fn notify(ctx: &Context, key: &Arg, event: &CStr) {
    notify_keyspace_event(ctx, NotifyEvent::MODULE, event, key);
}

/// True while the server loads its RDB or its AOF, as its loading events
/// tell: no client runs then but the AOF's. A replica's load is not
/// counted: the server may serve clients during it.
static LOADING: AtomicBool = AtomicBool::new(false);

/// The server's loading events: `loading` from the start of an RDB or AOF
/// load to its end.
pub fn loading_changed(loading: bool) {
    LOADING.store(loading, Ordering::Relaxed);
}

thread_local! {
    /// The client `master_decided` last asked the server about, with the
    /// flags that made a decision then and the answer. What makes a
    /// client's calls decided elsewhere (being the master's connection, or
    /// a slot migration's import connection) is the client's for its life,
    /// and ids are never reused; loading is checked apart, and an answer
    /// found while loading is not kept.
    static LAST_CLIENT: Cell<Option<(u64, u32, bool)>> = const { Cell::new(None) };
}

/// True while this server applies decisions its master made: commands from
/// the master on a replica, commands replayed from the AOF at startup, and
/// on Valkey 9 what a slot migration's source streams to this node (its
/// snapshot and its writes since, decided by the node that owns the slot).
///
/// Asked by every write of an item with holds, a window or an order
/// stream. The server's answer (`RM_GetContextFlags`, which works out a
/// dozen other flags too) costs about 130 instructions, 2% of a hold, so
/// it is kept for the client that asked last: a connection's calls follow
/// each other.
pub fn master_decided(ctx: &Context) -> bool {
    if LOADING.load(Ordering::Relaxed) {
        return true;
    }
    let decided = crate::slot_migration::decided_flags();
    let client = crate::server::context::client_id(ctx);
    let known = LAST_CLIENT.get();
    if let Some((id, flags, answer)) = known {
        if client != 0 && id == client && flags == decided {
            return answer;
        }
    }
    let flags = crate::server::context::flags(ctx);
    let answer = flags.is_some_and(|flags| flags & decided != 0);
    let loading = flags.is_some_and(|flags| flags & raw::REDISMODULE_CTX_FLAGS_LOADING != 0);
    if client != 0 && !loading {
        LAST_CLIENT.set(Some((client, decided, answer)));
    }
    answer
}

/// A repeated call (a replayed request id, a hold confirmed or refunded
/// before) writes nothing, so a `WAIT` after it would not wait for the
/// first call's effect to reach the replicas: `WAIT` counts the writes of
/// its own connection, and a retry after a lost connection comes on
/// another one. Replicating a `PING`, which every replica and AOF replay
/// takes as the master's own keepalive, moves the caller's replication
/// offset past the first call, so its `WAIT` covers it. Not the call
/// itself: a replica judges what its master sends without a clock, and a
/// CONFIRM or REFUND of a hold whose deadline passed, refused here before
/// the sweep released it, would confirm or refund that hold there. Only
/// where this server decides: a replica or a replay applies what its
/// master sent.
pub fn fence_repeat(ctx: &Context) {
    if !master_decided(ctx) {
        replicate(ctx, c"PING", &[]);
    }
}

/// What one sweep step found.
pub enum Swept {
    /// The key no longer holds the registered item.
    Gone,
    /// The order stream refused the releases' events; nothing changed.
    Refused,
    Released {
        more_due: bool,
    },
}

/// Releases up to `budget` lapsed holds of the item at `name`, if it is the
/// item registered as `id`, through the same path as every write.
pub fn sweep_step(ctx: &Context, name: &Arg, id: usize, now: i64, budget: usize) -> Swept {
    let mut key = ItemKey::open_read(ctx, name);
    let Ok(Some(whole)) = key.item_mut() else {
        return Swept::Gone;
    };
    let is_id = |item: &SaleItem| item as *const SaleItem as usize == id;
    // An item with variants is registered by its variants.
    let variant = match whole.has_variants() {
        true => match (0..whole.variants().len())
            .find(|index| whole.variant(*index).is_some_and(is_id))
        {
            Some(index) => Some(index),
            None => return Swept::Gone,
        },
        false if is_id(whole) => None,
        false => return Swept::Gone,
    };
    let item = match variant {
        Some(index) => match whole.variant_mut(index) {
            Some(part) => part,
            None => return Swept::Gone,
        },
        None => &mut *whole,
    };
    if item.next_deadline().is_none_or(|deadline| deadline > now) {
        return Swept::Released { more_due: false };
    }
    let decision = Decision {
        change: Change::Nothing,
        effect: Effect::Nothing,
        event: None,
        moment: Moment::Now(now),
    };
    let outcome = match commit(ctx, name, item, decision, budget) {
        Ok(_) => Swept::Released {
            more_due: item.next_deadline().is_some_and(|deadline| deadline <= now),
        },
        Err(_) => Swept::Refused,
    };
    vouch_whole(whole);
    outcome
}
