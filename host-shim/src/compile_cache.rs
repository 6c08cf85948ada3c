//! Compiled components on disk (wasmtime's precompiled form, `.cwasm`), so a process that starts
//! often (every CLI command) loads the engine in milliseconds instead of compiling it (~0.7 s).
//!
//! A cache file is trusted only if everything matches: its name and its header carry a key, the
//! SHA-256 of the component's bytes and of the engine's compatibility hash (wasmtime's version,
//! compiler settings, features: a build with another wasmtime or configuration gets another key);
//! its header carries the SHA-256 of the compiled bytes after it, checked before they are handed to
//! wasmtime (so a truncated or corrupted file is never loaded). Anything else is compiled afresh
//! and written again, atomically (a temporary file, then a rename), so concurrent processes never
//! see half a file. A cache that cannot be written is not an error: the engine is compiled.

use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use wasmtime::component::Component;
use wasmtime::Engine;

const MAGIC: &[u8; 8] = b"QUOTACW1";

/// What `load` did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// A valid cache file was used.
    Hit,
    /// No file (or one that did not check out): compiled, and written for next time.
    Compiled,
    /// Compiled; the cache could not be written (reported, not an error).
    CompiledUncached,
}

/// Feeds `Hash` output into SHA-256 (std's hashers are not meant to be stable or collision-free).
struct ShaHasher(Sha256);

impl Hasher for ShaHasher {
    fn write(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }
    fn finish(&self) -> u64 {
        0
    }
}

/// The cache key of `component` compiled by `engine`.
pub fn key(engine: &Engine, component: &[u8]) -> [u8; 32] {
    let mut h = ShaHasher(Sha256::new());
    h.write(&Sha256::digest(component));
    engine.precompile_compatibility_hash().hash(&mut h);
    h.0.finalize().into()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The cache file of `key` in `dir`.
pub fn file_of(dir: &Path, key: &[u8; 32]) -> PathBuf {
    dir.join(format!("quota-engine-{}.cwasm", hex(&key[..16])))
}

/// The compiled bytes of a cache file if its magic, key and checksum all match.
fn checked(file: &[u8], key: &[u8; 32]) -> Option<Vec<u8>> {
    let rest = file.strip_prefix(MAGIC.as_slice())?;
    let (file_key, rest) = rest.split_at_checked(32)?;
    let (sum, payload) = rest.split_at_checked(32)?;
    (file_key == key && Sha256::digest(payload).as_slice() == sum).then(|| payload.to_vec())
}

/// `component` compiled by `engine`, from `dir`'s cache when a valid file is there.
pub fn load(engine: &Engine, component: &[u8], dir: &Path) -> wasmtime::Result<(Component, Outcome)> {
    let key = key(engine, component);
    let path = file_of(dir, &key);
    if let Some(payload) = std::fs::read(&path).ok().and_then(|f| checked(&f, &key)) {
        // SAFETY: the bytes are what `Component::serialize` wrote for this component and this
        // engine's configuration (key), unchanged since (checksum); wasmtime checks its own
        // header and version again.
        if let Ok(c) = unsafe { Component::deserialize(engine, &payload) } {
            return Ok((c, Outcome::Hit));
        }
    }
    let compiled = Component::from_binary(engine, component)?;
    let outcome = match store(&path, &key, &compiled.serialize()?) {
        Ok(()) => Outcome::Compiled,
        Err(_) => Outcome::CompiledUncached,
    };
    Ok((compiled, outcome))
}

fn store(path: &Path, key: &[u8; 32], payload: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let mut bytes = Vec::with_capacity(8 + 64 + payload.len());
    bytes.extend_from_slice(MAGIC);
    bytes.extend_from_slice(key);
    bytes.extend_from_slice(&Sha256::digest(payload));
    bytes.extend_from_slice(payload);
    let tmp = dir.join(format!(
        ".{}.{}.tmp",
        path.file_name().and_then(|n| n.to_str()).unwrap_or("cwasm"),
        std::process::id()
    ));
    std::fs::write(&tmp, &bytes)?;
    std::fs::rename(&tmp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

/// The default cache directory: `$QUOTA_CACHE_DIR`, else `$XDG_CACHE_HOME/quota-engine`, else
/// `~/.cache/quota-engine`; None when none is known (then nothing is cached).
pub fn default_dir() -> Option<PathBuf> {
    let env = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    env("QUOTA_CACHE_DIR")
        .or_else(|| env("XDG_CACHE_HOME").map(|d| d.join("quota-engine")))
        .or_else(|| env("HOME").map(|h| h.join(".cache").join("quota-engine")))
}

#[cfg(test)]
mod tests {
    #[test]
    fn keys_differ_by_component() {
        let engine = wasmtime::Engine::default();
        assert_ne!(super::key(&engine, b"a"), super::key(&engine, b"b"));
        assert_eq!(super::key(&engine, b"a"), super::key(&engine, b"a"));
    }
}
