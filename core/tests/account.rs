//! The account decision driven without a store (`account::decide`, `account::view`): random
//! accounts, sessions and asks, and the properties every caller (a start, an extension, its
//! quote, the forecast) relies on. Seeded: a failure prints its seed and reproduces.

mod rng;

use quota_core::account::{
    afford, held_on_budget, held_personal, needed, within_member_limit, AccountView, Payer, Paying, Price,
};
use quota_core::milli::Milli;
use quota_core::store::{NewSession, Session, UserRecord};
use quota_core::time::Timestamp;
use rng::Rng;

const RUNS: u64 = 20_000;

fn price(r: &mut Rng) -> Price {
    let rate = Milli(r.below(5_000) as i64);
    let minutes = 1 + r.below(480) as i64;
    Price {
        rate,
        minutes,
        cost: rate.times(minutes).expect("in range"),
    }
}

fn paying(r: &mut Rng) -> Paying {
    Paying {
        balance: r.below(4_000) as i64 - 1_000,
        held: r.below(3_000_000) as i64,
    }
}

#[test]
fn more_credit_less_held_or_a_cheaper_ask_never_turns_an_allowed_start_into_a_refusal() {
    let mut r = Rng(59);
    for run in 0..RUNS {
        let (p, a) = (paying(&mut r), price(&mut r));
        let minimum = Milli(r.below(20_000) as i64);
        let allowed = afford(Payer::Personal, p, a, minimum).is_ok();
        assert_eq!(allowed, p.available() >= needed(a, minimum), "run {run}");
        if allowed {
            let richer = Paying {
                balance: p.balance + 1 + r.below(100) as i64,
                ..p
            };
            let freer = Paying {
                held: p.held - r.below(p.held as u64 + 1) as i64,
                ..p
            };
            let cheaper = Price {
                cost: Milli(a.cost.raw() - r.below(a.cost.raw() as u64 + 1) as i64),
                ..a
            };
            assert!(afford(Payer::Personal, richer, a, minimum).is_ok(), "run {run}");
            assert!(afford(Payer::Personal, freer, a, minimum).is_ok(), "run {run}");
            assert!(afford(Payer::Personal, p, cheaper, minimum).is_ok(), "run {run}");
        }
    }
}

#[test]
fn a_refusal_says_its_figures_and_names_the_budget_that_pays() {
    let mut r = Rng(60);
    let mut refused = 0;
    for run in 0..RUNS {
        let (p, a) = (paying(&mut r), price(&mut r));
        let budget = format!("lab {}", r.below(10));
        let payer = if r.chance(50) {
            Payer::Budget(&budget)
        } else {
            Payer::Personal
        };
        let Err(s) = afford(payer, p, a, Milli(10_000)) else {
            continue;
        };
        refused += 1;
        assert_eq!(
            (s.balance, s.held, s.estimated_cost),
            (p.balance, Milli(p.held).ceil(), a.cost),
            "run {run}"
        );
        assert!(
            s.message
                .starts_with("Cannot start container: Insufficient quota"),
            "run {run}: {}",
            s.message
        );
        assert_eq!(
            s.message.contains(&format!(" in budget {budget}.")),
            payer != Payer::Personal,
            "run {run}"
        );
        assert!(
            s.message.contains(&format!("Current balance: {}", p.balance)),
            "run {run}"
        );
        assert_eq!(
            s.message.contains("reserved by running servers"),
            p.held > 0,
            "run {run}"
        );
        assert!(
            s.message.contains(&format!(
                "estimated cost: {} ({} quota/min x {} min)",
                a.cost, a.rate, a.minutes
            )),
            "run {run}: {}",
            s.message
        );
    }
    assert!(
        refused > RUNS / 4 && refused < RUNS * 3 / 4,
        "{refused} refusals: both sides reached"
    );
}

#[test]
fn a_members_limit_counts_the_month_what_runs_and_the_ask() {
    let mut r = Rng(62);
    for run in 0..RUNS {
        let (p, a) = (paying(&mut r), price(&mut r));
        let (limit, spent, reserved) = (
            r.below(2_000) as i64,
            r.below(2_000) as i64,
            r.below(500_000) as i64,
        );
        let ok = within_member_limit("lab", limit, spent, reserved, a, p).is_ok();
        assert_eq!(
            ok,
            spent * 1000 + reserved + a.cost.raw() <= limit * 1000,
            "run {run}"
        );
        if let Err(s) = within_member_limit("lab", limit, spent, reserved, a, p) {
            assert!(
                s.message
                    .starts_with("Cannot start container: monthly limit of budget lab reached."),
                "{}",
                s.message
            );
            assert_eq!(s.message.contains(" reserved)"), reserved > 0, "run {run}");
        }
    }
}

fn session(r: &mut Rng, id: i64) -> Session {
    let budget = r.pick(&[None, Some("a"), Some("b")]).map(str::to_string);
    NewSession {
        username: if r.chance(80) { "ann".into() } else { "bob".into() },
        server_name: format!("s{id}"),
        resource_type: "cpu".into(),
        rate: Milli(1000),
        runtime_minutes: 60,
        estimated_cost: Milli(r.below(100_000) as i64),
        start_time: Timestamp(0),
        billable: r.chance(80),
        budget,
        warn_at: None,
    }
    .with_id(id)
}

#[test]
fn what_runs_is_held_once_by_the_account_it_charges() {
    let mut r = Rng(63);
    for run in 0..2_000 {
        let active: Vec<Session> = (0..r.below(12) as i64).map(|i| session(&mut r, i)).collect();
        let billable: i64 = active
            .iter()
            .filter(|s| s.billable)
            .map(|s| s.estimated_cost.raw())
            .sum();
        // Every billable session is held by exactly one account: the person's or one budget.
        let split =
            held_personal(&active) + held_on_budget(&active, "a", None) + held_on_budget(&active, "b", None);
        assert_eq!(split, billable, "run {run}");
        let anns = held_on_budget(&active, "a", Some("ann")) + held_on_budget(&active, "a", Some("bob"));
        assert_eq!(anns, held_on_budget(&active, "a", None), "run {run}");
        // The view holds what the person's account holds, and its balance is the record's as of now.
        let user = UserRecord {
            username: "ann".into(),
            balance: r.below(500) as i64,
            unlimited: false,
            updated_at: Timestamp(0),
        };
        let view = AccountView::of(Some(user.clone()), &[], &active, Timestamp(0));
        assert_eq!(
            view.paying(),
            Paying {
                balance: user.balance,
                held: held_personal(&active)
            },
            "run {run}"
        );
        assert_eq!(
            AccountView::of(None, &[], &[], Timestamp(0)).paying(),
            Paying { balance: 0, held: 0 }
        );
    }
}
