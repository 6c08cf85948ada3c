//! Scenario replay through the component (see `quota_core::scenario`), over any database.

use std::sync::Arc;

use quota_core::api::{Caller, Response};
use quota_core::scenario::ScenarioHost;
use quota_core::Timestamp;
use serde_json::Value;

use crate::runtime::Runtime;
use crate::sql::Database;
use crate::worker::Worker;

/// Replays scenarios through the wasm component; `fresh` makes the empty database for each scenario.
pub struct ComponentHost {
    runtime: Arc<Runtime>,
    fresh: Box<dyn FnMut() -> Box<dyn Database>>,
    worker: Option<Worker>,
}

impl ComponentHost {
    pub fn new(runtime: Arc<Runtime>, fresh: Box<dyn FnMut() -> Box<dyn Database>>) -> ComponentHost {
        ComponentHost {
            runtime,
            fresh,
            worker: None,
        }
    }

    pub fn worker(&mut self) -> Option<&mut Worker> {
        self.worker.as_mut()
    }
}

impl ScenarioHost for ComponentHost {
    fn reset(&mut self, values: &Value, _now: Timestamp) -> Result<(), String> {
        let backend = (self.fresh)();
        self.worker =
            Some(Worker::new(self.runtime.clone(), backend, &values.to_string()).map_err(|e| e.to_string())?);
        Ok(())
    }

    fn reconfigure(&mut self, values: &Value, _now: Timestamp) -> Result<(), String> {
        let w = self.worker.as_mut().ok_or("not started")?;
        w.configure(&values.to_string())
            .map(|_| ())
            .map_err(|e| e.to_string())
    }

    fn handle(
        &mut self,
        method: &str,
        path: &str,
        query: &str,
        body: &str,
        caller: Option<&Caller>,
        now: Timestamp,
    ) -> Result<Response, String> {
        let w = self.worker.as_mut().ok_or("not started")?;
        let req = quota_core::Request {
            method,
            path,
            query,
            body,
            caller,
        };
        w.handle_request(&req, now).map_err(|e| e.to_string())
    }
}
