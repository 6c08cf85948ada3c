//! Engine workers on their own threads. Writes go to the writers (on SQLite one: it takes one writer
//! at a time, and queueing writes here instead of in SQLite's busy handler keeps latency flat; on
//! PostgreSQL several, whose conflicts the workers retry), reads to several readers, each with its
//! own connection and engine instance.

use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use quota_core::refresh::Step;
use quota_host::{ConfigSummary, HostError, Runtime, Worker};

use crate::db::Db;
use crate::engine;

type Job = Box<dyn FnOnce(&mut Worker) + Send>;

pub struct Pool {
    /// What the engine made of the values document (rules, enabled).
    pub summary: ConfigSummary,
    write: Option<Sender<Job>>,
    read: Option<Sender<Job>>,
    threads: Vec<JoinHandle<u64>>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Read,
    Write,
}

/// Answers jobs until the queue closes; returns how many calls ran again after a conflict.
fn serve(rx: Arc<Mutex<Receiver<Job>>>, mut worker: Worker) -> u64 {
    loop {
        // The lock is held only while waiting for the next job.
        let job = match rx.lock() {
            Ok(guard) => guard.recv(),
            Err(_) => return worker.conflicts_retried,
        };
        match job {
            Ok(job) => job(&mut worker),
            Err(_) => return worker.conflicts_retried,
        }
    }
}

impl Pool {
    pub fn start(
        rt: &Arc<Runtime>,
        db: &Db,
        values: &serde_json::Value,
        writers: usize,
        readers: usize,
        busy_timeout: std::time::Duration,
    ) -> Result<Pool, String> {
        let writers = writers.max(1);
        let (write_tx, write_rx) = channel::<Job>();
        let (read_tx, read_rx) = channel::<Job>();
        let write_rx = Arc::new(Mutex::new(write_rx));
        let read_rx = Arc::new(Mutex::new(read_rx));
        let mut threads = Vec::new();
        let mut summary = None;
        for i in 0..writers + readers.max(1) {
            let worker = engine::worker(rt, db, values, false, busy_timeout)?;
            summary.get_or_insert_with(|| worker.summary().clone());
            let rx = if i < writers {
                write_rx.clone()
            } else {
                read_rx.clone()
            };
            let name = if i < writers {
                format!("writer-{i}")
            } else {
                format!("reader-{}", i - writers)
            };
            let t = std::thread::Builder::new()
                .name(name)
                .spawn(move || serve(rx, worker))
                .map_err(|e| format!("worker thread: {e}"))?;
            threads.push(t);
        }
        Ok(Pool {
            summary: summary.ok_or("no engine worker started")?,
            write: Some(write_tx),
            read: Some(read_tx),
            threads,
        })
    }

    /// Runs `f` on a worker and waits for its answer without blocking the async runtime.
    pub async fn run<T: Send + 'static>(
        &self,
        kind: Kind,
        f: impl FnOnce(&mut Worker) -> T + Send + 'static,
    ) -> Result<T, String> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let job: Job = Box::new(move |w| {
            let _ = tx.send(f(w));
        });
        let queue = match kind {
            Kind::Read => &self.read,
            Kind::Write => &self.write,
        };
        queue
            .as_ref()
            .ok_or("the server is stopping")?
            .send(job)
            .map_err(|_| "the engine workers have stopped".to_string())?;
        rx.await
            .map_err(|_| "an engine worker stopped during the call".to_string())
    }

    /// Runs `f` as one job after another until it is `Done`: a refresh with a run id, one chunk of
    /// users per job (and transaction), so the jobs queued behind it (on SQLite's one writer: every
    /// write) run between its chunks instead of waiting for the whole refresh.
    pub async fn run_steps<T: Send + 'static>(
        &self,
        kind: Kind,
        f: impl Fn(&mut Worker) -> Result<Step<T>, HostError> + Send + Sync + 'static,
    ) -> Result<Result<T, HostError>, String> {
        let f = Arc::new(f);
        loop {
            let g = f.clone();
            match self.run(kind, move |w| g(w)).await? {
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
