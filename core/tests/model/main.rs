//! Randomized model-based test: random sequences of every operation over a few users, checked
//! against a deliberately simple reference model (`reference.rs`), with the ledger invariants
//! (`invariants.rs`) asserted after every step, the events included (every change that should
//! make one made exactly one). A failure prints the seed;
//! `QUOTA_MODEL_SEED=<seed> cargo test -p quota-core --test model` replays exactly that run.
//! `QUOTA_MODEL_RUNS` sets how many runs (default 110 x 1,000 ops), `QUOTA_MODEL_BASE` the first
//! seed; `scripts/model-at-scale.sh` runs 10,000,000 operations. The operations are in
//! `sessions.rs`, `admin.rs`, `staff.rs` and `groups.rs`, one function each.

#[path = "../rng/mod.rs"]
mod rng;

mod admin;
mod groups;
mod invariants;
mod reference;
mod sessions;
mod staff;

use quota_core::engine_call::EngineCall;
use quota_core::usage;
use quota_core::{Config, MemStore, QuotaError, Timestamp};

use reference::Model;
use rng::Rng;

const OPS_PER_RUN: usize = 1000;
const DEFAULT_RUNS: u64 = 110;
const USERS: [&str; 4] = ["alice", "bob", "carol", "dave"];
const SERVERS: [&str; 2] = ["", "gpu"];
const GROUP_NAMES: [&str; 3] = ["g1", "g2", "g3"];

/// What one operation sees: the run's random numbers, the configuration, the store and the model,
/// the time, the user it acts as, and the step number (for messages).
pub struct Step<'a, 'b> {
    pub rng: &'a mut Rng,
    pub cfg: &'a Config,
    /// The step's engine call: its events are written when the step ends, as a host's are.
    pub tx: &'a mut EngineCall<'b>,
    pub m: &'a mut Model,
    pub now: i64,
    pub t: Timestamp,
    pub user: &'a str,
    pub step: usize,
}

/// What an operation did (for messages) and, when the engine refused it, why.
pub type Done = (String, Option<QuotaError>);

/// Runs one seeded sequence; returns a description of the first discrepancy.
fn run(seed: u64, ops: usize) -> Result<(), String> {
    let mut rng = Rng(seed);
    let cfg = reference::config();
    let mut store = MemStore::new();
    let mut m = Model::default();
    let mut now: i64 = 1_795_000_000;
    let first_day = usage::day_of(Timestamp(now));
    for step in 0..ops {
        now += rng.below(4) as i64 * rng.below(3600) as i64;
        let t = Timestamp(now);
        let before = store.clone();
        let user = rng.pick(&USERS).to_string();
        let kind = rng.below(100);
        let op = match kind {
            0..35 => sessions::start,
            35..60 => sessions::end,
            60..73 => admin::admin_action,
            73..80 => staff::staff_action,
            80..85 => admin::admin_batch,
            85..95 => admin::refresh_run,
            95..98 => groups::groups,
            _ => sessions::cleanup,
        };
        // As a host's entry point: the call's events are written at its end, if it succeeded.
        let mut tx = EngineCall::new(&mut store);
        let (what, refused) = op(Step {
            rng: &mut rng,
            cfg: &cfg,
            tx: &mut tx,
            m: &mut m,
            now,
            t,
            user: &user,
            step,
        })?;
        tx.finish(&cfg, (), t)
            .map_err(|e| format!("step {step} {what}: {e}"))?;
        invariants::after_step(&store, &before, &m, refused, step, &what)?;
        // The events are counted whole (per session, per refusal, per ledger change) every 10
        // steps and at the end: a missing or extra one shows in the next count.
        if step % 10 == 9 || step + 1 == ops {
            invariants::check_events(&store, &cfg, &m).map_err(|e| format!("step {step} {what}: {e}"))?;
        }
        if step % 100 == 99 {
            // A random range of the days so far, and all of them.
            let today = usage::day_of(t);
            let a = first_day + rng.below((today - first_day + 1) as u64) as i64;
            let b = a + rng.below((today - a + 1) as u64) as i64;
            invariants::check_usage(&mut store, a, b, false)
                .map_err(|e| format!("step {step} {what}: {e}"))?;
            invariants::check_usage(&mut store, first_day, today, true)
                .map_err(|e| format!("step {step} {what}: {e}"))?;
        }
    }
    Ok(())
}

#[test]
fn random_operations_match_the_reference_model() {
    let env_u64 = |k: &str| std::env::var(k).ok().and_then(|v| v.parse::<u64>().ok());
    let seeds: Vec<u64> = match env_u64("QUOTA_MODEL_SEED") {
        Some(seed) => vec![seed],
        None => {
            let base = env_u64("QUOTA_MODEL_BASE").unwrap_or(0x5EED_0000_u64);
            (0..env_u64("QUOTA_MODEL_RUNS").unwrap_or(DEFAULT_RUNS))
                .map(|i| base + i)
                .collect()
        }
    };
    // Progress for long runs (scripts/model-at-scale.sh): a line every `every` seeds.
    let every = (seeds.len() / 20).max(1000);
    let started = std::time::Instant::now();
    let mut total = 0;
    for (i, seed) in seeds.iter().enumerate() {
        if let Err(e) = run(*seed, OPS_PER_RUN) {
            panic!("model mismatch with seed {seed} (replay: QUOTA_MODEL_SEED={seed} cargo test -p quota-core --test model)\n{e}");
        }
        total += OPS_PER_RUN;
        if (i + 1) % every == 0 {
            eprintln!("model: {} of {} seeds, {total} operations", i + 1, seeds.len());
        }
    }
    let secs = started.elapsed().as_secs_f64();
    println!(
        "{total} random operations over {} seeds (first {}) matched the model in {secs:.1} s: {:.0} operations/s",
        seeds.len(),
        seeds[0],
        total as f64 / secs.max(1e-9)
    );
    assert!(total >= OPS_PER_RUN);
}
