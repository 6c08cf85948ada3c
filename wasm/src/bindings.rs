//! Generated bindings for the `quota-engine` world (private to this crate).
#![allow(clippy::all, unsafe_op_in_unsafe_fn, missing_docs)]

wit_bindgen::generate!({
    path: "../wit/0.3.0",
    world: "quota-engine",
    generate_all,
});

pub(crate) use exports::quota::engine::{api, hosting};
pub(crate) use quota::engine::{sql, types};
