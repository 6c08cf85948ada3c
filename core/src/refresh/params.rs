//! What a refresh is asked to do: add or set, how much, within which bounds, for which users
//! (`RefreshParams`, as a rule or a REST body gives them).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::QuotaError;
use crate::limits;
use crate::targets::Targets;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RefreshAction {
    Add,
    Set,
}

impl RefreshAction {
    pub fn as_str(self) -> &'static str {
        match self {
            RefreshAction::Add => "add",
            RefreshAction::Set => "set",
        }
    }
}

/// What a refresh does (a configured rule, or a manual request).
#[derive(Clone, Debug, PartialEq)]
pub struct RefreshParams {
    pub rule_name: String,
    pub action: RefreshAction,
    pub amount: i64,
    /// Cap for a top-up (`add` with amount > 0).
    pub max_balance: Option<i64>,
    /// Floor for a deduction (`add` with amount < 0); 0 when unset.
    pub min_balance: Option<i64>,
    pub targets: Targets,
    /// Seconds: the credit a run gives (a top-up, or a `set`'s new balance) is one dated grant
    /// expiring this long after the run's time.
    pub expires_after: Option<i64>,
}

impl RefreshParams {
    pub fn validate(&self) -> Result<(), QuotaError> {
        let max = limits::AMOUNT_ABS_MAX;
        let lo = if self.action == RefreshAction::Set {
            0
        } else {
            -max
        };
        if !(lo..=max).contains(&self.amount) {
            return Err(QuotaError::invalid(
                "amount",
                format!(
                    "must be between {lo} and {max} for `{}`, got {}",
                    self.action.as_str(),
                    self.amount
                ),
            ));
        }
        if self.rule_name.is_empty() || self.rule_name.chars().count() > limits::RULE_NAME_CHARS_MAX {
            return Err(QuotaError::invalid(
                "rule_name",
                format!("must be 1 to {} characters", limits::RULE_NAME_CHARS_MAX),
            ));
        }
        if self.expires_after.is_some() && self.action == RefreshAction::Add && self.amount <= 0 {
            return Err(QuotaError::invalid(
                "expires_after",
                "makes the credit a run gives a dated grant: only with a top-up (`add` above 0) or `set`",
            ));
        }
        for (field, v) in [
            ("max_balance", self.max_balance),
            ("min_balance", self.min_balance),
        ] {
            if let Some(v) = v {
                if !(0..=limits::BALANCE_ABS_MAX).contains(&v) {
                    return Err(QuotaError::invalid(
                        field,
                        format!("must be between 0 and {}", limits::BALANCE_ABS_MAX),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Canonical JSON of the parameters (the `run_id` fingerprint).
    pub fn fingerprint(&self) -> String {
        serde_json::json!({
            "rule_name": self.rule_name,
            "action": self.action.as_str(),
            "amount": self.amount,
            "max_balance": self.max_balance,
            "min_balance": self.min_balance,
            "targets": self.targets.to_json(),
            "expires_after": self.expires_after,
        })
        .to_string()
    }

    /// The new balance for a matched user (equal to `cur` when nothing changes).
    pub fn new_balance(&self, cur: i64) -> i128 {
        let cur = i128::from(cur);
        let amount = i128::from(self.amount);
        match self.action {
            RefreshAction::Set => amount,
            RefreshAction::Add if amount > 0 => {
                let capped = match self.max_balance {
                    Some(cap) => (cur + amount).min(i128::from(cap)),
                    None => cur + amount,
                };
                // A top-up never lowers a balance that is already above the cap.
                capped.max(cur)
            }
            RefreshAction::Add if amount < 0 => {
                let floor = i128::from(self.min_balance.unwrap_or(0));
                // A deduction never raises a balance that is already below the floor.
                (cur + amount).max(floor).min(cur)
            }
            RefreshAction::Add => cur,
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct RefreshRequest {
    pub params: RefreshParams,
    /// Makes the run at-most-once.
    pub run_id: Option<String>,
    /// Compute and report, write nothing.
    pub dry_run: bool,
}

/// Reads refresh parameters from a REST body's fields (snake_case keys; `targets` in values-file
/// form). Used by the HTTP layer.
pub fn params_from_body(
    f: &mut crate::json::Fields<'_>,
    problems: &mut Vec<QuotaError>,
) -> Option<RefreshParams> {
    let action = match f.req_str("action") {
        Some("add") => Some(RefreshAction::Add),
        Some("set") => Some(RefreshAction::Set),
        Some(other) => {
            f.problem("action", format!("must be `add` or `set`, got `{other}`"));
            None
        }
        None => None,
    };
    let amount = f.req_int("amount", i64::MIN, i64::MAX);
    let rule_name = f.opt_str("rule_name").unwrap_or("manual").to_string();
    let max_balance = f.opt_int("max_balance", 0, limits::BALANCE_ABS_MAX);
    let min_balance = f.opt_int("min_balance", 0, limits::BALANCE_ABS_MAX);
    let expires_after = f.opt_str("expires_after").and_then(|text| {
        crate::lots::parse_expires_after("expires_after", text)
            .map_err(|e| problems.push(e))
            .ok()
    });
    let targets_value: Option<&Value> = f.raw("targets");
    let targets = Targets::read("targets", targets_value, problems);
    Some(RefreshParams {
        rule_name,
        action: action?,
        amount: amount?,
        max_balance,
        min_balance,
        targets,
        expires_after,
    })
}
