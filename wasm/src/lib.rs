//! `quota-wasm`: the engine as a WebAssembly component. Bindings, type conversion, and a `Store`
//! over the host's SQL bridge with every query, the schema and its migrations; every rule lives in
//! `quota-core`.

//!
//! The one piece of state kept between calls is the parsed configuration (set by `configure`), so a
//! host can reuse an instance for many calls.

#[cfg(all(not(target_feature = "atomics"), target_family = "wasm"))]
#[global_allocator]
static ALLOCATOR: talc::wasm::WasmDynamicTalc = talc::wasm::new_wasm_dynamic_allocator();

mod bindings;
mod convert;
mod exports;
#[cfg(feature = "fault-injection")]
mod fault;
mod hosting;
mod sql_json;
mod sql_store;
