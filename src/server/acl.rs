//! The server's own ACL check, for a command the module did not receive.

use super::Strings;
use redis_module::{raw, Context};
use std::os::raw::c_int;

/// True if the client running this command could run `command` (its name
/// and arguments) itself, judged by the server's ACL check with the
/// command and its keys in one selector. Clients Redis does not list
/// (timers, scripts, other modules' calls) are not known to be allowed,
/// and are refused.
pub fn caller_may_run(ctx: &Context, command: &[&[u8]]) -> bool {
    let (Some(client_id), Some(user_name_of), Some(find_user), Some(check), Some(free_user)) = (
        redis_api!(RedisModule_GetClientId),
        redis_api!(RedisModule_GetClientUserNameById),
        redis_api!(RedisModule_GetModuleUserFromUserName),
        redis_api!(RedisModule_ACLCheckCommandPermissions),
        redis_api!(RedisModule_FreeModuleUser),
    ) else {
        return false;
    };
    // SAFETY: the context is valid for the duration of the command; a
    // client that is not listed gives NULL, never a dangling user.
    let user_name = unsafe { user_name_of(ctx.get_raw(), client_id(ctx.get_raw())) };
    if user_name.is_null() {
        return false;
    }
    // SAFETY: a string the server made for this module in `ctx`, freed
    // when `user_name` goes, right after the look-up.
    let user_name = unsafe { super::OwnedString::from_raw(ctx, user_name) };
    // SAFETY: a live user name; the user is freed below.
    let user = unsafe { find_user(user_name.as_arg().as_ptr()) };
    drop(user_name);
    if user.is_null() {
        return false;
    }
    let allowed = Strings::new(ctx, command).is_some_and(|mut argv| {
        // SAFETY: a live user and `argv.len()` live strings.
        let status = unsafe { check(user, argv.as_mut_ptr(), argv.len() as c_int) };
        status == raw::REDISMODULE_OK as c_int
    });
    // SAFETY: found above, not used after this.
    unsafe { free_user(user) };
    allowed
}
