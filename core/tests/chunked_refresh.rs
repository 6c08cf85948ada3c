//! A refresh committed in chunks (`refresh_step`) does to every user exactly what one call does,
//! and a run cut off between chunks is completed, each user once, by its run id.

use quota_core::engine_call::EngineCall;
use quota_core::refresh::{refresh, refresh_step, RefreshAction, RefreshParams, RefreshRequest, Step};
use quota_core::store::UserStore;
use quota_core::store::{TransactionType, UserRecord};
use quota_core::targets::Targets;
use quota_core::{MemStore, QuotaError, Timestamp};

const T0: Timestamp = Timestamp(1_795_000_000);

/// 2,503 users (not a multiple of any chunk used here), balances 0..=9 so a capped top-up skips some.
fn store() -> MemStore {
    let mut s = MemStore::new();
    for i in 0..2503 {
        s.put_user(&UserRecord {
            username: format!("u{i:05}"),
            balance: i % 10,
            unlimited: false,
            updated_at: T0,
        })
        .unwrap();
    }
    s
}

fn request(run_id: Option<&str>, amount: i64) -> RefreshRequest {
    RefreshRequest {
        params: RefreshParams {
            rule_name: "daily".into(),
            action: RefreshAction::Add,
            amount,
            max_balance: Some(12),
            min_balance: None,
            targets: Targets::default(),
            expires_after: None,
        },
        run_id: run_id.map(str::to_string),
        dry_run: false,
    }
}

fn refresh_rows(s: &MemStore) -> usize {
    s.transactions
        .iter()
        .filter(|t| t.transaction_type == TransactionType::AutoRefresh)
        .count()
}

#[test]
fn chunks_of_any_size_end_where_one_call_ends() {
    let mut whole = store();
    let expected = refresh(
        &quota_core::Config::default(),
        &mut EngineCall::new(&mut whole),
        &request(Some("r1"), 5),
        T0,
    )
    .unwrap();
    for chunk in [1u32, 7, 1000, 2503, 2504] {
        let mut s = store();
        let mut calls = 0;
        let result = loop {
            calls += 1;
            match refresh_step(
                &quota_core::Config::default(),
                &mut EngineCall::new(&mut s),
                &request(Some("r1"), 5),
                T0,
                chunk,
            )
            .unwrap()
            {
                Step::Done(r) => break r,
                Step::More => assert!(!quota_core::refresh::run_completed(&s.refresh_runs["r1"])),
            }
        };
        assert_eq!(result, expected, "chunk {chunk}");
        assert_eq!(
            calls,
            2503 / chunk as usize + 1,
            "chunk {chunk}: one call per chunk, and the last"
        );
        assert_eq!(s.users, whole.users, "chunk {chunk}");
        assert_eq!(refresh_rows(&s), refresh_rows(&whole), "chunk {chunk}");
        // The completed run replays the whole run's answer.
        let again = refresh_step(
            &quota_core::Config::default(),
            &mut EngineCall::new(&mut s),
            &request(Some("r1"), 5),
            T0,
            chunk,
        )
        .unwrap();
        let Step::Done(replayed) = again else {
            panic!("a completed run replays at once")
        };
        assert!(replayed.replayed);
        assert_eq!(replayed.users_updated, expected.users_updated);
        assert_eq!(refresh_rows(&s), refresh_rows(&whole));
    }
}

#[test]
fn a_run_cut_off_between_chunks_is_completed_once_by_a_whole_call() {
    let mut whole = store();
    let expected = refresh(
        &quota_core::Config::default(),
        &mut EngineCall::new(&mut whole),
        &request(Some("r1"), 5),
        T0,
    )
    .unwrap();
    let mut s = store();
    for _ in 0..3 {
        assert_eq!(
            refresh_step(
                &quota_core::Config::default(),
                &mut EngineCall::new(&mut s),
                &request(Some("r1"), 5),
                T0,
                500
            )
            .unwrap(),
            Step::More
        );
    }
    let touched = refresh_rows(&s);
    assert!(touched > 0 && touched < refresh_rows(&whole), "{touched}");
    // Another host, which does not chunk, finishes the same run: every user once.
    let result = refresh(
        &quota_core::Config::default(),
        &mut EngineCall::new(&mut s),
        &request(Some("r1"), 5),
        T0,
    )
    .unwrap();
    assert_eq!(result, expected);
    assert_eq!(s.users, whole.users);
    assert_eq!(refresh_rows(&s), refresh_rows(&whole));
    for user in s.users.values() {
        let n = s
            .transactions
            .iter()
            .filter(|t| t.username == user.username && t.transaction_type == TransactionType::AutoRefresh)
            .count();
        assert!(n <= 1, "{} refreshed {n} times", user.username);
    }
}

#[test]
fn a_partial_run_resumed_with_other_parameters_is_a_conflict() {
    let mut s = store();
    assert_eq!(
        refresh_step(
            &quota_core::Config::default(),
            &mut EngineCall::new(&mut s),
            &request(Some("r1"), 5),
            T0,
            100
        )
        .unwrap(),
        Step::More
    );
    let before = s.clone();
    let err = refresh_step(
        &quota_core::Config::default(),
        &mut EngineCall::new(&mut s),
        &request(Some("r1"), 6),
        T0,
        100,
    )
    .unwrap_err();
    assert!(matches!(err, QuotaError::Conflict(_)), "{err:?}");
    assert_eq!(s, before);
}

#[test]
fn without_a_run_id_or_in_a_dry_run_the_refresh_is_one_call() {
    let mut s = store();
    let Step::Done(r) = refresh_step(
        &quota_core::Config::default(),
        &mut EngineCall::new(&mut s),
        &request(None, 5),
        T0,
        10,
    )
    .unwrap() else {
        panic!("nothing to resume from: one call")
    };
    assert!(r.users_updated > 0);
    let mut s = store();
    let mut dry = request(Some("r2"), 5);
    dry.dry_run = true;
    let Step::Done(r) = refresh_step(
        &quota_core::Config::default(),
        &mut EngineCall::new(&mut s),
        &dry,
        T0,
        10,
    )
    .unwrap() else {
        panic!("a dry run writes nothing, so it is one call")
    };
    assert_eq!(r.changes.map(|c| c.len() as u64), Some(r.users_updated));
    assert!(s.refresh_runs.is_empty());
}
