//! What the module declares to the server when it loads: its commands,
//! their docs and ACL categories, and its `INFO` section.

use super::command_info::{set_command_info, Docs};
use super::EntryPoint;
use redis_module::{raw, Context};
use std::ffi::{CStr, CString};
use std::marker::PhantomData;
use std::os::raw::c_int;

/// True if the server can create module commands and hand them back.
pub fn can_create_commands() -> bool {
    redis_api!(RedisModule_CreateCommand).is_some() && redis_api!(RedisModule_GetCommand).is_some()
}

/// A command this module created, in its init (`'ctx`).
pub struct CommandHandle<'ctx> {
    command: *mut raw::RedisModuleCommand,
    _init: PhantomData<&'ctx Context>,
}

/// Creates the command `name` (static, as the server keeps it) running
/// `entry_point`, with the server's command `flags`, from the module's
/// init; `None` if the server refused.
pub fn create_command<'ctx>(
    ctx: &'ctx Context,
    name: &'static CStr,
    entry_point: EntryPoint,
    flags: &'static CStr,
    (first_key, last_key, key_step): (c_int, c_int, c_int),
) -> Option<CommandHandle<'ctx>> {
    let (Some(create_command), Some(get_command)) = (
        redis_api!(RedisModule_CreateCommand),
        redis_api!(RedisModule_GetCommand),
    ) else {
        return None;
    };
    // SAFETY: static NUL-terminated strings and a matching entry point; the
    // server refuses a command created outside the module's init.
    let created = unsafe {
        create_command(
            ctx.get_raw(),
            name.as_ptr(),
            Some(entry_point.call),
            flags.as_ptr(),
            first_key,
            last_key,
            key_step,
        )
    };
    // SAFETY: a static name; NULL unless it is this module's command.
    let command = unsafe { get_command(ctx.get_raw(), name.as_ptr()) };
    (created == raw::REDISMODULE_OK as c_int && !command.is_null()).then_some(CommandHandle {
        command,
        _init: PhantomData,
    })
}

impl CommandHandle<'_> {
    /// Hands `docs` to the server. False if the server refused them (it
    /// logs why).
    pub fn set_info(&self, docs: &Docs) -> bool {
        // SAFETY: a command this module created; the server creates them
        // only in the module's init, and the handle cannot outlive it.
        unsafe { set_command_info(self.command, docs) }
    }

    /// Puts the command in the ACL `categories`; `None` where the server
    /// has no categories for module commands, false if it refused.
    pub fn set_acl_categories(&self, categories: &CStr) -> Option<bool> {
        let set_categories = redis_api!(RedisModule_SetCommandACLCategories)?;
        // SAFETY: a command this module just created, and a NUL-terminated
        // list.
        Some(
            unsafe { set_categories(self.command, categories.as_ptr()) }
                == raw::REDISMODULE_OK as c_int,
        )
    }
}

/// The module's section of `INFO`, being written by `crate::info_section`.
pub struct InfoSection<'a> {
    ctx: *mut raw::RedisModuleInfoCtx,
    add_field: unsafe extern "C" fn(
        *mut raw::RedisModuleInfoCtx,
        *const std::os::raw::c_char,
        std::os::raw::c_ulonglong,
    ) -> c_int,
    _call: PhantomData<&'a mut raw::RedisModuleInfoCtx>,
}

impl InfoSection<'_> {
    /// Adds the field `name` (prefixed with the module's name by the
    /// server); nothing for a name with a NUL.
    pub fn add_field(&mut self, name: &str, value: u64) {
        if let Ok(name) = CString::new(name) {
            // SAFETY: the server's context for this callback, and a
            // NUL-terminated name.
            unsafe { (self.add_field)(self.ctx, name.as_ptr(), value as _) };
        }
    }
}

/// Makes `crate::info_section` the module's `INFO` section; it replaces the
/// crate's default one.
pub fn register_info(ctx: &Context) {
    if let Some(register_info) = redis_api!(RedisModule_RegisterInfoFunc) {
        // SAFETY: a callback with the RedisModuleInfoFunc signature.
        unsafe { register_info(ctx.get_raw(), Some(info)) };
    }
}

extern "C" fn info(ctx: *mut raw::RedisModuleInfoCtx, for_crash_report: c_int) {
    let (Some(add_section), Some(add_field)) = (
        redis_api!(RedisModule_InfoAddSection),
        redis_api!(RedisModule_InfoAddFieldULongLong),
    ) else {
        return;
    };
    // SAFETY: the context is the server's for this callback; the section
    // name is empty (the module's name).
    if unsafe { add_section(ctx, c"".as_ptr()) } != raw::REDISMODULE_OK as c_int {
        return; // another section was asked for
    }
    let mut section = InfoSection {
        ctx,
        add_field,
        _call: PhantomData,
    };
    crate::info_section(&mut section, for_crash_report != 0);
}
