//! The server boundary: the only part of the module that talks to the
//! server's C API with raw pointers, and the only place in the crate that
//! writes `unsafe`.
//!
//! Everything else reaches the server through the safe types and functions
//! here, whose lifetimes say how long what the server lent stays valid: an
//! [`Arg`] cannot outlive the call that passed it, an [`ItemKey`] or a
//! [`StreamKey`] the context it was opened in, an [`OwnedString`] the
//! context it was made in (and it frees itself). The C callbacks the server
//! calls (command entry points, the data type's methods, server events,
//! timers, the `INFO` section) are shims here that turn Redis's pointers
//! into those types and call the safe Rust code that does the work.
//!
//! - `api`: the `redis_api!` look-up of one module API function;
//! - [`arg`], [`string`]: strings lent by the server, and made for it;
//! - [`key`]: the sale item at a key, an order stream's key;
//! - [`context`]: context flags, the clock, databases and their scan,
//!   module options, timers;
//! - [`notify`]: keyspace events, WATCH signals, XADD replication;
//! - [`acl`]: the server's ACL check of a command the module did not get;
//! - [`reply`]: replies written piece by piece;
//! - [`entry`], [`registration`], [`command_info`]: commands, their docs,
//!   ACL categories and the `INFO` section, declared at load;
//! - [`data_type`]: the callbacks of the `seckill--` data type;
//! - [`events`]: keyspace and server events;
//! - `allocator`: the module's global allocator, Redis's;
//! - [`prefetch`]: a CPU cache hint for the pure core.

#[macro_use]
mod api;

pub mod acl;
#[cfg(not(test))]
pub mod allocator;
pub mod arg;
pub mod command_info;
pub mod context;
pub mod data_type;
pub mod entry;
pub mod events;
pub mod key;
pub mod notify;
pub mod prefetch;
pub mod registration;
pub mod reply;
pub mod string;

pub use arg::Arg;
pub use context::{now_ms, selected_db};
pub(crate) use entry::entry_point;
pub use entry::EntryPoint;
pub use key::{ItemKey, StreamKey, WrongType};
pub use notify::signal_modified;
pub use string::{Keyword, OwnedString, Strings};
