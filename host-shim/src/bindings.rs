//! Generated host bindings for the `quota-engine` world (private to this crate).

wasmtime::component::bindgen!({
    path: "../wit/0.2.0",
    world: "quota-engine",
});

pub use exports::quota::engine::api;
pub use quota::engine::{sql, types};
