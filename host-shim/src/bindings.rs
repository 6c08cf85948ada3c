//! Generated host bindings for the `quota-engine` world (private to this crate). An instance of the
//! component is a [`ComponentInstance`] here: `QuotaEngine` names the Python and Node packages'
//! engine over a database, one thing per word (ARCHITECTURE.md).

wasmtime::component::bindgen!({
    path: "../wit/0.3.0",
    world: "quota-engine",
});

pub use exports::quota::engine::{api, hosting};
pub use quota::engine::{sql, types};

/// An instance of the component (the world's generated type), and its pre-linked form.
pub use QuotaEngine as ComponentInstance;
pub use QuotaEnginePre as ComponentPre;
