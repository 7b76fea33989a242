//! Command metadata (`COMMAND DOCS`, `COMMAND INFO`, `redis-cli` hints,
//! arity checks, key specs) in a declarative form, turned into the C
//! structures of `RedisModule_SetCommandInfo` when the module loads. The
//! table itself is in `lib.rs`, next to the entry points.

use redis_module::raw;
use std::ffi::CStr;
use std::os::raw::c_int;
use std::ptr;

/// Where a command finds a key: at a fixed argument, or after a keyword.
#[derive(Clone, Copy)]
pub enum KeyAt {
    Index(c_int),
    /// The argument after `keyword`, searched from argument `from` on.
    AfterKeyword(&'static CStr, c_int),
    /// As many keys as argument `count` says, right after it, one every
    /// `step` arguments (`numlines key qty [key qty ...]`).
    Counted {
        count: c_int,
        step: c_int,
    },
}

/// One key a command touches, and how (`REDISMODULE_CMD_KEY_*` flags).
#[derive(Clone, Copy)]
pub struct KeySpec {
    pub at: KeyAt,
    pub flags: u32,
    pub notes: Option<&'static CStr>,
}

#[derive(Clone, Copy)]
pub enum ArgKind {
    /// A key, by its index in the command's key specs.
    Key(c_int),
    Integer,
    String,
    UnixTime,
    PureToken,
    OneOf(&'static [Arg]),
    Block(&'static [Arg]),
}

/// One argument as `COMMAND DOCS` describes it.
#[derive(Clone, Copy)]
pub struct Arg {
    pub name: &'static CStr,
    pub kind: ArgKind,
    pub token: Option<&'static CStr>,
    pub optional: bool,
    pub multiple: bool,
}

impl Docs {
    /// The first key, last key and step of the command's keys, as
    /// `RedisModule_CreateCommand` takes them: the item at 1 for most
    /// commands; none for one whose keys are counted, which the server
    /// finds through its key specs instead (`movablekeys`).
    pub fn legacy_keys(&self) -> (c_int, c_int, c_int) {
        match self.keys.first().map(|spec| spec.at) {
            Some(KeyAt::Counted { .. }) => (0, 0, 0),
            _ => (1, 1, 1),
        }
    }
}

impl Arg {
    const fn new(name: &'static CStr, kind: ArgKind) -> Arg {
        Arg {
            name,
            kind,
            token: None,
            optional: false,
            multiple: false,
        }
    }

    pub const fn key(name: &'static CStr, spec: c_int) -> Arg {
        Arg::new(name, ArgKind::Key(spec))
    }

    pub const fn integer(name: &'static CStr) -> Arg {
        Arg::new(name, ArgKind::Integer)
    }

    pub const fn string(name: &'static CStr) -> Arg {
        Arg::new(name, ArgKind::String)
    }

    pub const fn unix_time(name: &'static CStr) -> Arg {
        Arg::new(name, ArgKind::UnixTime)
    }

    /// A keyword standing alone, such as `REPLACE`.
    pub const fn keyword(name: &'static CStr, token: &'static CStr) -> Arg {
        Arg::new(name, ArgKind::PureToken).token(token)
    }

    pub const fn one_of(name: &'static CStr, choices: &'static [Arg]) -> Arg {
        Arg::new(name, ArgKind::OneOf(choices))
    }

    pub const fn block(name: &'static CStr, parts: &'static [Arg]) -> Arg {
        Arg::new(name, ArgKind::Block(parts))
    }

    /// Preceded by `token` (`LIMIT n`).
    pub const fn token(mut self, token: &'static CStr) -> Arg {
        self.token = Some(token);
        self
    }

    pub const fn optional(mut self) -> Arg {
        self.optional = true;
        self
    }

    pub const fn multiple(mut self) -> Arg {
        self.multiple = true;
        self
    }
}

/// What `COMMAND DOCS` and `COMMAND INFO` say about one command.
pub struct Docs {
    pub summary: &'static CStr,
    pub complexity: &'static CStr,
    /// Positive: exactly that many arguments, the name included; negative:
    /// at least that many.
    pub arity: c_int,
    pub keys: &'static [KeySpec],
    pub args: &'static [Arg],
}

/// The module version every command appeared in.
const SINCE: &CStr = c"1.0.0";

fn opt(text: Option<&'static CStr>) -> *const std::os::raw::c_char {
    text.map_or(ptr::null(), CStr::as_ptr)
}

/// C arguments of `args`, ending in the all-zero entry Redis looks for.
/// Nested lists are kept alive in `keep` until the call is made.
fn c_args(
    args: &[Arg],
    keep: &mut Vec<Vec<raw::RedisModuleCommandArg>>,
) -> *mut raw::RedisModuleCommandArg {
    let mut list: Vec<raw::RedisModuleCommandArg> = args
        .iter()
        .map(|arg| {
            let (type_, key_spec_index, subargs) = match arg.kind {
                ArgKind::Key(spec) => (
                    raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_KEY,
                    spec,
                    ptr::null_mut(),
                ),
                ArgKind::Integer => (
                    raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_INTEGER,
                    -1,
                    ptr::null_mut(),
                ),
                ArgKind::String => (
                    raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_STRING,
                    -1,
                    ptr::null_mut(),
                ),
                ArgKind::UnixTime => (
                    raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_UNIX_TIME,
                    -1,
                    ptr::null_mut(),
                ),
                ArgKind::PureToken => (
                    raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_PURE_TOKEN,
                    -1,
                    ptr::null_mut(),
                ),
                ArgKind::OneOf(choices) => (
                    raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_ONEOF,
                    -1,
                    c_args(choices, keep),
                ),
                ArgKind::Block(parts) => (
                    raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_BLOCK,
                    -1,
                    c_args(parts, keep),
                ),
            };
            let mut flags = raw::REDISMODULE_CMD_ARG_NONE;
            if arg.optional {
                flags |= raw::REDISMODULE_CMD_ARG_OPTIONAL;
            }
            if arg.multiple {
                flags |= raw::REDISMODULE_CMD_ARG_MULTIPLE;
            }
            raw::RedisModuleCommandArg {
                name: arg.name.as_ptr(),
                type_,
                key_spec_index,
                token: opt(arg.token),
                summary: ptr::null(),
                since: ptr::null(),
                flags: flags as c_int,
                deprecated_since: ptr::null(),
                subargs,
                display_text: ptr::null(),
            }
        })
        .collect();
    // SAFETY: all-zero is the terminator Redis expects (NULL name).
    list.push(unsafe { std::mem::zeroed() });
    let pointer = list.as_mut_ptr();
    keep.push(list);
    pointer
}

fn c_key_specs(keys: &[KeySpec]) -> Vec<raw::RedisModuleCommandKeySpec> {
    let mut specs: Vec<raw::RedisModuleCommandKeySpec> = keys
        .iter()
        .map(|key| {
            // SAFETY: plain C data; every field Redis reads is set below.
            let mut spec: raw::RedisModuleCommandKeySpec = unsafe { std::mem::zeroed() };
            spec.notes = opt(key.notes);
            spec.flags = u64::from(key.flags);
            match key.at {
                KeyAt::Index(pos) => {
                    spec.begin_search_type =
                        raw::RedisModuleKeySpecBeginSearchType_REDISMODULE_KSPEC_BS_INDEX;
                    spec.bs.index.pos = pos;
                }
                KeyAt::AfterKeyword(keyword, from) => {
                    spec.begin_search_type =
                        raw::RedisModuleKeySpecBeginSearchType_REDISMODULE_KSPEC_BS_KEYWORD;
                    spec.bs.keyword.keyword = keyword.as_ptr();
                    spec.bs.keyword.startfrom = from;
                }
                KeyAt::Counted { count, step } => {
                    spec.begin_search_type =
                        raw::RedisModuleKeySpecBeginSearchType_REDISMODULE_KSPEC_BS_INDEX;
                    spec.bs.index.pos = count;
                    spec.find_keys_type =
                        raw::RedisModuleKeySpecFindKeysType_REDISMODULE_KSPEC_FK_KEYNUM;
                    spec.fk.keynum.keynumidx = 0;
                    spec.fk.keynum.firstkey = 1;
                    spec.fk.keynum.keystep = step;
                    return spec;
                }
            }
            // One key, right where the search began.
            spec.find_keys_type = raw::RedisModuleKeySpecFindKeysType_REDISMODULE_KSPEC_FK_RANGE;
            spec.fk.range.lastkey = 0;
            spec.fk.range.keystep = 1;
            spec.fk.range.limit = 0;
            spec
        })
        .collect();
    // SAFETY: all-zero is the terminator (begin_search_type 0, invalid).
    specs.push(unsafe { std::mem::zeroed() });
    specs
}

/// Hands `docs` to the server for `command`. False if the server refused
/// them (it logs why).
///
/// # Safety
/// `command` must be a command this module created, and the call must be
/// made from the module's init.
pub(super) unsafe fn set_command_info(command: *mut raw::RedisModuleCommand, docs: &Docs) -> bool {
    let Some(set_info) = redis_api!(RedisModule_SetCommandInfo) else {
        return true;
    };
    // Version 1 of the structures, the one 7.0 introduced: later servers
    // read it through these sizes.
    let version = raw::RedisModuleCommandInfoVersion {
        version: 1,
        sizeof_historyentry: std::mem::size_of::<raw::RedisModuleCommandHistoryEntry>(),
        sizeof_keyspec: std::mem::size_of::<raw::RedisModuleCommandKeySpec>(),
        sizeof_arg: std::mem::size_of::<raw::RedisModuleCommandArg>(),
    };
    let mut keep = Vec::new();
    let args = c_args(docs.args, &mut keep);
    let mut key_specs = c_key_specs(docs.keys);
    let info = raw::RedisModuleCommandInfo {
        version: &version,
        summary: docs.summary.as_ptr(),
        complexity: docs.complexity.as_ptr(),
        since: SINCE.as_ptr(),
        history: ptr::null_mut(),
        tips: ptr::null(),
        arity: docs.arity,
        key_specs: key_specs.as_mut_ptr(),
        args,
    };
    // SAFETY: every pointer lives until the call returns; Redis copies
    // what it keeps.
    unsafe { set_info(command, &info) == raw::REDISMODULE_OK as c_int }
}
