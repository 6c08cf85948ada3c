//! The price of a spawn: the resource's rate and `rate x minutes`, with the gate's own checks of
//! both, so that the spawn form shows exactly what the gate then holds.

use super::start::Estimate;
use crate::accelerators::CPU_RESOURCE;
use crate::config::Config;
use crate::error::QuotaError;
use crate::limits;
use crate::milli::Milli;

/// What a start of `resource` (`cpu` or an accelerator key) for `runtime_minutes` would cost, with
/// the gate's own checks of both: the spawn form shows exactly what the gate then holds.
pub fn estimate(config: &Config, resource: &str, runtime_minutes: i64) -> Result<Estimate, QuotaError> {
    if !(limits::RUNTIME_MINUTES_MIN..=limits::RUNTIME_MINUTES_MAX).contains(&runtime_minutes) {
        return Err(QuotaError::invalid(
            "runtime_minutes",
            format!(
                "must be a whole number of minutes from {} to {}, got {}",
                limits::RUNTIME_MINUTES_MIN,
                limits::RUNTIME_MINUTES_MAX,
                runtime_minutes
            ),
        ));
    }
    let rate = config.rate_of(resource).ok_or_else(|| {
        let known: Vec<&str> = std::iter::once(CPU_RESOURCE)
            .chain(config.accelerators.keys().map(String::as_str))
            .collect();
        QuotaError::invalid(
            "resource_type",
            format!("unknown accelerator `{resource}` (known: {})", known.join(", ")),
        )
    })?;
    // rate <= rate_max and minutes <= 480, so this cannot overflow.
    let estimated_cost = rate.times(runtime_minutes).unwrap_or(Milli(i64::MAX));
    Ok(Estimate { rate, estimated_cost })
}
