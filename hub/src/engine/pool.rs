//! Engine workers on their own threads. Writes go to the writers (on SQLite one: it takes one writer
//! at a time, and queueing writes here instead of in SQLite's busy handler keeps latency flat; on
//! PostgreSQL several, whose conflicts the workers retry), reads to several readers, each with its
//! own connection and engine instance.
//!
//! Shared commit: a request's engine work is a [`TxJob`], run inside a transaction the writer owns.
//! The SQLite writer takes every such job already queued (up to `--shared-commit-max`) into one
//! transaction, each job in its own savepoint, and commits once (`Worker::shared_commit`): concurrent
//! requests share one fsync instead of queueing behind one each. A job's answer is sent only after
//! the shared commit; a failed commit fails every job that shared it.

use super::write_load::WriteLoad;
use std::sync::atomic::Ordering;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use quota_core::refresh::Step;
use quota_host::{ConfigSummary, HostError, Observer, Runtime, SharedCall, Tx, Worker};

use crate::engine;
use crate::storage::db::Db;

enum Job {
    /// Runs with the worker to itself (its own transactions, or none).
    Plain(Box<dyn FnOnce(&mut Worker) + Send>),
    /// Runs inside a transaction the worker opens: on the writer, possibly one shared with other
    /// jobs (shared commit).
    InTx(Box<dyn TxJob>),
}

/// A job's work inside a transaction, and the answer sent when that transaction has ended.
trait TxJob: Send {
    /// Runs the work (again, after a conflict); keeps its answer until `reply`.
    fn run(&mut self, tx: &mut Tx<'_>) -> Result<(), HostError>;
    /// Sends the answer, or `outcome`'s error (the call's, or the failed commit's).
    fn reply(self: Box<Self>, outcome: Result<(), HostError>);
}

struct Typed<T, F> {
    f: F,
    answer: Option<T>,
    to: tokio::sync::oneshot::Sender<Result<T, HostError>>,
}

impl<T: Send, F: FnMut(&mut Tx<'_>) -> Result<T, HostError> + Send> TxJob for Typed<T, F> {
    fn run(&mut self, tx: &mut Tx<'_>) -> Result<(), HostError> {
        self.answer = Some((self.f)(tx)?);
        Ok(())
    }

    fn reply(self: Box<Self>, outcome: Result<(), HostError>) {
        let Typed { answer, to, .. } = *self;
        let answer = outcome
            .and_then(|()| answer.ok_or_else(|| HostError::Trap("a job ended without an answer".into())));
        let _ = to.send(answer);
    }
}

pub struct Pool {
    /// What the engine made of the values document (rules, enabled).
    pub summary: ConfigSummary,
    /// The engine's hosting contract for this database (what a storage failure means for a caller).
    pub contract: Arc<quota_host::HostingContract>,
    write: Option<Sender<Job>>,
    read: Option<Sender<Job>>,
    threads: Vec<JoinHandle<u64>>,
    /// Write jobs waiting and running.
    pub write_load: Arc<WriteLoad>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Read,
    Write,
}

/// Answers jobs until the queue closes; returns how many calls ran again after a conflict. A
/// writer with `shared_max` > 1 runs the transaction jobs it finds queued together (see above).
fn serve(
    rx: Arc<Mutex<Receiver<Job>>>,
    mut worker: Worker,
    kind: Kind,
    shared_max: usize,
    load: Arc<WriteLoad>,
) -> u64 {
    let writer = kind == Kind::Write;
    let took = |n: usize| {
        if writer {
            load.queued.fetch_sub(n, Ordering::Relaxed);
            load.running.fetch_add(n, Ordering::Relaxed);
            load.moves.fetch_add(1, Ordering::SeqCst);
        }
    };
    let done = |n: usize| {
        if writer {
            load.moves.fetch_add(1, Ordering::SeqCst);
            load.running.fetch_sub(n, Ordering::Relaxed);
        }
    };
    let mut next: Option<Job> = None;
    loop {
        let job = match next.take() {
            Some(job) => job,
            // The lock is held only while taking jobs.
            None => match rx.lock().map(|guard| guard.recv()) {
                Ok(Ok(job)) => {
                    took(1);
                    job
                }
                _ => return worker.conflicts_retried,
            },
        };
        match job {
            Job::Plain(f) => {
                f(&mut worker);
                done(1);
            }
            Job::InTx(first) if !writer => {
                let mut job = first;
                let outcome = worker.transaction(true, |tx| job.run(tx));
                job.reply(outcome);
            }
            Job::InTx(first) => {
                let mut jobs = vec![first];
                // Only a lone writer shares commits (PostgreSQL's several writers have shared_max 1). Another
                // writer may hold the queue's lock while it waits for a job: never wait for it here,
                // or this job waits for a job that its own client's answer would have sent.
                let more = if shared_max > 1 { rx.try_lock().ok() } else { None };
                if let Some(guard) = more {
                    while jobs.len() < shared_max {
                        match guard.try_recv() {
                            Ok(Job::InTx(job)) => {
                                took(1);
                                jobs.push(job);
                            }
                            Ok(plain) => {
                                // Runs next (already counted as running).
                                took(1);
                                next = Some(plain);
                                break;
                            }
                            Err(_) => break,
                        }
                    }
                }
                let n = jobs.len();
                let answers = run_shared(&mut worker, jobs, &load);
                // Not running once committed: the gauges say so before any client has its answer
                // (a scrape after the last answer reads them at rest).
                done(n);
                for (job, outcome) in answers {
                    job.reply(outcome);
                }
            }
        }
    }
}

/// The jobs run in one shared commit, each with its outcome (to answer).
fn run_shared(
    worker: &mut Worker,
    mut jobs: Vec<Box<dyn TxJob>>,
    load: &WriteLoad,
) -> Vec<(Box<dyn TxJob>, Result<(), HostError>)> {
    let calls: Vec<SharedCall<'_, ()>> = jobs
        .iter_mut()
        .map(|job| Box::new(move |tx: &mut Tx<'_>| job.run(tx)) as SharedCall<'_, ()>)
        .collect();
    let outcomes = worker.shared_commit(calls);
    load.outcomes(&outcomes, worker.contract());
    jobs.into_iter().zip(outcomes).collect()
}

/// How many workers of each kind, and how they behave.
pub struct PoolOptions {
    /// Workers that write (1 on SQLite).
    pub writers: usize,
    pub readers: usize,
    /// How long a write waits for another process's lock before it fails busy.
    pub busy_timeout: Option<std::time::Duration>,
    /// Write jobs that may share one transaction and commit (1: each commits alone).
    pub shared_commit_max: usize,
    /// Told what the workers' committed calls did (metrics).
    pub observer: Option<Arc<dyn Observer>>,
}

impl Pool {
    pub fn start(
        rt: &Arc<Runtime>,
        db: &Db,
        values: &serde_json::Value,
        opts: PoolOptions,
    ) -> Result<Pool, String> {
        let PoolOptions {
            writers,
            readers,
            busy_timeout,
            shared_commit_max,
            observer,
        } = opts;
        let writers = writers.max(1);
        // Several writers (PostgreSQL) commit in parallel, and the database shares their flushes.
        let shared_max = if writers > 1 { 1 } else { shared_commit_max.max(1) };
        let (write_tx, write_rx) = channel::<Job>();
        let (read_tx, read_rx) = channel::<Job>();
        let write_rx = Arc::new(Mutex::new(write_rx));
        let read_rx = Arc::new(Mutex::new(read_rx));
        let mut threads = Vec::new();
        let mut summary = None;
        let mut contract = None;
        let write_load = Arc::new(WriteLoad::default());
        for i in 0..writers + readers.max(1) {
            let mut worker = engine::worker(rt, db, values, false, busy_timeout)?;
            if let Some(o) = &observer {
                worker.observe(o.clone());
            }
            summary.get_or_insert_with(|| worker.summary().clone());
            contract.get_or_insert_with(|| worker.db().contract().clone());
            let rx = if i < writers {
                write_rx.clone()
            } else {
                read_rx.clone()
            };
            let kind = if i < writers { Kind::Write } else { Kind::Read };
            let name = if i < writers {
                format!("writer-{i}")
            } else {
                format!("reader-{}", i - writers)
            };
            let t = std::thread::Builder::new()
                .name(name)
                .spawn({
                    let load = write_load.clone();
                    move || serve(rx, worker, kind, shared_max, load)
                })
                .map_err(|e| format!("worker thread: {e}"))?;
            threads.push(t);
        }
        Ok(Pool {
            contract: contract.ok_or("no worker started")?,
            summary: summary.ok_or("no engine worker started")?,
            write: Some(write_tx),
            read: Some(read_tx),
            threads,
            write_load,
        })
    }

    /// Runs `f` on a worker and waits for its answer without blocking the async runtime.
    pub async fn run<T: Send + 'static>(
        &self,
        kind: Kind,
        f: impl FnOnce(&mut Worker) -> T + Send + 'static,
    ) -> Result<T, String> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.send(
            kind,
            Job::Plain(Box::new(move |w| {
                let _ = tx.send(f(w));
            })),
        )?;
        rx.await
            .map_err(|_| "an engine worker stopped during the call".to_string())
    }

    /// One engine route called by this server itself (the sweep, a delivery step, a status read)
    /// as `caller`, at `now`: the engine's answer, or why there is none.
    pub async fn route(
        &self,
        kind: Kind,
        caller: quota_core::Caller,
        method: &'static str,
        path: String,
        body: String,
        now: quota_core::Timestamp,
    ) -> Result<quota_core::Response, String> {
        self.run(kind, move |w| {
            let req = quota_core::Request {
                method,
                path: &path,
                query: "",
                body: &body,
                caller: Some(&caller),
            };
            w.handle_request(&req, now)
        })
        .await?
        .map_err(|e| e.to_string())
    }

    /// Runs `f` in a transaction on a worker: a read transaction on a reader, or on the writer a
    /// write transaction it may share with other requests' jobs (shared commit); the answer comes
    /// once that transaction has committed.
    pub async fn run_in_tx<T: Send + 'static>(
        &self,
        kind: Kind,
        f: impl FnMut(&mut Tx<'_>) -> Result<T, HostError> + Send + 'static,
    ) -> Result<Result<T, HostError>, String> {
        let (to, rx) = tokio::sync::oneshot::channel();
        let job = Typed { f, answer: None, to };
        self.send(kind, Job::InTx(Box::new(job)))?;
        rx.await
            .map_err(|_| "an engine worker stopped during the call".to_string())
    }

    fn send(&self, kind: Kind, job: Job) -> Result<(), String> {
        let queue = match kind {
            Kind::Read => &self.read,
            Kind::Write => &self.write,
        };
        let queue = queue.as_ref().ok_or("the server is stopping")?;
        if kind == Kind::Write {
            // Counted before it can be taken, so the count never goes below zero.
            self.write_load.queued.fetch_add(1, Ordering::Relaxed);
        }
        queue.send(job).map_err(|_| {
            if kind == Kind::Write {
                self.write_load.queued.fetch_sub(1, Ordering::Relaxed);
            }
            "the engine workers have stopped".to_string()
        })
    }

    /// [`Pool::run_in_tx`] until `f` is `Done`: a refresh with a run id, one chunk of users per
    /// job (and transaction), so the requests queued behind it run between its chunks.
    pub async fn run_in_tx_steps<T: Send + 'static>(
        &self,
        kind: Kind,
        f: impl Fn(&mut Tx<'_>) -> Result<Step<T>, HostError> + Send + Sync + 'static,
    ) -> Result<Result<T, HostError>, String> {
        let f = Arc::new(f);
        loop {
            let g = f.clone();
            match self.run_in_tx(kind, move |tx| g(tx)).await? {
                Ok(Step::More) => continue,
                Ok(Step::Done(v)) => return Ok(Ok(v)),
                Err(e) => return Ok(Err(e)),
            }
        }
    }

    /// Lets queued jobs finish, then stops the workers; returns how many calls ran again after a
    /// conflict with another transaction (PostgreSQL), over the pool's life.
    pub fn shutdown(&mut self) -> u64 {
        self.write = None;
        self.read = None;
        self.threads.drain(..).map(|t| t.join().unwrap_or(0)).sum()
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        self.shutdown();
    }
}
