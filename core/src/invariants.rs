//! The engine's invariants, asserted in production code where they must hold (TigerBeetle's
//! habit): on in debug builds, so the unit, scenario and model tests and the fuzzers (built with
//! `-a`, `scripts/fuzz.sh`) stop at the first call that breaks one; compiled out of release
//! builds, which the tests hold to the same states.

use crate::limits;
use crate::store::Grant;

/// A ledger row: its amount is exactly the move of the balance, which stays within the exact range.
pub fn ledger_row(amount: i64, before: i64, after: i64) {
    debug_assert_eq!(
        amount,
        after - before,
        "a transaction's amount is its balance's move"
    );
    debug_assert!(
        (-limits::BALANCE_ABS_MAX..=limits::BALANCE_ABS_MAX).contains(&after),
        "balance {after} out of the exact range"
    );
}

/// A grant holds between nothing and what it was granted.
pub fn grant(g: &Grant) {
    debug_assert!(
        0 <= g.remaining && g.remaining <= g.amount,
        "grant {} holds {} of {}",
        g.grant_id,
        g.remaining,
        g.amount
    );
}

/// A charge of `amount` is drawn whole: `(grant_id, credits)` from live grants, each no more than
/// it holds, and the rest from the undated lot.
pub fn draw(from_grants: &[(i64, i64)], from_undated: i64, amount: i64, live: &[Grant]) {
    let total: i64 = from_grants.iter().map(|(_, took)| took).sum();
    debug_assert_eq!(total + from_undated, amount.max(0), "a charge is drawn whole");
    debug_assert!(from_undated >= 0, "the undated lot gives a non-negative amount");
    for (id, took) in from_grants {
        let held = live.iter().find(|g| g.grant_id == *id).map_or(0, |g| g.remaining);
        debug_assert!(0 < *took && *took <= held, "grant {id} gave {took} of {held}");
    }
}

/// What running sessions hold (thousandths) is never negative.
pub fn held(held: i64) {
    debug_assert!(held >= 0, "reservations of {held} thousandths");
}

/// A session is charged a non-negative cost, and only when it is billable.
pub fn charge(cost: i64, billable: bool) {
    debug_assert!(cost >= 0, "a session charged {cost}");
    debug_assert!(billable || cost == 0, "an unbillable session charged {cost}");
}

/// A refresh's result adds up: the users it changed are its changes, and their sum its total.
pub fn refresh(users_updated: u64, changes: usize, total_change: i128, sum: i128) {
    debug_assert_eq!(
        users_updated as usize, changes,
        "users updated are the changes made"
    );
    debug_assert_eq!(total_change, sum, "a refresh's total is the sum of its changes");
}

#[cfg(all(test, debug_assertions))]
mod tests {
    use super::*;
    use crate::time::Timestamp;

    fn g(amount: i64, remaining: i64) -> Grant {
        Grant {
            grant_id: 1,
            amount,
            remaining,
            granted_at: Timestamp(0),
            expires_at: Timestamp(100),
        }
    }

    #[test]
    fn a_kept_invariant_passes() {
        ledger_row(-5, 10, 5);
        grant(&g(10, 0));
        draw(&[(1, 4)], 1, 5, &[g(10, 4)]);
        held(0);
        charge(0, false);
        refresh(2, 2, 7, 7);
    }

    #[test]
    #[should_panic(expected = "holds 11 of 10")]
    fn a_grant_holding_more_than_it_was_granted_stops_the_call() {
        grant(&g(10, 11));
    }

    #[test]
    #[should_panic(expected = "a charge is drawn whole")]
    fn a_charge_not_drawn_whole_stops_the_call() {
        draw(&[(1, 3)], 1, 5, &[g(10, 4)]);
    }

    #[test]
    #[should_panic(expected = "out of the exact range")]
    fn a_balance_past_the_exact_range_stops_the_call() {
        ledger_row(1, limits::BALANCE_ABS_MAX, limits::BALANCE_ABS_MAX + 1);
    }
}
