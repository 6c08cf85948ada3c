//! What the benches share: the component they load.

use std::path::PathBuf;
use std::sync::Arc;

use quota_host::{Limits, Runtime};

/// The component built by `bash scripts/build-wasm.sh`, or the one `QUOTA_BENCH_COMPONENT` names
/// (another commit's build, for a before and after in one run on one machine).
pub fn component() -> PathBuf {
    std::env::var_os("QUOTA_BENCH_COMPONENT").map_or_else(
        || {
            PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("..")
                .join(quota_host::COMPONENT_PATH)
        },
        PathBuf::from,
    )
}

/// The runtime over [`component`].
pub fn runtime() -> Arc<Runtime> {
    Runtime::load(&component(), Limits::default()).unwrap_or_else(|e| panic!("{e}"))
}
