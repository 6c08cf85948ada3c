//! A host the scenarios are replayed against, and the native one: the core itself over an
//! in-memory store.

use serde_json::Value;

use quota_core::api::{Request, Response};
use quota_core::Timestamp;

/// Something that answers engine requests: the native core, the wasm component, ...
pub trait ScenarioHost {
    /// Starts from empty storage with this values document. `now` is the scenario's clock: a host
    /// that does start-up work (a server's stale cleanup) must do it at this time, never the real one.
    fn reset(&mut self, values: &Value, now: Timestamp) -> Result<(), String>;
    /// Replaces the configuration, keeping the stored state (a restart, for a server), at `now`.
    fn reconfigure(&mut self, values: &Value, now: Timestamp) -> Result<(), String>;
    /// One request (path below the base URL, query without `?`).
    fn handle(&mut self, req: &Request<'_>, now: Timestamp) -> Result<Response, String>;
}

/// The native host: the core itself over an in-memory store.
#[derive(Default)]
pub struct NativeHost {
    pub config: Option<quota_core::Config>,
    pub store: quota_core::MemStore,
}

impl ScenarioHost for NativeHost {
    fn reset(&mut self, values: &Value, now: Timestamp) -> Result<(), String> {
        self.store = quota_core::MemStore::new();
        self.reconfigure(values, now)
    }

    fn reconfigure(&mut self, values: &Value, _now: Timestamp) -> Result<(), String> {
        self.config = Some(quota_core::Config::from_values(values).map_err(|e| e.to_string())?);
        Ok(())
    }

    fn handle(&mut self, req: &Request<'_>, now: Timestamp) -> Result<Response, String> {
        let config = self.config.as_ref().ok_or("not configured")?;
        quota_core::handle_request(config, &mut self.store, req, now)
            .map(|o| o.answer)
            .map_err(|e| e.to_string())
    }
}
