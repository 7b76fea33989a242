//! The module's settings (`CONFIG GET seckill.*`), their defaults and
//! ranges, and the check of those given after the module's path.

use crate::{sale_item, sweeper};
use redis_module::RedisString;

/// One numeric setting: `seckill.<name>`, its default and its range.
pub struct Setting {
    pub name: &'static str,
    pub default: i64,
    pub min: i64,
    pub max: i64,
}

pub const SWEEP_INTERVAL: Setting = Setting {
    name: "sweep-interval-ms",
    default: sweeper::DEFAULT_INTERVAL_MS,
    min: 1,
    max: 60_000,
};
pub const SWEEP_STEP_BUDGET: Setting = Setting {
    name: "sweep-step-budget-us",
    default: sweeper::DEFAULT_STEP_BUDGET_US,
    min: 50,
    max: 100_000,
};
pub const MAX_ID_LENGTH: Setting = Setting {
    name: "max-id-length",
    default: sale_item::MAX_ID_LEN as i64,
    min: 1,
    max: sale_item::MAX_ID_LEN as i64,
};
const SETTINGS: [Setting; 3] = [SWEEP_INTERVAL, SWEEP_STEP_BUDGET, MAX_ID_LENGTH];

/// Checks the `name value` pairs given after the module's path in
/// `loadmodule`: the crate takes them as the settings' first values
/// without the range checks `CONFIG SET` applies, so the module refuses to
/// load on an unknown name, a missing value or one out of range.
pub fn check_module_arguments(args: &[RedisString]) -> Result<(), String> {
    let mut args = args.iter().map(|arg| arg.to_string_lossy());
    let mut given = Vec::new();
    while let Some(name) = args.next() {
        let Some(setting) = SETTINGS.iter().find(|setting| setting.name == name) else {
            return Err(format!("unknown module argument {name:?}"));
        };
        // Only one of two values would apply: which one is not the
        // operator's to guess.
        if given.contains(&setting.name) {
            return Err(format!("module argument {name} given twice"));
        }
        given.push(setting.name);
        let Some(value) = args.next() else {
            return Err(format!("module argument {name} needs a value"));
        };
        match value.parse::<i64>() {
            Ok(number) if (setting.min..=setting.max).contains(&number) => {}
            _ => {
                return Err(format!(
                    "module argument {name} must be an integer from {} to {}, not {value:?}",
                    setting.min, setting.max
                ))
            }
        }
    }
    Ok(())
}
