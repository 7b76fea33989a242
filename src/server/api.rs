//! How the rest of `server` reaches one function of the module API.

/// A Redis module API function, or `None` if this server lacks it. The
/// pointers are written once, by RedisModule_Init when the module loads.
macro_rules! redis_api {
    ($name:ident) => {
        // SAFETY: written before any command runs, never written after.
        unsafe { redis_module::raw::$name }
    };
}
