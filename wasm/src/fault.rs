//! Test-only faults (`--features fault-injection`, `scripts/build-wasm.sh --fault`): trap after
//! writing a row, or spin until the host's deadline stops the guest; or stop writing events (the
//! component bench's same-run measure of their cost).

use std::sync::atomic::{AtomicBool, Ordering};

use quota_core::Timestamp;

use crate::bindings::api as wit;
use crate::sql_store::SqlStore;

/// Set by `/__fault/events-off`: this instance's calls write no events from then on. State of the
/// fault build's instance only, never of a call.
static EVENTS_OFF: AtomicBool = AtomicBool::new(false);

/// A call in `store`, as this instance makes them: without events after `/__fault/events-off`.
pub fn tx(store: &mut SqlStore) -> quota_core::engine_call::EngineCall<'_> {
    let tx = quota_core::engine_call::EngineCall::new(store);
    if EVENTS_OFF.load(Ordering::Relaxed) {
        tx.without_events()
    } else {
        tx
    }
}

pub fn fault(path: &str) -> Option<Result<wit::HttpResponse, String>> {
    use quota_core::store::UserStore;
    match path {
        "/__fault/trap-after-write" => {
            let user = quota_core::store::UserRecord {
                username: "fault-written".into(),
                balance: 123,
                unlimited: false,
                updated_at: Timestamp(0),
            };
            if let Err(e) = SqlStore::host().put_user(&user) {
                return Some(Err(e.0));
            }
            panic!("injected trap after a write");
        }
        // The events' cost, measured by the component bench: this instance writes none from now.
        "/__fault/events-off" => {
            EVENTS_OFF.store(true, Ordering::Relaxed);
            Some(Ok(wit::HttpResponse {
                status: 200,
                body: "{}".into(),
                observations: Vec::new(),
            }))
        }
        "/__fault/spin" => {
            let mut n: u64 = 0;
            loop {
                n = std::hint::black_box(n.wrapping_add(1));
            }
        }
        _ => None,
    }
}
