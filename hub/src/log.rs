//! Log lines on stderr, each with the UTC time. Tokens are never passed here.

pub fn line(msg: &str) {
    let now = quota_core::Timestamp(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs() as i64)
            .unwrap_or(0),
    );
    eprintln!("{now}Z {msg}");
}

macro_rules! info {
    ($($t:tt)*) => { $crate::log::line(&format!($($t)*)) };
}
pub(crate) use info;
