//! Generated host bindings for the `quota-engine` world (private to this crate).

wasmtime::component::bindgen!({
    path: "../wit/0.3.0",
    world: "quota-engine",
});

pub use exports::quota::engine::{api, hosting};
pub use quota::engine::{sql, types};
