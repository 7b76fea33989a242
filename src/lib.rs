//! seckill: flash-sale inventory as native Redis commands.
//!
//! Layout: `sale_item` holds the sale rules and knows nothing of Redis;
//! `commands` parses, replies, replicates and notifies; `persistence` is the
//! module data type; `write` is the one way an item is written; `server` is
//! the boundary with the server's C API (its keys, strings, events and
//! callbacks), the only part that handles raw pointers.

// Inside a function marked as needing care, each operation the compiler
// cannot check still carries its own block, and every block says why it
// is sound. Only `server` writes such functions and blocks.
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]

mod call;
mod cluster;
mod commands;
mod errors;
mod hash_slot;
mod hold_registry;
mod order_stream;
mod persistence;
mod rewrite;
mod sale_item;
mod server;
mod server_events;
mod settings;
mod slot_migration;
mod stats;
mod sweeper;
mod write;

use persistence::SALE_ITEM_TYPE;
use redis_module::configuration::ConfigurationFlags;
use redis_module::{raw, redis_module, Context, RedisString, Status};
use server::command_info::{Arg, Docs, KeyAt, KeySpec};
use server::registration::{self, InfoSection};
use server::{entry_point, EntryPoint};
use std::ffi::CStr;

// Unit tests run without Redis, whose allocator is only there inside the
// server.
#[cfg(not(test))]
macro_rules! allocator {
    () => {
        crate::server::allocator::ModuleAlloc
    };
}
#[cfg(test)]
macro_rules! allocator {
    () => {
        std::alloc::System
    };
}

/// One command: its name, entry point, flags and documentation.
struct Command {
    name: &'static CStr,
    entry_point: EntryPoint,
    flags: &'static CStr,
    docs: Docs,
}

// Key spec flags, as Redis's own commands use them: a read that returns
// data is RO ACCESS; a write that changes the item in place is RW UPDATE
// (and ACCESS when it replies a figure from it); one that may create it
// is RW INSERT (Redis allows one of INSERT, UPDATE, DELETE per key).
const READS: u32 = raw::REDISMODULE_CMD_KEY_RO | raw::REDISMODULE_CMD_KEY_ACCESS;
const UPDATES: u32 = raw::REDISMODULE_CMD_KEY_RW | raw::REDISMODULE_CMD_KEY_UPDATE;
const UPDATES_AND_READS: u32 = UPDATES | raw::REDISMODULE_CMD_KEY_ACCESS;
const CREATES: u32 = raw::REDISMODULE_CMD_KEY_RW | raw::REDISMODULE_CMD_KEY_INSERT;

const ITEM: &[KeySpec] = &[item_key(UPDATES)];
const ITEM_READ_AND_UPDATED: &[KeySpec] = &[item_key(UPDATES_AND_READS)];
const ITEM_READ: &[KeySpec] = &[item_key(READS)];
/// The items of MCONFIRM and MREFUND: `numkeys key [key ...]`.
const ORDER_KEYS: &[KeySpec] = &[KeySpec {
    at: KeyAt::Counted { count: 1, step: 1 },
    flags: UPDATES,
    notes: None,
}];

const fn item_key(flags: u32) -> KeySpec {
    KeySpec {
        at: KeyAt::Index(1),
        flags,
        notes: None,
    }
}

const ORDER_STREAM_FLAGS: u32 = raw::REDISMODULE_CMD_KEY_RW | raw::REDISMODULE_CMD_KEY_INSERT;

/// The order stream a command names: every later sale appends to it, so
/// the caller must be allowed to write it (ACL) and it must share the
/// item's cluster slot.
const fn order_stream_key(at: KeyAt) -> KeySpec {
    KeySpec {
        at,
        flags: ORDER_STREAM_FLAGS,
        notes: Some(c"the order stream; every later sale of the item appends to it"),
    }
}

/// Where SECKILL.INIT's keys are, for a server that asks: the item, and
/// the order stream where INIT reads it.
fn init_keys(ctx: &Context, args: &[server::Arg]) {
    server::entry::declare_key(ctx, args, 1, CREATES);
    if let Some(position) = commands::init_stream_position(args) {
        server::entry::declare_key(ctx, args, position, ORDER_STREAM_FLAGS);
    }
}

/// Where SECKILL.STREAM's keys are, for a server that asks: the item, and
/// the stream when one is given, flagged as their key specs are.
fn stream_keys(ctx: &Context, args: &[server::Arg]) {
    let positions: &[(usize, u32)] = match args.len() {
        0 | 1 => &[],
        2 => &[(1, UPDATES)],
        _ => &[(1, UPDATES), (2, ORDER_STREAM_FLAGS)],
    };
    for &(position, flags) in positions {
        server::entry::declare_key(ctx, args, position, flags);
    }
}

/// Where an order's keys are, for a server that asks: `count` of them
/// after argument 1, one every `step` arguments. Redis 7.0 routes a cluster
/// command by what the command declares here, not by a key spec that
/// counts its keys (it does check ACL by the key spec).
fn counted_keys(ctx: &Context, args: &[server::Arg], step: usize, flags: u32) {
    let Some(count) = args.get(1).and_then(server::Arg::integer) else {
        return;
    };
    let count = usize::try_from(count)
        .unwrap_or(0)
        .min(commands::MAX_ORDER_LINES);
    for line in 0..count {
        server::entry::declare_key(ctx, args, 2 + line * step, flags);
    }
}

/// MDEDUCT's keys: `numlines key qty [key qty ...]`.
fn order_line_keys(ctx: &Context, args: &[server::Arg]) {
    counted_keys(ctx, args, 2, UPDATES_AND_READS);
}

/// MCONFIRM's and MREFUND's keys: `numkeys key [key ...]`.
fn order_keys(ctx: &Context, args: &[server::Arg]) {
    counted_keys(ctx, args, 1, UPDATES);
}

const KEY: Arg = Arg::key(c"key", 0);
const REQUEST_ID: Arg = Arg::string(c"request_id");
const STREAM_MAXLEN: Arg = Arg::integer(c"maxlen").token(c"MAXLEN").optional();
/// The variant of an item with variants a call is about.
const VARIANT: Arg = Arg::string(c"variant").token(c"VARIANT").optional();

/// Every command, in one place: name, entry point, flags, and the docs
/// the server enforces (arity) and shows (`COMMAND DOCS`, `redis-cli`
/// hints). CONFIRM, REFUND and RELEASE carry no `deny-oom`: they settle a
/// sale already made (a payment, a cancellation) and must work at
/// `maxmemory`, or a paid hold would lapse and be sold again. Each takes
/// its item key as the first argument, so cluster clients route it and ACL
/// key patterns apply; INIT also declares the order stream it names.
/// Each entry sits at the place of its `CommandId` (the second argument
/// of `entry_point!`), which also picks its counter in `stats::CALLS`:
/// checked below, at compile time.
const COMMANDS: [Command; stats::COMMANDS] = [
        Command {
            name: c"seckill.init",
            entry_point: entry_point!(commands::init, Init, keys: init_keys),
            flags: c"write deny-oom fast getkeys-api",
            docs: Docs {
                summary: c"Creates a sale item with its stock, per-user limit, sale window and order stream",
                complexity: c"O(1)",
                arity: -3,
                // VARIABLE_FLAGS makes the server ask INIT for its keys
                // (`init_keys`), for ACL checks and cluster routing: the
                // keyword search of the stream's spec would take a variant
                // named STREAM for the option.
                keys: &[
                    item_key(CREATES),
                    KeySpec {
                        flags: ORDER_STREAM_FLAGS | raw::REDISMODULE_CMD_KEY_VARIABLE_FLAGS,
                        ..order_stream_key(KeyAt::AfterKeyword(c"STREAM", 3))
                    },
                ],
                args: &[
                    KEY,
                    Arg::one_of(
                        c"stock",
                        &[
                            Arg::integer(c"stock"),
                            Arg::keyword(c"unlimited", c"UNLIMITED"),
                            Arg::block(
                                c"variants",
                                &[
                                    Arg::integer(c"numvariants").token(c"VARIANTS"),
                                    Arg::block(
                                        c"variant",
                                        &[Arg::string(c"name"), Arg::string(c"variant-stock")],
                                    )
                                    .multiple(),
                                ],
                            ),
                        ],
                    ),
                    Arg::integer(c"limit").token(c"LIMIT").optional(),
                    Arg::block(
                        c"variantlimit",
                        &[Arg::string(c"name").token(c"VARIANTLIMIT"), Arg::integer(c"variant-limit")],
                    )
                    .optional()
                    .multiple(),
                    Arg::unix_time(c"start-ms").token(c"START").optional(),
                    Arg::unix_time(c"end-ms").token(c"END").optional(),
                    Arg::block(
                        c"stream",
                        &[Arg::key(c"stream_key", 1).token(c"STREAM"), STREAM_MAXLEN],
                    )
                    .optional(),
                    Arg::one_of(
                        c"expiration",
                        &[
                            Arg::integer(c"seconds").token(c"EX"),
                            Arg::integer(c"milliseconds").token(c"PX"),
                            Arg::unix_time(c"unix-time-seconds").token(c"EXAT"),
                            Arg::unix_time(c"unix-time-milliseconds").token(c"PXAT"),
                        ],
                    )
                    .optional(),
                    Arg::keyword(c"replace", c"REPLACE").optional(),
                ],
            },
        },
        Command {
            name: c"seckill.add",
            entry_point: entry_point!(commands::add, Add),
            flags: c"write deny-oom fast",
            docs: Docs {
                summary: c"Puts more units of a sale item on sale, or receives units moved from another part once per transfer id; replies the new stock",
                complexity: c"O(1), O(log T) with a transfer id where T is the number of transfers",
                arity: -3,
                keys: ITEM_READ_AND_UPDATED,
                args: &[
                    KEY,
                    Arg::integer(c"qty"),
                    Arg::string(c"transfer_id").token(c"ID").optional(),
                    VARIANT,
                ],
            },
        },
        Command {
            name: c"seckill.deduct",
            entry_point: entry_point!(commands::deduct, Deduct),
            flags: c"write deny-oom fast",
            docs: Docs {
                summary: c"Sells units to a user, or holds them until a deadline, in one atomic step; replies the remaining stock or a negative code",
                complexity: c"O(1)",
                arity: -4,
                keys: ITEM_READ_AND_UPDATED,
                args: &[
                    KEY,
                    Arg::string(c"user"),
                    Arg::integer(c"qty"),
                    REQUEST_ID.token(c"ID").optional(),
                    Arg::one_of(
                        c"hold",
                        &[
                            Arg::integer(c"seconds").token(c"HOLD"),
                            Arg::unix_time(c"unix-time-milliseconds").token(c"HOLDUNTIL"),
                        ],
                    )
                    .optional(),
                    VARIANT,
                    Arg::keyword(c"withdeadline", c"WITHDEADLINE").optional(),
                ],
            },
        },
        Command {
            name: c"seckill.confirm",
            entry_point: entry_point!(commands::confirm, Confirm),
            flags: c"write fast",
            docs: Docs {
                summary: c"Makes a pending hold a final purchase",
                complexity: c"O(log N) where N is the number of pending holds",
                arity: -3,
                keys: ITEM,
                args: &[KEY, REQUEST_ID, Arg::keyword(c"detail", c"DETAIL").optional()],
            },
        },
        Command {
            name: c"seckill.release",
            entry_point: entry_point!(commands::release, Release),
            flags: c"write",
            docs: Docs {
                summary: c"Lets pending holds lapse now; replies how many were released",
                complexity: c"O(M log N) where M is the number of ids and N the number of pending holds",
                arity: -3,
                keys: ITEM,
                args: &[KEY, REQUEST_ID.multiple()],
            },
        },
        Command {
            name: c"seckill.refund",
            entry_point: entry_point!(commands::refund, Refund),
            flags: c"write fast",
            docs: Docs {
                summary: c"Gives back the units of one purchase, once",
                complexity: c"O(1)",
                arity: -3,
                keys: ITEM,
                args: &[KEY, REQUEST_ID, Arg::keyword(c"detail", c"DETAIL").optional()],
            },
        },
        Command {
            name: c"seckill.window",
            entry_point: entry_point!(commands::window, Window),
            flags: c"write deny-oom fast",
            docs: Docs {
                summary: c"Moves the sale window of a sale item (Unix ms, 0 = open on that side)",
                complexity: c"O(1)",
                arity: 4,
                keys: ITEM,
                args: &[KEY, Arg::unix_time(c"start-ms"), Arg::unix_time(c"end-ms")],
            },
        },
        Command {
            name: c"seckill.stream",
            entry_point: entry_point!(commands::stream, Stream, keys: stream_keys),
            flags: c"write deny-oom fast getkeys-api",
            docs: Docs {
                summary: c"Sets the order stream of a sale item, or clears it",
                complexity: c"O(1)",
                arity: -2,
                // The stream key is declared, so the server checks it with
                // this command's own rights (ACL selectors included) and
                // routes on it. Without it (clearing the stream) that spec
                // matches nothing, which makes the server ignore every spec:
                // it then asks the command for its keys (`getkeys-api`).
                keys: &[item_key(UPDATES), order_stream_key(KeyAt::Index(2))],
                args: &[
                    KEY,
                    Arg::block(c"stream", &[Arg::key(c"stream_key", 1), STREAM_MAXLEN]).optional(),
                ],
            },
        },
        Command {
            name: c"seckill.get",
            entry_point: entry_point!(commands::get, Get),
            flags: c"readonly fast",
            docs: Docs {
                summary: c"Returns the remaining stock of a sale item",
                complexity: c"O(1)",
                arity: -2,
                keys: ITEM_READ,
                args: &[KEY, VARIANT],
            },
        },
        Command {
            name: c"seckill.bought",
            entry_point: entry_point!(commands::bought, Bought),
            flags: c"readonly fast",
            docs: Docs {
                summary: c"Returns the units a user holds now",
                complexity: c"O(1)",
                arity: -3,
                keys: ITEM_READ,
                args: &[KEY, Arg::string(c"user"), VARIANT],
            },
        },
        Command {
            name: c"seckill.holds",
            entry_point: entry_point!(commands::holds, Holds),
            flags: c"readonly",
            docs: Docs {
                summary: c"Lists pending holds, earliest deadline first",
                complexity: c"O(N) where N is the number of pending holds",
                arity: -2,
                keys: ITEM_READ,
                args: &[KEY, Arg::string(c"user").optional()],
            },
        },
        Command {
            name: c"seckill.info",
            entry_point: entry_point!(commands::info, Info),
            flags: c"readonly fast",
            docs: Docs {
                summary: c"Returns the counters of a sale item",
                complexity: c"O(1)",
                arity: -2,
                keys: ITEM_READ,
                args: &[KEY, VARIANT],
            },
        },
        Command {
            name: c"seckill.take",
            entry_point: entry_point!(commands::take, Take),
            flags: c"write deny-oom fast",
            docs: Docs {
                summary: c"Takes up to qty units out of one part of a split item (or of one variant of it), once per transfer id; replies the units taken",
                complexity: c"O(log T) where T is the number of transfers of the item",
                arity: -5,
                keys: ITEM_READ_AND_UPDATED,
                args: &[
                    KEY,
                    Arg::integer(c"qty"),
                    Arg::string(c"transfer_id").token(c"ID"),
                    Arg::string(c"destination").token(c"TO").optional(),
                    VARIANT,
                ],
            },
        },
        Command {
            name: c"seckill.settle",
            entry_point: entry_point!(commands::settle, Settle),
            flags: c"write fast",
            docs: Docs {
                summary: c"Closes a transfer given out by TAKE once its units arrived",
                complexity: c"O(log T) where T is the number of transfers of the item",
                arity: -3,
                keys: ITEM,
                args: &[KEY, Arg::string(c"transfer_id"), VARIANT],
            },
        },
        Command {
            name: c"seckill.transfers",
            entry_point: entry_point!(commands::transfers, Transfers),
            flags: c"readonly",
            docs: Docs {
                summary: c"Lists the transfers a part gave out and that are not settled",
                complexity: c"O(T) where T is the number of transfers of the item",
                arity: 2,
                keys: ITEM_READ,
                args: &[KEY],
            },
        },
        Command {
            name: c"seckill.scan",
            entry_point: entry_point!(commands::scan, Scan),
            flags: c"readonly",
            docs: Docs {
                summary: c"Iterates over the buyers and request ids of a sale item",
                complexity: c"O(1) for every call. O(N) for a complete iteration, where N is the number of buyers and request ids",
                arity: -3,
                keys: ITEM_READ,
                args: &[
                    KEY,
                    Arg::integer(c"cursor"),
                    Arg::integer(c"count").token(c"COUNT").optional(),
                    VARIANT,
                ],
            },
        },
        Command {
            name: c"seckill.import",
            entry_point: entry_point!(commands::import, Import),
            flags: c"write deny-oom",
            docs: Docs {
                summary: c"Loads buyers and request ids into a sale item, to rebuild a lost one from the order database; replies how many",
                complexity: c"O(N) where N is the number of records given, O(N*V) into one of V variants",
                arity: -4,
                keys: ITEM_READ_AND_UPDATED,
                args: &[
                    KEY,
                    VARIANT,
                    Arg::one_of(
                        c"record",
                        &[
                            Arg::block(
                                c"buyer",
                                &[
                                    Arg::keyword(c"buyer", c"BUYER"),
                                    Arg::string(c"user"),
                                    Arg::integer(c"units"),
                                ],
                            ),
                            Arg::block(
                                c"request",
                                &[
                                    Arg::keyword(c"request", c"REQUEST"),
                                    Arg::string(c"request_id"),
                                    Arg::string(c"user"),
                                    Arg::integer(c"qty"),
                                    Arg::string(c"status"),
                                    Arg::unix_time(c"deadline"),
                                    Arg::integer(c"reply"),
                                ],
                            ),
                        ],
                    )
                    .multiple(),
                ],
            },
        },
        Command {
            name: c"seckill.loadchunk",
            entry_point: entry_point!(commands::load_chunk, LoadChunk),
            flags: c"write deny-oom",
            docs: Docs {
                summary: c"Loads part of a sale item; written by AOF rewrites, accepted only while loading or from the master",
                complexity: c"O(N) where N is the number of records in the chunk",
                arity: 3,
                keys: &[item_key(CREATES)],
                args: &[KEY, Arg::string(c"payload")],
            },
        },
        Command {
            name: c"seckill.status",
            entry_point: entry_point!(commands::status, Status),
            flags: c"readonly fast",
            docs: Docs {
                summary: c"Returns where one purchase stands: status, user, quantity and a hold's deadline",
                complexity: c"O(1)",
                arity: 3,
                keys: ITEM_READ,
                args: &[KEY, Arg::string(c"request_id")],
            },
        },
        Command {
            name: c"seckill.mdeduct",
            entry_point: entry_point!(commands::mdeduct, Mdeduct, keys: order_line_keys),
            flags: c"write deny-oom getkeys-api",
            docs: Docs {
                summary: c"Sells (or holds) units of several items to a user under one request id, every line or none; replies each line's stock or code",
                complexity: c"O(L) where L is the number of lines",
                arity: -6,
                // VARIABLE_FLAGS makes the server ask the command for its
                // keys (`order_line_keys`) for ACL checks too: Redis 7.0
                // reads a counted key spec with a step of 2 as covering
                // half the keys, and would check only those.
                keys: &[KeySpec {
                    at: KeyAt::Counted { count: 1, step: 2 },
                    flags: UPDATES_AND_READS | raw::REDISMODULE_CMD_KEY_VARIABLE_FLAGS,
                    notes: Some(c"every key of an order shares one slot"),
                }],
                args: &[
                    Arg::integer(c"numlines"),
                    Arg::block(c"line", &[Arg::key(c"key", 0), Arg::integer(c"qty")]).multiple(),
                    Arg::string(c"user"),
                    REQUEST_ID,
                    Arg::one_of(
                        c"hold",
                        &[
                            Arg::integer(c"seconds").token(c"HOLD"),
                            Arg::unix_time(c"unix-time-milliseconds").token(c"HOLDUNTIL"),
                        ],
                    )
                    .optional(),
                    Arg::block(
                        c"variant",
                        &[Arg::integer(c"line"), Arg::string(c"name")],
                    )
                    .token(c"VARIANT")
                    .optional()
                    .multiple(),
                    Arg::keyword(c"withdeadline", c"WITHDEADLINE").optional(),
                ],
            },
        },
        Command {
            name: c"seckill.mconfirm",
            entry_point: entry_point!(commands::mconfirm, Mconfirm, keys: order_keys),
            flags: c"write getkeys-api",
            docs: Docs {
                summary: c"Makes every pending hold of an order final, or none if one cannot be; replies each line's code",
                complexity: c"O(K log N) where K is the number of keys and N the number of pending holds",
                arity: -4,
                keys: ORDER_KEYS,
                args: &[
                    Arg::integer(c"numkeys"),
                    Arg::key(c"key", 0).multiple(),
                    REQUEST_ID,
                    Arg::keyword(c"detail", c"DETAIL").optional(),
                ],
            },
        },
        Command {
            name: c"seckill.mrefund",
            entry_point: entry_point!(commands::mrefund, Mrefund, keys: order_keys),
            flags: c"write getkeys-api",
            docs: Docs {
                summary: c"Gives back the units of every line of an order, once; replies each line's units or code",
                complexity: c"O(K) where K is the number of keys",
                arity: -4,
                keys: ORDER_KEYS,
                args: &[
                    Arg::integer(c"numkeys"),
                    Arg::key(c"key", 0).multiple(),
                    REQUEST_ID,
                    Arg::keyword(c"detail", c"DETAIL").optional(),
                ],
            },
        },
        Command {
            name: c"seckill.variants",
            entry_point: entry_point!(commands::variants, Variants),
            flags: c"readonly fast",
            docs: Docs {
                summary: c"Returns each variant of a sale item with its remaining stock",
                complexity: c"O(V) where V is the number of variants (64 at most)",
                arity: 2,
                keys: ITEM_READ,
                args: &[KEY],
            },
        },
];

// A table entry out of its id's place would count its calls under another
// command's name in INFO seckill.
const _: () = {
    let mut place = 0;
    while place < COMMANDS.len() {
        assert!(
            COMMANDS[place].entry_point.id as usize == place,
            "a command out of its CommandId's place"
        );
        place += 1;
    }
};

/// Puts a command in the ACL categories its flags imply (`@write` or
/// `@read`, and `@fast`), where the server has categories for module
/// commands (Redis 7.2 and later, Valkey). On 7.0 the API is missing and
/// module commands belong to no category: ACL rules must name them.
fn set_acl_categories(
    command: &registration::CommandHandle,
    ctx: &Context,
    name: &CStr,
    flags: &CStr,
) {
    let flags = flags.to_bytes();
    let has = |flag: &[u8]| flags.split(|b| *b == b' ').any(|word| word == flag);
    let categories = match (has(b"write"), has(b"fast")) {
        (true, true) => c"write fast",
        (true, false) => c"write",
        (false, true) => c"read fast",
        (false, false) => c"read",
    };
    if command.set_acl_categories(categories) == Some(false) {
        ctx.log_warning(&format!("seckill: cannot set ACL categories of {name:?}"));
    }
}

/// `INFO seckill`: the module-wide counters of `stats`, as one section
/// named after the module, each field prefixed `seckill_` by the server.
fn info_section(section: &mut InfoSection, for_crash_report: bool) {
    let names: Vec<&str> = COMMANDS
        .iter()
        .map(|command| {
            let name = command.name.to_str().unwrap_or("");
            name.strip_prefix("seckill.").unwrap_or(name)
        })
        .collect();
    let items_with_holds = hold_registry::items_watched(!for_crash_report);
    for (name, value) in stats::fields(&names, items_with_holds) {
        section.add_field(&name, value);
    }
}

fn register_commands(ctx: &Context, args: &[RedisString]) -> Status {
    if let Err(problem) = settings::check_module_arguments(args) {
        ctx.log_warning(&format!("seckill: {problem}"));
        return Status::Err;
    }
    if !registration::can_create_commands() {
        return Status::Err;
    }
    for command in &COMMANDS {
        let name = command.name;
        let Some(handle) = registration::create_command(
            ctx,
            name,
            command.entry_point,
            command.flags,
            command.docs.legacy_keys(),
        ) else {
            ctx.log_warning(&format!("seckill: cannot create command {name:?}"));
            return Status::Err;
        };
        if !handle.set_info(&command.docs) {
            ctx.log_warning(&format!("seckill: the server refused the docs of {name:?}"));
            return Status::Err;
        }
        set_acl_categories(&handle, ctx, name, command.flags);
    }
    // Loaders report short reads instead of making Redis abort, which is
    // also what lets a replica load a full sync without a temporary file.
    // Items load safely into the temporary database of an async
    // (`repl-diskless-load swapdb`) load: they are owned by their key, and
    // the sweep's registry follows the key they end at.
    // Keys are signalled as modified by the write pipeline alone: closing a
    // key opened for writing (an order stream that refused an entry) must
    // not abort a WATCH when nothing changed.
    // On Valkey 9, slots of this node can move with CLUSTER MIGRATESLOTS
    // (see `slot_migration`); elsewhere that option is 0.
    if server::context::can_set_module_options() {
        let options = raw::REDISMODULE_OPTIONS_HANDLE_IO_ERRORS
            | raw::REDISMODULE_OPTIONS_HANDLE_REPL_ASYNC_LOAD
            | raw::REDISMODULE_OPTION_NO_IMPLICIT_SIGNAL_MODIFIED;
        let options = options as std::os::raw::c_int | slot_migration::enable(ctx);
        server::context::set_module_options(ctx, options);
    }
    registration::register_info(ctx);
    server_events::subscribe(ctx);
    server_events::learn_allocator(ctx);
    server_events::warn_if_items_can_be_evicted(ctx);
    sweeper::start(ctx);
    Status::Ok
}

redis_module! {
    name: "seckill",
    version: 1,
    allocator: (allocator!(), allocator!()),
    data_types: [SALE_ITEM_TYPE],
    init: register_commands,
    // `CONFIG SET/GET seckill.<name>`, `seckill.<name> value` lines in
    // redis.conf, or `<name> value` pairs after the module's path in
    // `loadmodule`. The server refuses values out of range with its own
    // error.
    configurations: [
        i64: [
            [
                settings::SWEEP_INTERVAL.name,
                &sweeper::INTERVAL_MS,
                settings::SWEEP_INTERVAL.default,
                settings::SWEEP_INTERVAL.min,
                settings::SWEEP_INTERVAL.max,
                ConfigurationFlags::DEFAULT,
                None
            ],
            [
                settings::SWEEP_STEP_BUDGET.name,
                &sweeper::STEP_BUDGET_US,
                settings::SWEEP_STEP_BUDGET.default,
                settings::SWEEP_STEP_BUDGET.min,
                settings::SWEEP_STEP_BUDGET.max,
                ConfigurationFlags::DEFAULT,
                None
            ],
            [
                settings::MAX_ID_LENGTH.name,
                &commands::MAX_ID_LENGTH,
                settings::MAX_ID_LENGTH.default,
                settings::MAX_ID_LENGTH.min,
                settings::MAX_ID_LENGTH.max,
                ConfigurationFlags::DEFAULT,
                None
            ],
        ],
        string: [],
        bool: [],
        enum: [],
        module_args_as_configuration: true,
    ]
}
