//! `handle-request-step`: a REST request answered by the engine's router over the host's store
//! (a refresh with a run id one chunk per step).

use quota_core::refresh::Step;
use quota_core::{api as core_api, Timestamp};

use super::configured;
use crate::bindings::api as wit;
use crate::sql_store::SqlStore;

pub(super) fn handle_request_step(
    req: wit::HttpRequest,
    now: i64,
    chunk_users: u32,
) -> Result<wit::RequestStep, String> {
    let caller = req.caller.map(|c| quota_core::Caller {
        name: c.name,
        admin: c.admin,
        scopes: c.scopes,
    });
    #[cfg(feature = "fault-injection")]
    if let Some(r) = crate::fault::fault(&req.path) {
        return r.map(wit::RequestStep::Done);
    }
    let request = quota_core::Request {
        method: &req.method,
        path: &req.path,
        query: &req.query,
        body: &req.body,
        caller: caller.as_ref(),
    };
    let cfg = configured::config().ok_or("the host did not call `configure` first")?;
    let mut store = SqlStore::host();
    let step = core_api::handle_request_step(
        &cfg,
        configured::tx(&mut store),
        &request,
        Timestamp(now),
        chunk_users,
    )
    .map_err(|e| e.0)?;
    Ok(match step.answer {
        Step::Done(r) => wit::RequestStep::Done(wit::HttpResponse {
            status: r.status,
            body: r.body,
            observations: crate::convert::observations_out(step.observations),
        }),
        Step::More => wit::RequestStep::More,
    })
}
