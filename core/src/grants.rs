//! Dated grants over the store (credit model 2, "Dated grants"): an account's due expiries written
//! before any write of its own, a dated grant made, a charge drawn in the spending order, the whole
//! credit replaced by a `set`. Each writes its ledger rows through `ledger`, so the balance stays
//! the sum of the account's transactions; `lots` holds the arithmetic.

use crate::engine_call::EngineCall;
use crate::error::QuotaError;
use crate::ledger::{self, Account, BudgetAccount, Entry};
use crate::limits;
use crate::lots;
use crate::store::{AccountKey, Grant, NewGrant, Store, TransactionType, UserRecord};
use crate::time::Timestamp;

/// The description of an `expire` transaction.
pub fn expire_description(grant_id: i64) -> String {
    format!("Grant {grant_id} expired")
}

/// Writes the `expire` transactions `user`'s personal account owes at `now`: one per due grant,
/// in the order the expiries came, each dated at its expiry (`amount = -remaining`), the grant then
/// holding nothing. Returns the grants still live at `now` (the ones a charge may draw from).
/// Every write to an account calls this (or [`settle_with`]) first, so its own effect comes after.
pub fn settle_user(
    tx: &mut EngineCall<'_>,
    user: &mut UserRecord,
    now: Timestamp,
) -> Result<Vec<Grant>, QuotaError> {
    let grants = tx.account_grants(&user.key())?;
    settle_with(tx, user, grants, now)
}

/// [`settle_user`] for any account, with its grants read already (a caller that decided on the
/// balance as of now before writing anything: a refused request writes nothing, expiries
/// included).
pub fn settle_with<A: Account + ?Sized>(
    tx: &mut EngineCall<'_>,
    account: &mut A,
    grants: Vec<Grant>,
    now: Timestamp,
) -> Result<Vec<Grant>, QuotaError> {
    let due: Vec<(i64, i64, Timestamp)> = lots::due(&grants, now)
        .iter()
        .map(|g| (g.grant_id, g.remaining, g.expires_at))
        .collect();
    if !due.is_empty() {
        for (grant_id, remaining, at) in &due {
            let after = ledger::checked_balance(
                i128::from(account.balance()) - i128::from(*remaining),
                "an expiry",
            )?;
            let entry = Entry::of(TransactionType::Expire, expire_description(*grant_id));
            ledger::apply(tx, account, after, entry, *at)?;
        }
        let spent: Vec<(i64, i64)> = due.iter().map(|(id, _, _)| (*id, 0)).collect();
        tx.set_grants_remaining(&spent)?;
    }
    Ok(grants.into_iter().filter(|g| g.live_at(now)).collect())
}

/// A dated grant of `amount` credits (`> 0`) to `account`, expiring at `expires_at`: the grant
/// row, and the `add`-like transaction `entry` names (carrying the expiry), in one step. `account`
/// must be settled at `now`.
pub fn grant<A: Account + ?Sized>(
    tx: &mut EngineCall<'_>,
    account: &mut A,
    amount: i64,
    expires_at: Timestamp,
    mut entry: Entry<'_>,
    now: Timestamp,
) -> Result<i64, QuotaError> {
    if amount <= 0 {
        return Err(QuotaError::invalid("amount", "a dated grant must be more than 0"));
    }
    let after = ledger::checked_balance(i128::from(account.balance()) + i128::from(amount), "the grant")?;
    let id = tx.insert_grant(
        &account.key(),
        &NewGrant {
            amount,
            granted_at: now,
            expires_at,
        },
    )?;
    entry.expires_at = Some(expires_at);
    ledger::apply(tx, account, after, entry, now)?;
    Ok(id)
}

/// Draws `amount` credits from `live` (the account's live grants at `t`, from [`settle_user`]) in
/// the spending order; the rest comes from the undated lot. Writes the grants' new remaining
/// credit; the caller writes the balance change (one transaction, as today).
pub fn draw(store: &mut dyn Store, live: &[Grant], amount: i64, t: Timestamp) -> Result<(), QuotaError> {
    let d = lots::draw(live, amount, t);
    crate::invariants::draw(&d.from_grants, d.from_undated, amount, live);
    if d.from_grants.is_empty() {
        return Ok(());
    }
    let left: Vec<(i64, i64)> = d
        .from_grants
        .iter()
        .filter_map(|(id, took)| {
            live.iter()
                .find(|g| g.grant_id == *id)
                .map(|g| (*id, g.remaining - took))
        })
        .collect();
    store.set_grants_remaining(&left)?;
    Ok(())
}

/// A `set` replaces the whole credit: every live grant of the account holds nothing afterwards
/// (the `set` transaction's amount accounts for them, as for the undated lot).
pub fn drop_all(tx: &mut EngineCall<'_>, live: &[Grant]) -> Result<(), QuotaError> {
    let zero: Vec<(i64, i64)> = live
        .iter()
        .filter(|g| g.remaining > 0)
        .map(|g| (g.grant_id, 0))
        .collect();
    if !zero.is_empty() {
        tx.set_grants_remaining(&zero)?;
    }
    Ok(())
}

/// What a sweep wrote off; a sweep in chunks also says whether more accounts remain.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Swept {
    pub grants_expired: u64,
    pub credits_expired: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub more: Option<bool>,
}

/// Writes every expiry due by `now` (`POST .../expire`): each account's `expire` transactions, as
/// its next write would. Running it again writes nothing. With `limit`, at most that many grants,
/// and `more` says whether others are still due (the caller commits and calls again: the sweep
/// resumes from what is still due).
pub fn sweep(tx: &mut EngineCall<'_>, now: Timestamp, limit: Option<usize>) -> Result<Swept, QuotaError> {
    let mut out = Swept::default();
    let mut done = 0usize;
    // Budgets first (few accounts), each through its own settle, a page of names at a time.
    let mut after: Option<String> = None;
    loop {
        let names = tx.due_budgets(now, after.as_deref(), limits::SWEEP_PAGE_BUDGETS)?;
        let Some(last) = names.last().cloned() else { break };
        for name in names {
            let key = AccountKey::Budget(name.clone());
            let Some(row) = tx.get_budget(&name)? else {
                continue;
            };
            let mut account = BudgetAccount {
                row,
                member: String::new(),
            };
            let grants = tx.account_grants(&key)?;
            for g in lots::due(&grants, now) {
                out.grants_expired += 1;
                out.credits_expired += g.remaining;
                done += 1;
            }
            settle_with(tx, &mut account, grants, now)?;
        }
        after = Some(last);
    }
    // Users a page of grants at a time, set-based.
    loop {
        let page = match limit {
            Some(l) => l.saturating_sub(done).min(limits::SWEEP_PAGE_GRANTS),
            None => limits::SWEEP_PAGE_GRANTS,
        };
        if page == 0 {
            out.more = Some(!tx.due_user_grants(now, 1)?.is_empty());
            return Ok(out);
        }
        let due = tx.due_user_grants(now, page)?;
        if due.is_empty() {
            if limit.is_some() {
                out.more = Some(false);
            }
            return Ok(out);
        }
        let mut names: Vec<String> = due.iter().map(|(u, _)| u.clone()).collect();
        names.sort_unstable();
        names.dedup();
        let mut users: std::collections::BTreeMap<String, UserRecord> = tx
            .users_named(&names)?
            .into_iter()
            .map(|u| (u.username.clone(), u))
            .collect();
        let mut changes = Vec::with_capacity(due.len());
        let mut ids = Vec::with_capacity(due.len());
        for (name, g) in &due {
            ids.push(g.grant_id);
            // A grant whose user has no row (never written by the engine) holds nothing to write.
            let Some(user) = users.get_mut(name) else { continue };
            let after =
                ledger::checked_balance(i128::from(user.balance) - i128::from(g.remaining), "an expiry")?;
            let entry = Entry::of(TransactionType::Expire, expire_description(g.grant_id));
            changes.push(ledger::change(tx, user, after, entry, g.expires_at));
            out.grants_expired += 1;
            out.credits_expired += g.remaining;
        }
        tx.record_changes(&changes)?;
        tx.zero_grants(&ids)?;
        done += due.len();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ledger::new_user;
    use crate::memstore::MemStore;
    use crate::store::GrantStore;

    fn entry(kind: TransactionType) -> Entry<'static> {
        Entry {
            kind,
            resource_type: None,
            description: String::new(),
            created_by: Some("root"),
            expires_at: None,
        }
    }

    fn reconciles(s: &MemStore, user: &str) {
        let sum: i64 = s
            .transactions
            .iter()
            .filter(|t| t.username == user)
            .map(|t| t.amount)
            .sum();
        assert_eq!(sum, s.users[user].balance, "the balance is the sum of the ledger");
        for t in &s.transactions {
            assert_eq!(t.amount, t.balance_after - t.balance_before);
        }
    }

    #[test]
    fn a_grant_expires_at_its_time_by_the_next_write_dated_then() {
        let mut s = MemStore::new();
        let t0 = Timestamp(1_000_000);
        let mut u = new_user("ann", t0);
        ledger::apply(
            &mut EngineCall::new(&mut s),
            &mut u,
            10,
            entry(TransactionType::Set),
            t0,
        )
        .unwrap();
        let live = settle_user(&mut EngineCall::new(&mut s), &mut u, t0).unwrap();
        assert!(live.is_empty());
        let id = grant(
            &mut EngineCall::new(&mut s),
            &mut u,
            50,
            t0.plus_seconds(3600),
            entry(TransactionType::Add),
            t0,
        )
        .unwrap();
        assert_eq!(u.balance, 60);
        // Half an hour in: the grant is live, a charge of 20 draws from it, not the undated lot.
        let t1 = t0.plus_seconds(1800);
        let live = settle_user(&mut EngineCall::new(&mut s), &mut u, t1).unwrap();
        assert_eq!(live.len(), 1);
        draw(&mut s, &live, 20, t1).unwrap();
        ledger::apply(
            &mut EngineCall::new(&mut s),
            &mut u,
            40,
            entry(TransactionType::Usage),
            t1,
        )
        .unwrap();
        assert_eq!(
            s.account_grants(&AccountKey::User("ann".into())).unwrap()[0].remaining,
            30
        );
        // Past the expiry: the balance as of now leaves the grant out before anything is written...
        let t2 = t0.plus_seconds(7200);
        let grants = s.account_grants(&AccountKey::User("ann".into())).unwrap();
        assert_eq!(lots::balance_at(u.balance, &grants, t2), 10);
        // ...and the next write settles it first: one `expire` of the 30 left, dated at the expiry.
        let live = settle_user(&mut EngineCall::new(&mut s), &mut u, t2).unwrap();
        assert!(live.is_empty());
        let last = s.transactions.last().unwrap();
        assert_eq!(last.transaction_type, TransactionType::Expire);
        assert_eq!((last.amount, last.created_at), (-30, t0.plus_seconds(3600)));
        assert_eq!(last.description, expire_description(id));
        assert_eq!(last.created_by, None);
        assert_eq!(u.balance, 10);
        reconciles(&s, "ann");
        // Settling again writes nothing.
        let n = s.transactions.len();
        settle_user(&mut EngineCall::new(&mut s), &mut u, t2).unwrap();
        assert_eq!(s.transactions.len(), n);
    }

    #[test]
    fn a_charge_beyond_the_grants_goes_into_the_undated_lot_and_set_drops_them() {
        let mut s = MemStore::new();
        let t0 = Timestamp(1_000_000);
        let mut u = new_user("bob", t0);
        grant(
            &mut EngineCall::new(&mut s),
            &mut u,
            5,
            t0.plus_seconds(100),
            entry(TransactionType::Add),
            t0,
        )
        .unwrap();
        grant(
            &mut EngineCall::new(&mut s),
            &mut u,
            7,
            t0.plus_seconds(50),
            entry(TransactionType::Add),
            t0,
        )
        .unwrap();
        let live = settle_user(&mut EngineCall::new(&mut s), &mut u, t0).unwrap();
        draw(&mut s, &live, 15, t0).unwrap();
        let after = u.balance - 15;
        ledger::apply(
            &mut EngineCall::new(&mut s),
            &mut u,
            after,
            entry(TransactionType::Usage),
            t0,
        )
        .unwrap();
        let grants = s.account_grants(&AccountKey::User("bob".into())).unwrap();
        assert!(
            grants.is_empty(),
            "both spent: soonest expiry first, then the other"
        );
        assert_eq!(u.balance, -3, "debt in the undated lot");
        assert_eq!(lots::undated(u.balance, &grants), -3);
        grant(
            &mut EngineCall::new(&mut s),
            &mut u,
            9,
            t0.plus_seconds(500),
            entry(TransactionType::Add),
            t0,
        )
        .unwrap();
        let live = settle_user(&mut EngineCall::new(&mut s), &mut u, t0).unwrap();
        drop_all(&mut EngineCall::new(&mut s), &live).unwrap();
        ledger::apply(
            &mut EngineCall::new(&mut s),
            &mut u,
            20,
            entry(TransactionType::Set),
            t0,
        )
        .unwrap();
        assert!(s
            .account_grants(&AccountKey::User("bob".into()))
            .unwrap()
            .is_empty());
        assert_eq!(u.balance, 20);
        reconciles(&s, "bob");
        assert!(grant(
            &mut EngineCall::new(&mut s),
            &mut u,
            0,
            t0.plus_seconds(9),
            entry(TransactionType::Add),
            t0
        )
        .is_err());
    }
}
