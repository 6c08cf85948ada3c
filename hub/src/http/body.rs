//! A request's body, read with a limit on its size and on the silence between its parts.

use axum::body::Body;
use http_body_util::BodyExt;
use quota_core::limits::BODY_BYTES_MAX;

/// How much of an oversized body is read and thrown away before the 413 is sent. A client that
/// does not send `Expect: 100-continue` (Python's http.client, many libraries) writes its whole
/// body before reading; closing with its bytes unread makes the kernel reset the connection and
/// the client never reads the answer. Past this, the connection is closed.
pub const OVERSIZED_BODY_DRAIN_BYTES_MAX: usize = 16 << 20;

/// The body, or `None` when it is larger than the engine takes (read to its end, or to
/// [`oversized_body_drain_bytes_max`] past the limit, and thrown away).
pub(super) async fn read_body(
    mut body: Body,
    silence_max: std::time::Duration,
) -> Result<Option<Vec<u8>>, String> {
    let mut kept = Vec::new();
    let mut seen = 0usize;
    loop {
        let Ok(frame) = tokio::time::timeout(silence_max, body.frame()).await else {
            return Err(format!(
                "nothing received for {} ms (--body-read-timeout-ms)",
                silence_max.as_millis()
            ));
        };
        let Some(frame) = frame else { break };
        let frame = frame.map_err(|e| e.to_string())?;
        let Ok(data) = frame.into_data() else { continue };
        seen = seen.saturating_add(data.len());
        if seen <= BODY_BYTES_MAX {
            kept.extend_from_slice(&data);
        } else if seen > BODY_BYTES_MAX + OVERSIZED_BODY_DRAIN_BYTES_MAX {
            break;
        }
    }
    Ok((seen <= BODY_BYTES_MAX).then_some(kept))
}
