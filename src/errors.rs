//! The error replies of the SECKILL.* commands, in one place: the
//! commands', the order stream's and the loaders'. Redis sends them
//! verbatim, so each starts with its code; where Redis itself has wording
//! for the same fault, it is reused.

use crate::sale_item::{ImportError, ItemError};
use crate::server::WrongType;
use redis_module::RedisError;

pub(crate) const ERR_NOT_INTEGER: &str = "ERR value is not an integer or out of range";
pub(crate) const ERR_NOT_POSITIVE: &str = "ERR value is out of range, must be positive";
pub(crate) const ERR_BAD_STOCK: &str =
    "ERR stock must be a non-negative integer below 9223372036854775807, or UNLIMITED";
pub(crate) const ERR_BAD_LIMIT: &str = "ERR LIMIT must be a non-negative integer";
pub(crate) const ERR_SYNTAX: &str = "ERR syntax error";
/// As Redis words it for SCAN.
pub(crate) const ERR_INVALID_CURSOR: &str = "ERR invalid cursor";
pub(crate) const ERR_OVERFLOW: &str = "ERR increment or decrement would overflow";
pub(crate) const ERR_BAD_EXPIRE: &str = "ERR invalid expire time in 'seckill.init' command";
pub(crate) const ERR_BAD_USER: &str = "ERR user id must be 1 to 128 bytes";
pub(crate) const ERR_BAD_REQUEST: &str = "ERR request id must be 1 to 128 bytes";
pub(crate) const ERR_BAD_ID: &str = "ERR user ids and request ids must be 1 to 128 bytes";
pub(crate) const ERR_FULL: &str = "ERR sale item is full: it cannot record more purchases";
pub(crate) const ERR_REQUEST_MISMATCH: &str =
    "ERR request id was already used by another user or for another quantity";
pub(crate) const ERR_ORDER_MISMATCH: &str =
    "ERR request id was already used for an order of other items";
pub(crate) const ERR_ORDER_REPEATED_KEY: &str = "ERR a key appears on more than one line";
pub(crate) const ERR_ORDER_LINES: &str = "ERR numlines must be 1 to 64";
pub(crate) const ERR_ORDER_KEYS: &str = "ERR numkeys must be 1 to 64";
pub(crate) const ERR_ORDER_VARIANT_LINE: &str =
    "ERR VARIANT takes a line number from 1 to numlines, each line once, and a variant name";
pub(crate) const ERR_VARIANT_NEEDED: &str = "ERR the item sells variants: name one with VARIANT";
pub(crate) const ERR_NO_VARIANTS: &str = "ERR the item has no variants";
pub(crate) const ERR_NO_SUCH_VARIANT: &str = "ERR no such variant";
pub(crate) const ERR_BAD_VARIANTS: &str =
    "ERR VARIANTS takes 1 to 64 name stock pairs, names of 1 to 64 bytes each named once";
pub(crate) const ERR_TRANSFER_MISMATCH: &str =
    "ERR transfer id was already used for another quantity or the other direction";
pub(crate) const ERR_UNLIMITED_TRANSFER: &str = "ERR an unlimited item moves no units";
pub(crate) const ERR_TOO_MANY_TRANSFERS: &str =
    "ERR sale item is full: it cannot record more transfers (10000 at most)";
pub(crate) const ERR_BAD_TRANSFER: &str = "ERR transfer id must be 1 to 128 bytes";
pub(crate) const ERR_TRANSFER_OTHER_VARIANT: &str =
    "ERR transfer id was already used for another variant";
pub(crate) const ERR_BAD_DESTINATION: &str = "ERR destination must be 1 to 255 bytes";
pub(crate) const ERR_WRONGTYPE: &str =
    "WRONGTYPE Operation against a key holding the wrong kind of value";
pub(crate) const ERR_NO_ITEM_TO_LOAD: &str = "ERR no sale item to load this chunk into";
pub(crate) const ERR_STORE: &str = "ERR could not store the sale item";
pub(crate) const ERR_HOLD_WITHOUT_ID: &str = "ERR HOLD requires ID";
pub(crate) const ERR_STREAM_SLOT: &str = "ERR the order stream must hash to the item's slot: \
     name it after the item in braces (sku:1 and {sku:1}:orders), or give both keys one hash \
     tag ({sku:1} and {sku:1}:orders)";
pub(crate) const ERR_STREAM_SELF: &str = "ERR the order stream cannot be the item's own key";
pub(crate) const ERR_BAD_MAXLEN: &str = "ERR MAXLEN must be a non-negative integer";
pub(crate) const ERR_BAD_HOLD: &str = "ERR invalid hold time in 'seckill.deduct' command";
pub(crate) const ERR_BAD_ORDER_HOLD: &str = "ERR invalid hold time in 'seckill.mdeduct' command";
pub(crate) const ERR_LOADCHUNK_CLIENT: &str =
    "ERR SECKILL.LOADCHUNK is only accepted while loading the AOF or from the master";
pub(crate) const ERR_BAD_WINDOW: &str =
    "ERR START and END must be non-negative Unix times in milliseconds, END after START";

pub(crate) const ERR_IMPORT_DUPLICATE: &str =
    "ERR a request id to import is in the item already, or twice in the call";
pub(crate) const ERR_IMPORT_SUPPLY: &str =
    "ERR the supply is smaller than the units the records hold";
pub(crate) const ERR_IMPORT_LIMIT: &str = "ERR the records put a user above the item's LIMIT";
pub(crate) const ERR_IMPORT_TOO_MANY: &str = "ERR at most 10000 records a call";
pub(crate) const ERR_IMPORT_STATUS: &str =
    "ERR status must be purchased, held, confirmed, refunded or lapsed";

pub(crate) const ERR_STREAM_WRONGTYPE: &str =
    "WRONGTYPE the item's order stream key holds the wrong kind of value";
pub(crate) const ERR_STREAM_FULL: &str = "ERR the item's order stream has exhausted the last \
     possible ID, unable to add more items; nothing was changed";
pub(crate) const ERR_STREAM_CROSSSLOT: &str = "CROSSSLOT the item's order stream does not hash \
     to the item's slot (was the item renamed?): set it again with SECKILL.STREAM; nothing was \
     changed";
pub(crate) const ERR_STREAM_MIGRATING: &str = "TRYAGAIN the item's order stream is missing \
     while its slot is being migrated; nothing was changed";
pub(crate) const ERR_STREAM_UNCONFIRMED: &str = "NOPERM this user has no permissions to write \
     the item's order stream, which came with a RESTORE: SECKILL.STREAM by a user who may write \
     it confirms it; nothing was changed";

/// A chunk of `SECKILL.LOADCHUNK` its decoder refused, and why.
pub(crate) fn bad_chunk(reason: &str) -> RedisError {
    RedisError::String(format!("ERR invalid sale item chunk: {reason}"))
}

/// A new user or request id (`kind`) longer than `seckill.max-id-length`.
pub(crate) fn id_too_long(kind: &str, limit: usize) -> RedisError {
    RedisError::String(format!("ERR {kind} must be 1 to {limit} bytes"))
}

impl From<ImportError> for RedisError {
    fn from(error: ImportError) -> Self {
        match error {
            ImportError::Item(error) => error.into(),
            ImportError::DuplicateRequest => RedisError::Str(ERR_IMPORT_DUPLICATE),
            ImportError::SupplyTooSmall => RedisError::Str(ERR_IMPORT_SUPPLY),
            ImportError::AboveLimit => RedisError::Str(ERR_IMPORT_LIMIT),
            ImportError::BadRecord(reason) => {
                RedisError::String(format!("ERR bad record to import: {reason}"))
            }
            ImportError::TooManyRecords => RedisError::Str(ERR_IMPORT_TOO_MANY),
        }
    }
}

impl From<WrongType> for RedisError {
    fn from(_: WrongType) -> Self {
        RedisError::Str(ERR_WRONGTYPE)
    }
}

impl From<ItemError> for RedisError {
    fn from(error: ItemError) -> Self {
        RedisError::Str(match error {
            ItemError::Overflow => ERR_OVERFLOW,
            ItemError::RequestMismatch => ERR_REQUEST_MISMATCH,
            ItemError::NonPositiveQuantity => ERR_NOT_POSITIVE,
            ItemError::BadId => ERR_BAD_ID,
            ItemError::TransferMismatch => ERR_TRANSFER_MISMATCH,
            ItemError::UnlimitedTransfer => ERR_UNLIMITED_TRANSFER,
            ItemError::TooManyTransfers => ERR_TOO_MANY_TRANSFERS,
            ItemError::Full => ERR_FULL,
            ItemError::BadWindow => ERR_BAD_WINDOW,
            ItemError::HoldWithoutId => ERR_HOLD_WITHOUT_ID,
        })
    }
}
