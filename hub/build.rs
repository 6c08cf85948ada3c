//! The server carries the engine component; say how to build it when it is missing.

fn main() {
    let dir = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| ".".into());
    let component = std::path::Path::new(&dir).join("../target/wasm/quota-engine.wasm");
    println!("cargo:rerun-if-changed={}", component.display());
    if !component.exists() {
        panic!(
            "the engine component {} is missing: run `bash scripts/build-wasm.sh` first",
            component.display()
        );
    }
}
