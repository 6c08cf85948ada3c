//! How far a caller reaches on the admin routes: a quota admin every user and budget; course
//! staff (`quota:manage!group=<g>`) the members of their groups and the budgets those groups share,
//! and no action only a quota admin may take (unlimited, refresh rules, budget definitions). Course
//! staff never act on their own account (separation of duties): no change of their own credit and
//! no decision on a request they made, even as a member of a group they manage; another manager
//! of the group or a quota admin does it. A request outside its reach is a 403 before anything is
//! written.

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
    /// Course staff: the members of these groups and the budgets they share, never themselves
    /// (`me`: the caller's name as usernames are compared).
    Groups { groups: BTreeSet<String>, me: String },
}

impl Reach {
    pub(super) fn of(caller: &Caller) -> Reach {
        if caller.is_quota_admin() {
            Reach::All
        } else {
            Reach::Groups {
                groups: caller.managed_groups(),
                me: caller.name.trim().to_lowercase(),
            }
        }
    }

    /// The groups of a manager (`None`: a quota admin).
    pub(super) fn groups(&self) -> Option<&BTreeSet<String>> {
        match self {
            Reach::All => None,
            Reach::Groups { groups, .. } => Some(groups),
        }
    }

    /// Whether `username` is within reach: a member of one of the manager's groups.
    pub(super) fn has_user(&self, store: &mut dyn Store, username: &str) -> Result<bool, QuotaError> {
        let Reach::Groups { groups: mine, .. } = self else {
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
        let Reach::Groups { groups: mine, .. } = self else {
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
            Reach::Groups { .. } => Err(QuotaError::Forbidden(format!("only a quota admin may {what}"))),
        }
    }

    /// [`Reach::user`] for a change of `username`'s own credit: course staff never change their
    /// own (a 403 naming who can).
    pub(super) fn change_of(&self, store: &mut dyn Store, username: &str) -> Result<(), QuotaError> {
        if let Reach::Groups { me, .. } = self {
            if normalize_username("username", username).is_ok_and(|n| &n == me) {
                return Err(QuotaError::Forbidden(
                    "course staff do not change their own credit: another manager of your group or a \
                     quota admin does it; nothing was changed"
                        .into(),
                ));
            }
        }
        self.user(store, username)
    }

    /// Course staff never decide a credit request they made themselves (a 403 naming who can).
    pub(super) fn decide_request_of(&self, requester: &str) -> Result<(), QuotaError> {
        match self {
            Reach::Groups { me, .. } if requester.to_lowercase() == *me => Err(QuotaError::Forbidden(
                "you made this credit request: another manager of the group or a quota admin decides \
                 it; nothing was changed"
                    .into(),
            )),
            _ => Ok(()),
        }
    }

    /// Course staff's allowances for this call (`None`: a quota admin, bounded by the amount
    /// limits only).
    pub(super) fn allowances<'c>(
        &self,
        config: &'c Config,
        now: crate::time::Timestamp,
    ) -> Option<crate::staff_allowance::Allowances<'c>> {
        match self {
            Reach::All => None,
            Reach::Groups { groups, me } => Some(crate::staff_allowance::Allowances::new(
                config,
                me,
                groups.clone(),
                now,
            )),
        }
    }
}
