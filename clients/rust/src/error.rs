//! Errors: the module's own and a server's refusal to take writes now,
//! sorted into kinds that every seckill client library names alike, or any
//! other error of the connection.

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
    /// The server could not take the write now, or the connection was lost
    /// during the call: send the same call again, to the current master.
    /// Always retryable. See `Error::Unavailable`.
    Unavailable,
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
            ErrorKind::Unavailable => "UNAVAILABLE",
        }
    }

    /// The kind of a server error, by its code and text: the module's
    /// own, or `Unavailable` for a server that cannot take writes now
    /// (`NOREPLICAS`, `READONLY`, `MASTERDOWN`, `LOADING`); `None` for any
    /// other (`MOVED`, `OOM`, ...).
    pub fn of_server_error(code: &str, message: &str) -> Option<ErrorKind> {
        Some(
            if matches!(code, "NOREPLICAS" | "READONLY" | "MASTERDOWN" | "LOADING") {
                ErrorKind::Unavailable
            } else if message.contains("request id was already used")
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
    /// Kind `Unavailable`, retryable: send the same call again, to the
    /// current master. Either the server refused to run it now, with a code
    /// (`NOREPLICAS`: too few replicas for `min-replicas-to-write`;
    /// `READONLY`: a replica, e.g. after a failover; `MASTERDOWN`,
    /// `LOADING`), and nothing changed; or the connection was lost during
    /// the call, with no code, and the write may or may not have happened:
    /// sent again with the same request id, it happens once.
    Unavailable(redis::RedisError),
    /// Anything else: a redirection, the server's state, the client's
    /// own errors.
    Redis(redis::RedisError),
}

impl From<redis::RedisError> for Error {
    fn from(err: redis::RedisError) -> Error {
        let (Some(code), message) = (err.code(), err.detail().unwrap_or("")) else {
            return if err.is_connection_dropped() {
                Error::Unavailable(err)
            } else {
                Error::Redis(err)
            };
        };
        match ErrorKind::of_server_error(code, message) {
            Some(ErrorKind::Unavailable) => Error::Unavailable(err),
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
            Error::Unavailable(_) | Error::Redis(_) => None,
        }
    }

    /// The kind of a module error or of `Unavailable`; `None` for the
    /// client's other errors.
    pub fn kind(&self) -> Option<ErrorKind> {
        match self {
            Error::Seckill(err) => Some(err.kind),
            Error::Unavailable(_) => Some(ErrorKind::Unavailable),
            Error::Redis(_) => None,
        }
    }

    /// True when the same call may succeed if sent again as is: a
    /// retryable module error (`TRYAGAIN`), or `Unavailable`.
    pub fn retryable(&self) -> bool {
        match self {
            Error::Seckill(err) => err.retryable(),
            Error::Unavailable(_) => true,
            Error::Redis(_) => false,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Seckill(err) => err.fmt(f),
            Error::Unavailable(err) | Error::Redis(err) => err.fmt(f),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Seckill(err) => Some(err),
            Error::Unavailable(err) | Error::Redis(err) => Some(err),
        }
    }
}

pub type Result<T> = std::result::Result<T, Error>;
