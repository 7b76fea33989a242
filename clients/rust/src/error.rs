//! Errors: the module's own, sorted into kinds that every seckill client
//! library names alike, or any other error of the connection.

use std::fmt;

/// What kind of fault the module reported. Decided from the server's
/// error text in this one place.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// A request id reused for another user or another quantity, or a
    /// transfer id reused for another quantity or direction.
    RequestIdConflict,
    /// The item's order stream cannot take the write's event; nothing
    /// changed. Retryable when the code is `TRYAGAIN`.
    OrderStream,
    /// The item's ledger reached its bound.
    ItemFull,
    /// The item key holds another type.
    WrongType,
    /// The ACL user may not write a key the command names.
    NoPermission,
    /// A bad argument: syntax, a range, an id length, a sale window.
    InvalidArgument,
}

impl ErrorKind {
    /// The name all seckill client libraries use (`REQUEST_ID_CONFLICT`, ...).
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::RequestIdConflict => "REQUEST_ID_CONFLICT",
            ErrorKind::OrderStream => "ORDER_STREAM",
            ErrorKind::ItemFull => "ITEM_FULL",
            ErrorKind::WrongType => "WRONG_TYPE",
            ErrorKind::NoPermission => "NO_PERMISSION",
            ErrorKind::InvalidArgument => "INVALID_ARGUMENT",
        }
    }

    /// The kind of a server error, by its code and text; `None` for errors
    /// that are not the module's (`MOVED`, `OOM`, `READONLY`, ...).
    pub fn of_server_error(code: &str, message: &str) -> Option<ErrorKind> {
        Some(
            if message.contains("request id was already used")
                || message.contains("transfer id was already used")
            {
                ErrorKind::RequestIdConflict
            } else if message.contains("the item's order stream") {
                ErrorKind::OrderStream
            } else if message.contains("sale item is full") {
                ErrorKind::ItemFull
            } else {
                match code {
                    "WRONGTYPE" => ErrorKind::WrongType,
                    "NOPERM" => ErrorKind::NoPermission,
                    "ERR" => ErrorKind::InvalidArgument,
                    _ => return None,
                }
            },
        )
    }
}

/// An error reply of the module.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SeckillError {
    pub kind: ErrorKind,
    /// The leading word of the reply: `ERR`, `WRONGTYPE`, `TRYAGAIN`, ...
    pub code: String,
    /// The text after the code, the same in every client library.
    pub message: String,
}

impl SeckillError {
    /// True when the same call may succeed if sent again as is.
    pub fn retryable(&self) -> bool {
        self.code == "TRYAGAIN"
    }
}

impl fmt::Display for SeckillError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.code, self.message)
    }
}

impl std::error::Error for SeckillError {}

/// Any error of a seckill call.
#[derive(Debug)]
pub enum Error {
    /// The module refused the call; nothing changed.
    Seckill(SeckillError),
    /// Anything else: the connection, a redirection, the server's state.
    Redis(redis::RedisError),
}

impl From<redis::RedisError> for Error {
    fn from(err: redis::RedisError) -> Error {
        let (Some(code), message) = (err.code(), err.detail().unwrap_or("")) else {
            return Error::Redis(err);
        };
        match ErrorKind::of_server_error(code, message) {
            Some(kind) => Error::Seckill(SeckillError {
                kind,
                code: code.to_owned(),
                message: message.to_owned(),
            }),
            None => Error::Redis(err),
        }
    }
}

impl Error {
    /// The module's error, if it was one.
    pub fn seckill(&self) -> Option<&SeckillError> {
        match self {
            Error::Seckill(err) => Some(err),
            Error::Redis(_) => None,
        }
    }

    pub fn kind(&self) -> Option<ErrorKind> {
        self.seckill().map(|err| err.kind)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Seckill(err) => err.fmt(f),
            Error::Redis(err) => err.fmt(f),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Seckill(err) => Some(err),
            Error::Redis(err) => Some(err),
        }
    }
}

pub type Result<T> = std::result::Result<T, Error>;
