//! How far a caller reaches on the admin routes: a quota admin every user and budget; course
//! staff (`quota:manage!group=<g>`) the members of their groups and the budgets those groups share,
//! and no action only a quota admin may take (unlimited, refresh rules, budget definitions). A
//! request outside its reach is a 403 before anything is written.

use std::collections::BTreeSet;

use super::caller::Caller;
use crate::budgets;
use crate::config::Config;
use crate::error::QuotaError;
use crate::groups;
use crate::names::normalize_username;
use crate::store::Store;

/// Who a caller may act on.
pub(super) enum Reach {
    /// A quota admin: everyone.
    All,
    /// Course staff: the members of these groups and the budgets they share.
    Groups(BTreeSet<String>),
}

impl Reach {
    pub(super) fn of(caller: &Caller) -> Reach {
        if caller.is_quota_admin() {
            Reach::All
        } else {
            Reach::Groups(caller.managed_groups())
        }
    }

    /// The groups of a manager (`None`: a quota admin).
    pub(super) fn groups(&self) -> Option<&BTreeSet<String>> {
        match self {
            Reach::All => None,
            Reach::Groups(g) => Some(g),
        }
    }

    /// Whether `username` is within reach: a member of one of the manager's groups.
    pub(super) fn has_user(&self, store: &mut dyn Store, username: &str) -> Result<bool, QuotaError> {
        let Reach::Groups(mine) = self else {
            return Ok(true);
        };
        let name = normalize_username("username", username)?;
        Ok(groups::of(store, &name)?.iter().any(|g| mine.contains(g)))
    }

    /// [`Reach::has_user`], or the 403 that names the user.
    pub(super) fn user(&self, store: &mut dyn Store, username: &str) -> Result<(), QuotaError> {
        if self.has_user(store, username)? {
            return Ok(());
        }
        Err(QuotaError::Forbidden(format!(
            "{username} is not a member of a group you manage"
        )))
    }

    /// Whether budget `name` is within reach: its `groups` include one of the manager's.
    pub(super) fn has_budget(
        &self,
        config: &Config,
        store: &mut dyn Store,
        name: &str,
    ) -> Result<bool, QuotaError> {
        let Reach::Groups(mine) = self else {
            return Ok(true);
        };
        Ok(
            budgets::find(config, store, name)?
                .is_some_and(|b| b.def.groups.iter().any(|g| mine.contains(g))),
        )
    }

    /// [`Reach::has_budget`], or the 403 that names the budget.
    pub(super) fn budget(
        &self,
        config: &Config,
        store: &mut dyn Store,
        name: &str,
    ) -> Result<(), QuotaError> {
        if self.has_budget(config, store, name)? {
            return Ok(());
        }
        Err(QuotaError::Forbidden(format!(
            "budget {name} is not shared by a group you manage"
        )))
    }

    /// The 403 of an action only a quota admin may take, for course staff.
    pub(super) fn admin_only(&self, what: &str) -> Result<(), QuotaError> {
        match self {
            Reach::All => Ok(()),
            Reach::Groups(_) => Err(QuotaError::Forbidden(format!("only a quota admin may {what}"))),
        }
    }
}
