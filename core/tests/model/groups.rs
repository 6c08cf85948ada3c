//! The membership operations of the model test: reports, group changes, snapshots.

use std::collections::{BTreeMap, BTreeSet};

use quota_core::groups::{self as qgroups, MemberChange};
use quota_core::QuotaError;

use crate::reference::*;
use crate::{Done, Step, GROUP_NAMES, USERS};

/// Group membership: a report, a group change, or a snapshot.
pub fn groups(s: Step<'_, '_>) -> Result<Done, String> {
    let Step {
        rng,
        tx,
        m,
        t,
        user,
        step,
        ..
    } = s;
    let user = user.to_string();
    let what: String;

    // group membership: a report, a group change, or a snapshot
    let g = GROUP_NAMES[rng.below(3) as usize];
    let members: BTreeSet<String> = USERS
        .iter()
        .filter(|_| rng.chance(40))
        .map(|u| u.to_string())
        .collect();
    let refused: Option<QuotaError> = None;
    match rng.below(4) {
        0 => {
            let set = some_groups(&mut *rng);
            what = format!("report({user}, {set:?})");
            qgroups::report(tx.store(), &user, &set, t).map_err(|e| format!("step {step} {what}: {e}"))?;
            if !set.is_empty() || m.groups.contains_key(&user) {
                m.groups.insert(user.clone(), set);
            }
        }
        1 => {
            what = format!("set_members({g}, {members:?})");
            qgroups::change_members(tx.store(), g, &MemberChange::Set(members.clone()), t)
                .map_err(|e| format!("step {step} {what}: {e}"))?;
            for u in USERS {
                let has = m.groups.get(u).is_some_and(|s| s.contains(g));
                if members.contains(u) && !has {
                    m.groups.entry(u.to_string()).or_default().insert(g.to_string());
                } else if !members.contains(u) && has {
                    m.groups.entry(u.to_string()).or_default().remove(g);
                }
            }
        }
        2 => {
            let add = rng.chance(50);
            what = format!("{}({g}, {members:?})", if add { "add" } else { "remove" });
            let change = if add {
                MemberChange::Add(members.clone())
            } else {
                MemberChange::Remove(members.clone())
            };
            qgroups::change_members(tx.store(), g, &change, t)
                .map_err(|e| format!("step {step} {what}: {e}"))?;
            for u in &members {
                let has = m.groups.get(u).is_some_and(|s| s.contains(g));
                if add && !has {
                    m.groups.entry(u.clone()).or_default().insert(g.to_string());
                } else if !add && has {
                    m.groups.entry(u.clone()).or_default().remove(g);
                }
            }
        }
        _ => {
            let complete = rng.chance(50);
            let snapshot: BTreeMap<String, BTreeSet<String>> = members
                .iter()
                .map(|u| (u.clone(), some_groups(&mut *rng)))
                .collect();
            what = format!("replace({snapshot:?}, complete={complete})");
            qgroups::replace(tx.store(), &snapshot, complete, t)
                .map_err(|e| format!("step {step} {what}: {e}"))?;
            if complete {
                for (u, set) in m.groups.iter_mut() {
                    if !snapshot.contains_key(u) {
                        set.clear();
                    }
                }
            }
            for (u, set) in snapshot {
                if !set.is_empty() || m.groups.contains_key(&u) {
                    m.groups.insert(u, set);
                }
            }
        }
    }
    Ok((what, refused))
}
