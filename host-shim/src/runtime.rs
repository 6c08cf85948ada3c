//! One per process: the wasmtime engine, the compiled component, its linker and `InstancePre`, and
//! the epoch ticker that bounds every call's running time.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use wasmtime::component::{Component, HasSelf, Linker};
use wasmtime::{Config, Engine, Store, StoreLimitsBuilder};

use crate::bindings::{ComponentInstance, ComponentPre};
use crate::compile_cache;
use crate::contract::{Durability, HostingContract, SetupStatement};
use crate::error::HostError;
use crate::sql::{Database, Dialect};
use crate::store_data::HostState;

/// Asks a throwaway instance (over no database: `contract` touches none) for both contracts.
fn read_contracts(
    engine: &Engine,
    pre: &ComponentPre<HostState>,
) -> Result<[Arc<HostingContract>; 2], HostError> {
    let mut store = wasmtime::Store::new(engine, HostState::detached());
    store.set_epoch_deadline(u64::MAX);
    let instance = pre.instantiate(&mut store).map_err(load_error)?;
    let mut read = |d| -> Result<Arc<HostingContract>, HostError> {
        let c = instance
            .quota_engine_hosting()
            .call_contract(&mut store, d)
            .map_err(load_error)?;
        Ok(Arc::new(c.into()))
    };
    Ok([
        read(crate::bindings::sql::Dialect::Sqlite)?,
        read(crate::bindings::sql::Dialect::Postgres)?,
    ])
}

/// Bounds on each engine call: the hosting contract's, unless a host sets one of its own here.
#[derive(Clone, Copy, Debug, Default)]
pub struct Limits {
    /// Largest linear memory of one instance, in bytes.
    pub memory_bytes: Option<usize>,
    /// How long one call may run before it is stopped (rounded up to whole ticks).
    pub call_deadline: Option<Duration>,
    /// How often the epoch advances (10 ms unless given).
    pub tick: Option<Duration>,
    /// Users per transaction of a refresh that has a run id ([`crate::Worker::chunked`]), so a
    /// refresh of a million users never holds its locks for long (0: the whole refresh in one).
    pub refresh_chunk_users: Option<u32>,
}

/// The bounds in force for one dialect: [`Limits`] over that dialect's contract.
#[derive(Clone, Copy, Debug)]
pub struct Bounds {
    pub memory_bytes: usize,
    pub call_deadline: Duration,
    /// `migrate`'s deadline (the contract's: longer than a call's, and never shorter).
    pub migration_deadline: Duration,
    pub tick: Duration,
    pub refresh_chunk_users: u32,
}

impl Bounds {
    fn of(contract: &HostingContract, limits: &Limits, tick: Duration) -> Bounds {
        Bounds {
            memory_bytes: limits
                .memory_bytes
                .unwrap_or(usize::try_from(contract.memory_limit_bytes).unwrap_or(usize::MAX)),
            call_deadline: limits.call_deadline.unwrap_or(contract.call_deadline),
            migration_deadline: contract.migration_deadline,
            tick,
            refresh_chunk_users: limits.refresh_chunk_users.unwrap_or(contract.refresh_chunk_users),
        }
    }

    pub fn deadline_ticks(&self) -> u64 {
        self.ticks(self.call_deadline)
    }

    pub fn migration_ticks(&self) -> u64 {
        self.ticks(self.migration_deadline.max(self.call_deadline))
    }

    fn ticks(&self, d: Duration) -> u64 {
        let tick = self.tick.as_nanos().max(1);
        u64::try_from(d.as_nanos().div_ceil(tick))
            .unwrap_or(u64::MAX)
            .max(1)
    }
}

fn load_error(e: wasmtime::Error) -> HostError {
    HostError::Load(format!("{e:#}"))
}

pub struct Runtime {
    pub(crate) engine: Engine,
    pub(crate) pre: ComponentPre<HostState>,
    /// Per dialect (SQLite, PostgreSQL), like `contracts`.
    bounds: [Bounds; 2],
    /// The hosting contract, as the component states it, per dialect (SQLite, PostgreSQL).
    contracts: [Arc<HostingContract>; 2],
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
        ComponentInstance::add_to_linker::<HostState, HasSelf<HostState>>(&mut linker, |s| s)
            .map_err(load)?;
        let pre = ComponentPre::new(linker.instantiate_pre(&component).map_err(load)?).map_err(load)?;
        let contracts = read_contracts(&engine, &pre)?;
        let tick = limits.tick.unwrap_or(Duration::from_millis(10));
        let bounds = [
            Bounds::of(&contracts[0], &limits, tick),
            Bounds::of(&contracts[1], &limits, tick),
        ];
        let stop = Arc::new(AtomicBool::new(false));
        let ticker = {
            let (engine, stop) = (engine.clone(), stop.clone());
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
            bounds,
            contracts,
            stop,
            ticker: Some(ticker),
        }))
    }

    /// The bounds in force on a database of `dialect` (its contract's, or the host's [`Limits`]).
    pub fn bounds(&self, dialect: Dialect) -> Bounds {
        self.bounds[index(dialect)]
    }

    /// The hosting contract for a database of `dialect`.
    pub fn contract(&self, dialect: Dialect) -> Arc<HostingContract> {
        self.contracts[index(dialect)].clone()
    }

    /// The statements a new connection to a database of `dialect` runs first, with the host's busy
    /// wait and durability in them (asked of a throwaway instance: it touches no storage).
    pub fn connection_setup(
        &self,
        dialect: Dialect,
        busy_wait: Duration,
        durability: Durability,
    ) -> Result<Vec<SetupStatement>, HostError> {
        use crate::bindings::hosting::Durability as D;
        let mut store = wasmtime::Store::new(&self.engine, HostState::detached());
        store.set_epoch_deadline(self.bounds(dialect).deadline_ticks());
        let instance = self.pre.instantiate(&mut store).map_err(load_error)?;
        let wait = u32::try_from(busy_wait.as_millis()).unwrap_or(u32::MAX);
        let d = match durability {
            Durability::Full => D::Full,
            Durability::Normal => D::Normal,
        };
        let statements = instance
            .quota_engine_hosting()
            .call_connection_setup(&mut store, wit_dialect(dialect), wait, d)
            .map_err(load_error)?;
        Ok(statements.into_iter().map(SetupStatement::from).collect())
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

fn index(dialect: Dialect) -> usize {
    match dialect {
        Dialect::Sqlite => 0,
        Dialect::Postgres => 1,
    }
}

fn wit_dialect(dialect: Dialect) -> crate::bindings::sql::Dialect {
    match dialect {
        Dialect::Sqlite => crate::bindings::sql::Dialect::Sqlite,
        Dialect::Postgres => crate::bindings::sql::Dialect::Postgres,
    }
}

/// A fresh store and instance over `db`, with the worker's bounds: its memory limit and deadline.
pub(crate) fn instantiate(
    runtime: &Runtime,
    bounds: &Bounds,
    db: Box<dyn Database>,
) -> Result<(Store<HostState>, ComponentInstance), HostError> {
    let limits = StoreLimitsBuilder::new()
        .memory_size(bounds.memory_bytes)
        .instances(4)
        .build();
    let mut store = Store::new(&runtime.engine, HostState::new(db, limits));
    store.limiter(|s| &mut s.limits);
    store.set_epoch_deadline(bounds.deadline_ticks());
    let bindings = runtime
        .pre
        .instantiate(&mut store)
        .map_err(|e| HostError::Load(format!("{e:#}")))?;
    Ok((store, bindings))
}
