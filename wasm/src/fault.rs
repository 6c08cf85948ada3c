//! Test-only faults (`--features fault-injection`, `scripts/build-wasm.sh --fault`): trap after
//! writing a row, or spin until the host's deadline stops the guest; or stop writing events (the
//! component bench's same-run measure of their cost).

use quota_core::Timestamp;

use crate::bindings::api as wit;
use crate::sql_store::SqlStore;

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
            quota_core::feed::set_writing(false);
            Some(Ok(wit::HttpResponse {
                status: 200,
                body: "{}".into(),
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
