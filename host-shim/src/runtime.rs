//! One per process: the wasmtime engine, the compiled component, its linker and `InstancePre`, and
//! the epoch ticker that bounds every call's running time.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use wasmtime::component::{Component, HasSelf, Linker};
use wasmtime::{Config, Engine};

use crate::bindings::{QuotaEngine, QuotaEnginePre};
use crate::compile_cache;
use crate::error::HostError;
use crate::state::HostState;

/// Bounds on each engine call.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Largest linear memory of one instance, in bytes.
    pub memory_bytes: usize,
    /// How long one call may run before it is stopped (rounded up to whole ticks).
    pub call_deadline: Duration,
    /// How often the epoch advances.
    pub tick: Duration,
    /// Users per transaction of a refresh that has a run id ([`crate::Worker::chunked`]), so a
    /// refresh of a million users never holds its locks for long (0: the whole refresh in one).
    pub refresh_chunk_users: u32,
}

impl Default for Limits {
    fn default() -> Limits {
        // A refresh of 100,000 users keeps every change in memory for a moment (about 20 MiB) and
        // runs well under a second; both limits leave a wide margin above that.
        Limits {
            memory_bytes: 256 << 20,
            call_deadline: Duration::from_secs(30),
            tick: Duration::from_millis(10),
            // About 30 ms of PostgreSQL's time and 6 ms of SQLite's per chunk (docs/postgres.md).
            refresh_chunk_users: 2_000,
        }
    }
}

impl Limits {
    pub fn deadline_ticks(&self) -> u64 {
        let tick = self.tick.as_nanos().max(1);
        u64::try_from(self.call_deadline.as_nanos().div_ceil(tick))
            .unwrap_or(u64::MAX)
            .max(1)
    }
}

fn load_error(e: wasmtime::Error) -> HostError {
    HostError::Load(format!("{e:#}"))
}

pub struct Runtime {
    pub(crate) engine: Engine,
    pub(crate) pre: QuotaEnginePre<HostState>,
    pub(crate) limits: Limits,
    stop: Arc<AtomicBool>,
    ticker: Option<JoinHandle<()>>,
}

impl Runtime {
    /// Compiles the component file (built by `scripts/build-wasm.sh`).
    pub fn load(path: &Path, limits: Limits) -> Result<Arc<Runtime>, HostError> {
        let bytes = std::fs::read(path).map_err(|e| {
            HostError::Load(format!(
                "{}: {e} (build it with `bash scripts/build-wasm.sh`)",
                path.display()
            ))
        })?;
        Runtime::from_bytes(&bytes, limits)
    }

    pub fn from_bytes(bytes: &[u8], limits: Limits) -> Result<Arc<Runtime>, HostError> {
        let engine = Runtime::engine()?;
        let component = Component::from_binary(&engine, bytes).map_err(load_error)?;
        Runtime::with(engine, component, limits)
    }

    /// [`Runtime::from_bytes`], with the compiled component kept in `cache_dir`
    /// (see [`crate::compile_cache`]): a later process loads it in milliseconds.
    pub fn from_bytes_cached(
        bytes: &[u8],
        limits: Limits,
        cache_dir: &Path,
    ) -> Result<(Arc<Runtime>, compile_cache::Outcome), HostError> {
        let engine = Runtime::engine()?;
        let (component, outcome) = compile_cache::load(&engine, bytes, cache_dir).map_err(load_error)?;
        Ok((Runtime::with(engine, component, limits)?, outcome))
    }

    fn engine() -> Result<Engine, HostError> {
        let mut config = Config::new();
        config.epoch_interruption(true);
        // `QUOTA_PERFMAP=1`: name the guest's compiled functions for `perf report` (/tmp/perf-PID.map).
        if std::env::var_os("QUOTA_PERFMAP").is_some() {
            config.profiler(wasmtime::ProfilingStrategy::PerfMap);
        }
        Engine::new(&config).map_err(load_error)
    }

    fn with(engine: Engine, component: Component, limits: Limits) -> Result<Arc<Runtime>, HostError> {
        let load = load_error;
        let mut linker: Linker<HostState> = Linker::new(&engine);
        QuotaEngine::add_to_linker::<HostState, HasSelf<HostState>>(&mut linker, |s| s).map_err(load)?;
        let pre = QuotaEnginePre::new(linker.instantiate_pre(&component).map_err(load)?).map_err(load)?;
        let stop = Arc::new(AtomicBool::new(false));
        let ticker = {
            let (engine, stop, tick) = (engine.clone(), stop.clone(), limits.tick);
            std::thread::Builder::new()
                .name("quota-epoch".into())
                .spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        std::thread::sleep(tick);
                        engine.increment_epoch();
                    }
                })
                .map_err(|e| HostError::Load(format!("starting the epoch ticker: {e}")))?
        };
        Ok(Arc::new(Runtime {
            engine,
            pre,
            limits,
            stop,
            ticker: Some(ticker),
        }))
    }

    pub fn limits(&self) -> Limits {
        self.limits
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.ticker.take() {
            let _ = t.join();
        }
    }
}
