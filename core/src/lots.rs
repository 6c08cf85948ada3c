//! An account's credit as lots (credit model 2, "Accounts" and "Dated grants"): one undated lot,
//! which may be negative (debt), and dated grants, each with what is left of it. Pure functions
//! over a snapshot of an account's grants: what is due, what a charge draws from, what the balance
//! is as of a time. The callers write what these return, in the transaction of the change.

use crate::error::QuotaError;
use crate::limits;
pub use crate::store::Grant;
use crate::time::{Timestamp, DAY_SECONDS};

/// The spending order: live grants by `expires_at`, soonest first, ties by `grant_id`.
fn spending_order(grants: &[Grant], t: Timestamp) -> Vec<&Grant> {
    grants.iter().for_each(crate::invariants::grant);
    let mut live: Vec<&Grant> = grants.iter().filter(|g| g.live_at(t)).collect();
    live.sort_by_key(|g| (g.expires_at, g.grant_id));
    live
}

/// The grants owed an `expire` transaction by `now`, in the order their expiries came (ties by id).
pub fn due(grants: &[Grant], now: Timestamp) -> Vec<&Grant> {
    let mut due: Vec<&Grant> = grants.iter().filter(|g| g.due_at(now)).collect();
    due.sort_by_key(|g| (g.expires_at, g.grant_id));
    due
}

/// What a charge takes from each lot: `(grant_id, credits)` from grants in the spending order, then
/// the rest from the undated lot.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Draw {
    pub from_grants: Vec<(i64, i64)>,
    pub from_undated: i64,
}

/// A charge (or `deduct`, or a negative `add`) of `amount` credits at `t`: drawn from the grants
/// that are live at `t` in the spending order, the rest from the undated lot (which may go
/// negative). `amount <= 0` draws nothing.
pub fn draw(grants: &[Grant], amount: i64, t: Timestamp) -> Draw {
    let mut left = amount.max(0);
    let mut out = Draw::default();
    for g in spending_order(grants, t) {
        if left == 0 {
            break;
        }
        let take = left.min(g.remaining);
        out.from_grants.push((g.grant_id, take));
        left -= take;
    }
    out.from_undated = left;
    out
}

/// The balance as of `now`: the stored balance (the sum of the account's transactions) less the
/// credit of grants whose expiry has come but whose `expire` transaction is not written yet.
pub fn balance_at(stored: i64, grants: &[Grant], now: Timestamp) -> i64 {
    stored - due(grants, now).iter().map(|g| g.remaining).sum::<i64>()
}

/// The undated lot: the stored balance less every grant's remaining credit still held.
pub fn undated(stored: i64, grants: &[Grant]) -> i64 {
    stored - grants.iter().map(|g| g.remaining).sum::<i64>()
}

/// An `expires_at` given with an `add`: later than `now`, at most `grant_days_max` days ahead.
pub fn check_expires_at(field: &str, expires_at: Timestamp, now: Timestamp) -> Result<Timestamp, QuotaError> {
    if expires_at <= now {
        return Err(QuotaError::invalid(field, "must be later than now"));
    }
    if expires_at.seconds() - now.seconds() > limits::GRANT_DAYS_MAX * DAY_SECONDS {
        return Err(QuotaError::invalid(
            field,
            format!("must be at most {} days ahead", limits::GRANT_DAYS_MAX),
        ));
    }
    Ok(expires_at)
}

/// An `expires_after` duration (`<n>m`, `<n>h` or `<n>d`, `n >= 1`, at most `grant_days_max`
/// days), in seconds.
pub fn parse_expires_after(field: &str, text: &str) -> Result<i64, QuotaError> {
    let bad = || {
        QuotaError::invalid(
            field,
            format!(
                "`{text}` is not a duration like 30m, 12h or 7d (at least 1, at most {} days)",
                limits::GRANT_DAYS_MAX
            ),
        )
    };
    // The unit is the last character (not byte: the text is anyone's).
    let Some(unit) = text.chars().last() else {
        return Err(bad());
    };
    let digits = &text[..text.len() - unit.len_utf8()];
    let unit_seconds = match unit {
        'm' => 60,
        'h' => 3600,
        'd' => DAY_SECONDS,
        _ => return Err(bad()),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) || digits.len() > 9 {
        return Err(bad());
    }
    let n: i64 = digits.parse().map_err(|_| bad())?;
    let seconds = n * unit_seconds;
    if n < 1 || seconds > limits::GRANT_DAYS_MAX * DAY_SECONDS {
        return Err(bad());
    }
    Ok(seconds)
}

/// The grants that count at `now` (not yet expired, credit left), soonest expiry first, ties by id:
/// what reads show, in the spending order.
pub fn live(grants: Vec<Grant>, now: Timestamp) -> Vec<Grant> {
    let mut out: Vec<Grant> = grants.into_iter().filter(|g| g.live_at(now)).collect();
    out.sort_by_key(|g| (g.expires_at, g.grant_id));
    out
}

/// `{amount, expires_at}` of the soonest live grant.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ExpiringNext {
    pub amount: i64,
    pub expires_at: Timestamp,
}

/// The soonest of `live` grants (already in the spending order), if any.
pub fn expiring_next(live: &[Grant]) -> Option<ExpiringNext> {
    live.first().map(|g| ExpiringNext {
        amount: g.remaining,
        expires_at: g.expires_at,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn g(id: i64, remaining: i64, expires: i64) -> Grant {
        Grant {
            grant_id: id,
            amount: remaining.max(1),
            remaining,
            granted_at: Timestamp(0),
            expires_at: Timestamp(expires),
        }
    }

    #[test]
    fn a_charge_draws_soonest_expiry_first_ties_by_id_then_the_undated_lot() {
        let grants = [g(3, 10, 500), g(1, 5, 300), g(2, 5, 300), g(4, 7, 100)];
        // At 150 grant 4 has expired: it is not drawn from.
        let d = draw(&grants, 12, Timestamp(150));
        assert_eq!(d.from_grants, vec![(1, 5), (2, 5), (3, 2)]);
        assert_eq!(d.from_undated, 0);
        let d = draw(&grants, 30, Timestamp(150));
        assert_eq!(d.from_grants, vec![(1, 5), (2, 5), (3, 10)]);
        assert_eq!(d.from_undated, 10);
        assert_eq!(draw(&grants, 0, Timestamp(150)), Draw::default());
    }

    #[test]
    fn a_grant_expiring_exactly_at_the_charge_is_not_drawn_from() {
        let grants = [g(1, 5, 300)];
        assert_eq!(draw(&grants, 3, Timestamp(300)).from_undated, 3);
        assert_eq!(draw(&grants, 3, Timestamp(299)).from_grants, vec![(1, 3)]);
    }

    #[test]
    fn the_balance_as_of_now_leaves_out_due_grants_and_the_undated_lot_is_what_is_left() {
        let grants = [g(1, 5, 300), g(2, 7, 100), g(3, 0, 50)];
        assert_eq!(balance_at(20, &grants, Timestamp(99)), 20);
        assert_eq!(balance_at(20, &grants, Timestamp(100)), 13);
        assert_eq!(balance_at(20, &grants, Timestamp(300)), 8);
        assert_eq!(undated(20, &grants), 8);
        let ids: Vec<i64> = due(&grants, Timestamp(400)).iter().map(|g| g.grant_id).collect();
        assert_eq!(
            ids,
            vec![2, 1],
            "in the order the expiries came; a spent grant owes nothing"
        );
    }

    #[test]
    fn expires_at_must_be_ahead_and_within_the_limit() {
        let now = Timestamp(1_000_000);
        assert!(check_expires_at("expires_at", now, now).is_err());
        assert!(check_expires_at("expires_at", now.plus_seconds(1), now).is_ok());
        let max = now.plus_seconds(limits::GRANT_DAYS_MAX * DAY_SECONDS);
        assert!(check_expires_at("expires_at", max, now).is_ok());
        let e = check_expires_at("expires_at", max.plus_seconds(1), now).unwrap_err();
        assert!(e.to_string().contains("expires_at"), "{e}");
    }

    #[test]
    fn expires_after_takes_minutes_hours_and_days_and_refuses_the_rest() {
        assert_eq!(parse_expires_after("f", "30m").unwrap(), 1800);
        assert_eq!(parse_expires_after("f", "12h").unwrap(), 43_200);
        assert_eq!(parse_expires_after("f", "3660d").unwrap(), 3660 * 86_400);
        for bad in [
            "",
            "d",
            "0d",
            "3661d",
            "7",
            "7w",
            "-1d",
            "1.5h",
            " 7d",
            "99999999999d",
            "ӛ",
            "7ӛ",
            "ӛd",
        ] {
            let e = parse_expires_after("targets.expiresAfter", bad).unwrap_err();
            assert!(e.to_string().contains("expiresAfter"), "{bad}: {e}");
        }
    }
}
