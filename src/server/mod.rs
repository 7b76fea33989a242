//! The server boundary: the part of the module that talks to the server's
//! C API with raw pointers.
//!
//! - `api`: the `redis_api!` look-up of one module API function;
//! - [`context`]: context flags, whether replication should wait;
//! - [`command_info`]: command docs, arity and key specs, handed to the
//!   server at load;
//! - [`data_type`]: the callbacks of the `seckill--` data type;
//! - `allocator`: the module's global allocator, Redis's;
//! - [`prefetch`]: a CPU cache hint for the pure core.

#[macro_use]
mod api;

#[cfg(not(test))]
pub mod allocator;
pub mod command_info;
pub mod context;
pub mod data_type;
pub mod prefetch;
