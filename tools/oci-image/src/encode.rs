//! How the layout's parts are written: SHA-256 digests, RFC 3339 times, canonical JSON, blobs.

use std::path::Path;

use oci_spec::image::{Descriptor, Digest, MediaType, Sha256Digest};
use sha2::{Digest as _, Sha256};

pub fn sha256(bytes: &[u8]) -> Result<Digest, String> {
    let hex: String = Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect();
    hex.parse::<Sha256Digest>()
        .map(Into::into)
        .map_err(|e| e.to_string())
}

/// RFC 3339 UTC of `seconds` since 1970 (no date crate for one format).
pub fn rfc3339(seconds: u64) -> String {
    let days = (seconds / 86_400) as i64;
    let rem = seconds % 86_400;
    // Howard Hinnant's days-to-civil.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// JSON with every object's keys sorted, so the same content gives the same bytes (and digest).
pub fn canonical(v: &impl serde::Serialize) -> Result<Vec<u8>, String> {
    fn sort(v: serde_json::Value) -> serde_json::Value {
        match v {
            serde_json::Value::Object(m) => {
                let mut pairs: Vec<_> = m.into_iter().collect();
                pairs.sort_by(|a, b| a.0.cmp(&b.0));
                serde_json::Value::Object(pairs.into_iter().map(|(k, v)| (k, sort(v))).collect())
            }
            serde_json::Value::Array(a) => serde_json::Value::Array(a.into_iter().map(sort).collect()),
            other => other,
        }
    }
    let v = serde_json::to_value(v).map_err(|e| e.to_string())?;
    serde_json::to_vec(&sort(v)).map_err(|e| e.to_string())
}

pub fn blob(out: &Path, bytes: &[u8], media: MediaType) -> Result<Descriptor, String> {
    let digest = sha256(bytes)?;
    let path = out.join("blobs/sha256").join(digest.digest());
    std::fs::write(&path, bytes).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(Descriptor::new(media, bytes.len() as u64, digest))
}
