//! Generated host bindings for the `quota-engine` world (private to this crate).

wasmtime::component::bindgen!({
    path: "../wit",
    world: "quota-engine",
});

pub use exports::quota::engine::api;
pub use quota::engine::{storage, types};
