//! Valkey 9's atomic slot migration (`CLUSTER MIGRATESLOTS`).
//!
//! The source node streams a snapshot of the slots' keys (AOF-rewrite
//! commands: SECKILL.LOADCHUNK for items, XADD and XGROUP for their order
//! streams) and then every write it replicates for those slots (DEDUCT ...
//! AT, SECKILL.RELEASE, XADD with the entry's id, ...) over one connection,
//! the import client, and finally hands the slots over in one step.
//!
//! What the module does about it:
//! - the import client's commands are decisions the source made, applied
//!   as a replica applies its master's ([`decided_flags`]): only that
//!   connection carries the server's `SLOT_IMPORT_CLIENT` context flag, and
//!   clients cannot reach keys of a slot this node does not own yet;
//! - the sweep leaves alone the items of slots being imported
//!   ([`owned_here`]): their holds are released by the source, whose
//!   releases arrive as SECKILL.RELEASE; at the handover the sweep takes
//!   them over ([`on_event`], import completed);
//! - a cancelled or failed import is deleted by the server, and a finished
//!   export too: the items' `free` callback drops their sweep entries.
//!
//! The module declares support only where all of this exists: on Valkey,
//! with the option, the context flag and the server event known to the
//! running server, so it still loads on Redis and on Valkey 8.

use crate::hash_slot::key_slot;
use crate::hold_registry;
use crate::server::{context, events};
use redis_module::{raw, Context};
use std::os::raw::c_int;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;

/// `VALKEYMODULE_OPTIONS_HANDLE_ATOMIC_SLOT_MIGRATION` (valkeymodule.h, 9.0).
const OPTION_HANDLES_ATOMIC_SLOT_MIGRATION: c_int = 1 << 5;
/// `VALKEYMODULE_CTX_FLAGS_SLOT_IMPORT_CLIENT`: the command comes from the
/// connection a slot migration's source streams its slots over.
const CTX_FLAG_SLOT_IMPORT_CLIENT: u32 = 1 << 25;
/// The subevents of `VALKEYMODULE_EVENT_ATOMIC_SLOT_MIGRATION`.
const IMPORT_STARTED: u64 = 0;
const EXPORT_STARTED: u64 = 1;
const IMPORT_ABORTED: u64 = 2;
const EXPORT_ABORTED: u64 = 3;
const IMPORT_COMPLETED: u64 = 4;
const EXPORT_COMPLETED: u64 = 5;

/// The context flags that make a command a decision made elsewhere: the
/// master's stream (REPLICATED), the AOF (LOADING), and on Valkey 9 the
/// import client of a slot migration.
static DECIDED_FLAGS: AtomicU32 =
    AtomicU32::new(raw::REDISMODULE_CTX_FLAGS_REPLICATED | raw::REDISMODULE_CTX_FLAGS_LOADING);

pub fn decided_flags() -> u32 {
    DECIDED_FLAGS.load(Ordering::Relaxed)
}

/// A migration's name, as the server gives it.
pub type JobName = [u8; 40];
/// Slot ranges, both ends included.
pub type SlotRanges = Vec<(u16, u16)>;

/// Slots whose keys are here but not this node's to decide for.
struct Foreign {
    job: JobName,
    ranges: SlotRanges,
    /// `None` while an import runs. After an import failed, or an export
    /// finished, the server deletes the keys of slots it does not own
    /// before it next sleeps; until this moment the sweep still leaves
    /// them alone, so that it never releases a hold of an item on its way
    /// out.
    until_ms: Option<i64>,
}

/// How long slots stay foreign after their import failed or their export
/// finished: far beyond the event loop turn in which the server deletes
/// their keys.
const LEAVING_MS: i64 = 1_000;

static FOREIGN: Mutex<Vec<Foreign>> = Mutex::new(Vec::new());

fn foreign() -> std::sync::MutexGuard<'static, Vec<Foreign>> {
    FOREIGN
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// True unless `key` lies in a slot being imported here (or just left):
/// the sweep releases holds only of items this node decides for.
pub fn owned_here(key: &[u8], now: i64) -> bool {
    !in_foreign_slot(key, |slots| slots.until_ms.is_none_or(|until| until > now))
}

/// True if `key` lies in a slot being imported here: only the import
/// client can write such a key (clients are redirected to the owner).
pub fn importing(key: &[u8]) -> bool {
    in_foreign_slot(key, |slots| slots.until_ms.is_none())
}

fn in_foreign_slot(key: &[u8], counts: impl Fn(&Foreign) -> bool) -> bool {
    let foreign = foreign();
    if foreign.is_empty() {
        return false;
    }
    let slot = key_slot(key);
    foreign.iter().filter(|slots| counts(slots)).any(|slots| {
        slots
            .ranges
            .iter()
            .any(|&(start, end)| (start..=end).contains(&slot))
    })
}

/// Forgets the slots that finished leaving, so that the sweep's check
/// costs nothing once no migration is under way.
pub fn forget_left(now: i64) {
    let mut foreign = foreign();
    if !foreign.is_empty() {
        foreign.retain(|slots| slots.until_ms.is_none_or(|until| until > now));
    }
}

/// True if the server can migrate slots atomically and tells the module
/// all it needs for it: only then does the module declare support.
fn server_supports(ctx: &Context) -> bool {
    let (Some(options_all), Some(flags_all)) =
        (context::module_options_all(), context::flags_all())
    else {
        return false;
    };
    // Redis numbers its own options, flags and events independently of
    // Valkey's: the same bits mean other things there.
    if !crate::server_events::is_valkey(ctx) {
        return false;
    }
    // (Whether it has the event is known only by subscribing: Valkey 9.1's
    // IsSubEventSupported does not list it.)
    let has_it = options_all & OPTION_HANDLES_ATOMIC_SLOT_MIGRATION != 0
        && flags_all & CTX_FLAG_SLOT_IMPORT_CLIENT != 0;
    // With more than one database per node (`cluster-databases`, fixed at
    // start), Valkey 9.1 applies the writes it streams during a migration
    // to the database its snapshot ended in, not to the key's: a plain SET
    // shows it too. An item's purchases and its order stream would split
    // between databases, so the module declares no support there, and the
    // server refuses to migrate while it is loaded.
    if has_it && crate::call::config_number::<i64>(ctx, "cluster-databases").unwrap_or(1) > 1 {
        ctx.log_warning(
            "seckill: atomic slot migration stays refused: with cluster-databases above 1 \
             the server applies a migration's writes to the wrong database",
        );
        return false;
    }
    has_it
}

/// At load: on a server with atomic slot migration, listens to its event,
/// takes the import client's commands as decided, and returns the module
/// option that declares support (0 elsewhere).
pub fn enable(ctx: &Context) -> c_int {
    if !server_supports(ctx) {
        return 0;
    }
    if !events::follow_slot_migrations(ctx) {
        ctx.log_warning("seckill: cannot follow atomic slot migrations; they stay refused");
        return 0;
    }
    DECIDED_FLAGS.fetch_or(CTX_FLAG_SLOT_IMPORT_CLIENT, Ordering::Relaxed);
    OPTION_HANDLES_ATOMIC_SLOT_MIGRATION
}

/// The atomic slot migration server event: the migration `job` of the
/// slot `ranges` (both ends included) reached `subevent`.
pub fn on_event(ctx: &Context, subevent: u64, job: JobName, ranges: SlotRanges) {
    let now = crate::server::now_ms();
    let in_ranges = |key: &[u8]| {
        let slot = key_slot(key);
        ranges
            .iter()
            .any(|&(start, end)| (start..=end).contains(&slot))
    };
    match subevent {
        IMPORT_STARTED => {
            let mut foreign = foreign();
            foreign.retain(|slots| slots.job != job);
            foreign.push(Foreign {
                job,
                ranges: ranges.clone(),
                until_ms: None,
            });
        }
        IMPORT_COMPLETED => {
            foreign().retain(|slots| slots.job != job);
            // The slots are this node's now: their lapsed holds are due at
            // once, whatever the sweep put them off to while they were not.
            hold_registry::make_due(now, in_ranges);
        }
        IMPORT_ABORTED | EXPORT_COMPLETED => {
            let mut foreign = foreign();
            foreign.retain(|slots| slots.job != job);
            foreign.push(Foreign {
                job,
                ranges: ranges.clone(),
                until_ms: Some(now.saturating_add(LEAVING_MS)),
            });
        }
        // The source keeps deciding for its slots until the handover, and
        // after a failed export they are still its own.
        EXPORT_STARTED | EXPORT_ABORTED => {}
        _ => return,
    }
    let what = match subevent {
        IMPORT_STARTED => "import started",
        IMPORT_COMPLETED => "import completed",
        IMPORT_ABORTED => "import aborted",
        EXPORT_STARTED => "export started",
        EXPORT_COMPLETED => "export completed",
        _ => "export aborted",
    };
    let slots: Vec<String> = ranges
        .iter()
        .map(|(start, end)| format!("{start}-{end}"))
        .collect();
    ctx.log_notice(&format!(
        "seckill: slot migration {} {what} (slots {})",
        String::from_utf8_lossy(&job),
        slots.join(" ")
    ));
}
