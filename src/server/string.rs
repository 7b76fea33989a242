//! Strings this module makes for the server, freed when they go.

use super::Arg;
use redis_module::{raw, Context};
use std::ffi::CStr;
use std::marker::PhantomData;
use std::sync::OnceLock;

/// Makes a Redis string of `bytes` in `ctx`, which frees it later.
fn create(ctx: *mut raw::RedisModuleCtx, bytes: &[u8]) -> Option<*mut raw::RedisModuleString> {
    let create = redis_api!(RedisModule_CreateString)?;
    // SAFETY: a string made from a live buffer, in a live context.
    Some(unsafe { create(ctx, bytes.as_ptr().cast(), bytes.len()) })
}

/// # Safety
/// `string` must have been made by this module in `ctx` (or with no
/// context) and must not be used after this.
unsafe fn free(ctx: *mut raw::RedisModuleCtx, string: *mut raw::RedisModuleString) {
    if let Some(free) = redis_api!(RedisModule_FreeString) {
        // SAFETY: as the caller promises.
        unsafe { free(ctx, string) };
    }
}

/// One Redis string this module made in a context, freed on drop; it
/// cannot outlive the context (`'ctx`).
pub struct OwnedString<'ctx> {
    ctx: *mut raw::RedisModuleCtx,
    /// Lent only as `&Arg`, whose methods tie what they read to the borrow.
    string: Arg<'ctx>,
    _ctx: PhantomData<&'ctx Context>,
}

impl<'ctx> OwnedString<'ctx> {
    /// A copy of `bytes`, or `None` if the server cannot make strings.
    pub fn new(ctx: &'ctx Context, bytes: &[u8]) -> Option<OwnedString<'ctx>> {
        let string = create(ctx.get_raw(), bytes)?;
        // SAFETY: made just above, freed only when the result goes.
        Some(unsafe { OwnedString::from_raw(ctx, string) })
    }

    /// Takes over a string the server made for this module in `ctx`.
    ///
    /// # Safety
    /// `string` must be a valid string the module owns and frees in `ctx`,
    /// used by nothing else after this.
    pub(super) unsafe fn from_raw(
        ctx: &'ctx Context,
        string: *mut raw::RedisModuleString,
    ) -> OwnedString<'ctx> {
        OwnedString {
            ctx: ctx.get_raw(),
            // SAFETY: alive until `drop` frees it, as the caller promises.
            string: unsafe { Arg::from_ptr(string) },
            _ctx: PhantomData,
        }
    }

    pub fn as_arg(&self) -> &Arg<'_> {
        &self.string
    }
}

impl Drop for OwnedString<'_> {
    fn drop(&mut self) {
        // SAFETY: made by this module in this context; it goes with `self`.
        unsafe { free(self.ctx, self.string.as_ptr()) };
    }
}

/// Redis strings this module made in a context, as one array (the fields
/// of a stream entry, a command to check): freed together on drop.
pub struct Strings<'ctx> {
    ctx: *mut raw::RedisModuleCtx,
    strings: Vec<*mut raw::RedisModuleString>,
    _ctx: PhantomData<&'ctx Context>,
}

impl<'ctx> Strings<'ctx> {
    /// One string per part, or `None` (nothing kept) if the server cannot
    /// make strings.
    pub fn new(ctx: &'ctx Context, parts: &[&[u8]]) -> Option<Strings<'ctx>> {
        let mut strings = Strings {
            ctx: ctx.get_raw(),
            strings: Vec::with_capacity(parts.len()),
            _ctx: PhantomData,
        };
        for part in parts {
            strings.strings.push(create(strings.ctx, part)?);
        }
        Some(strings)
    }

    pub fn len(&self) -> usize {
        self.strings.len()
    }

    /// The array, for a call of the module API while `self` lives.
    pub(super) fn as_mut_ptr(&mut self) -> *mut *mut raw::RedisModuleString {
        self.strings.as_mut_ptr()
    }

    pub(super) fn as_ptr(&self) -> *const *mut raw::RedisModuleString {
        self.strings.as_ptr()
    }
}

impl Drop for Strings<'_> {
    fn drop(&mut self) {
        for &string in &self.strings {
            // SAFETY: made by this module in this context; they go with
            // `self`, and the server copies what it keeps of them.
            unsafe { free(self.ctx, string) };
        }
    }
}

/// A keyword replicated often (`ID`, `HOLDUNTIL`, `AT` of a rewritten
/// DEDUCT): one Redis string made on first use and kept for the life of
/// the process, lent to every command that replicates it. Making and
/// freeing one per call cost a rewritten hold a tenth of its time.
pub struct Keyword {
    text: &'static CStr,
    string: OnceLock<KeptString>,
}

/// A string made with no context, never freed.
struct KeptString(*mut raw::RedisModuleString);

// SAFETY: made and used only on the server's main thread, which runs the
// commands that replicate it; the pointer is never freed, so it stays
// valid wherever it is read from.
unsafe impl Send for KeptString {}
// SAFETY: as above.
unsafe impl Sync for KeptString {}

impl Keyword {
    pub const fn new(text: &'static CStr) -> Keyword {
        Keyword {
            text,
            string: OnceLock::new(),
        }
    }

    pub fn text(&self) -> &'static [u8] {
        self.text.to_bytes()
    }

    /// The keyword's string, or `None` if the server cannot make strings.
    pub fn string(&self) -> Option<*mut raw::RedisModuleString> {
        if let Some(kept) = self.string.get() {
            return Some(kept.0);
        }
        let made = create(std::ptr::null_mut(), self.text())?;
        Some(self.string.get_or_init(|| KeptString(made)).0)
    }
}
