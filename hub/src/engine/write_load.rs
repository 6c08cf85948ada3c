//! The writers' load: write jobs waiting and running (the metrics' gauges), and whether writes
//! are failing for another process's lock (the readiness probe).

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

/// Write jobs waiting in the queue and running on the writers, for the metrics (and a test that
/// must know every request has reached the server).
#[derive(Default)]
pub struct WriteLoad {
    pub(super) queued: AtomicUsize,
    pub(super) running: AtomicUsize,
    /// The last write transaction failed because the database stayed locked (another process
    /// held SQLite's write lock past the busy timeout), and none has committed since.
    pub(super) locked_out: AtomicBool,
    /// Moves whenever a writer takes or finishes a job: a readiness check that saw the writer
    /// idle before and after its lock try, with this unchanged, knows the lock it met was not
    /// this server's own.
    pub(super) moves: AtomicU64,
}

impl WriteLoad {
    /// (waiting, running) now.
    pub fn now(&self) -> (usize, usize) {
        (
            self.queued.load(Ordering::Relaxed),
            self.running.load(Ordering::Relaxed),
        )
    }

    /// Whether writes are failing for a lock right now (see `locked_out`).
    pub fn locked_out(&self) -> bool {
        self.locked_out.load(Ordering::Relaxed)
    }

    /// See `moves`.
    pub fn moves(&self) -> u64 {
        self.moves.load(Ordering::SeqCst)
    }

    /// The write lock was found free (the readiness check): writes can go through again.
    pub fn lock_seen_free(&self) {
        self.locked_out.store(false, Ordering::Relaxed);
    }

    pub(super) fn outcomes<T>(
        &self,
        outcomes: &[Result<T, quota_host::HostError>],
        contract: &quota_host::HostingContract,
    ) {
        if outcomes.iter().any(Result::is_ok) {
            self.locked_out.store(false, Ordering::Relaxed);
        } else if outcomes
            .iter()
            .any(|o| o.as_ref().is_err_and(|e| e.is_transient(contract)))
        {
            self.locked_out.store(true, Ordering::Relaxed);
        }
    }
}
