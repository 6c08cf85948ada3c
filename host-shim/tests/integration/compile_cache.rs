//! The compiled-component cache: a hit loads the same engine; a truncated, corrupted, foreign
//! (another component's) or garbage file is detected and rebuilt, never loaded; an unwritable
//! cache only costs the compile.

use crate::common;

use std::path::Path;

use quota_host::CacheOutcome as Outcome;
use quota_host::{Limits, Runtime, SqliteDb, Worker};

fn bytes(rel: &str) -> Vec<u8> {
    std::fs::read(common::workspace().join(rel))
        .unwrap_or_else(|e| panic!("{rel}: {e} (bash scripts/build-wasm.sh --fault)"))
}

fn shipped() -> Vec<u8> {
    bytes(quota_host::COMPONENT_PATH)
}

fn load(component: &[u8], dir: &Path) -> (std::sync::Arc<Runtime>, Outcome) {
    Runtime::from_bytes_cached(component, Limits::default(), dir).expect("runtime")
}

/// The engine answers a request (the runtime works), and says whether it is the fault build.
fn is_fault_build(rt: std::sync::Arc<Runtime>) -> bool {
    let mut w = Worker::new(
        rt,
        Box::new(SqliteDb::memory(&common::runtime()).expect("db")),
        &common::fixture_json(),
    )
    .expect("worker");
    let admin = common::admin();
    let req = |path: &'static str| quota_core::Request {
        method: "GET",
        path,
        query: "",
        body: "",
        caller: Some(&admin),
    };
    let rates = w
        .handle_request(&req("/api/quota/rates"), quota_core::Timestamp(0))
        .expect("rates");
    assert_eq!(rates.status, 200, "{}", rates.body);
    // The fault build traps on this route; the shipped one has no such route.
    let probe = w.handle_request(&req("/__fault/trap-after-write"), quota_core::Timestamp(0));
    !matches!(probe, Ok(r) if r.status == 404)
}

fn cache_file(dir: &Path) -> std::path::PathBuf {
    let files: Vec<_> = std::fs::read_dir(dir)
        .expect("dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "cwasm"))
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    files[0].clone()
}

#[test]
fn a_second_load_hits_and_runs_the_same_engine() {
    let dir = tempfile::tempdir().expect("dir");
    let (rt, first) = load(&shipped(), dir.path());
    assert_eq!(first, Outcome::Compiled);
    assert!(!is_fault_build(rt));
    let (rt, second) = load(&shipped(), dir.path());
    assert_eq!(second, Outcome::Hit);
    assert!(!is_fault_build(rt));
}

#[test]
fn truncated_corrupted_and_garbage_files_are_rebuilt_never_loaded() {
    let dir = tempfile::tempdir().expect("dir");
    load(&shipped(), dir.path());
    let file = cache_file(dir.path());
    let good = std::fs::read(&file).expect("read");
    let mut flipped = good.clone();
    let last = flipped.len() - 1;
    flipped[last] ^= 0x5a;
    let mut header_flipped = good.clone();
    header_flipped[10] ^= 1;
    for (what, contents) in [
        ("truncated", good[..good.len() / 2].to_vec()),
        ("one byte changed", flipped),
        ("its key changed", header_flipped),
        ("garbage", b"not a compiled component".to_vec()),
        ("empty", Vec::new()),
    ] {
        std::fs::write(&file, &contents).expect("write");
        let (rt, outcome) = load(&shipped(), dir.path());
        assert_eq!(outcome, Outcome::Compiled, "{what}");
        assert!(!is_fault_build(rt), "{what}");
        assert_eq!(
            std::fs::read(&file).expect("read"),
            good,
            "{what}: rewritten whole"
        );
        assert_eq!(load(&shipped(), dir.path()).1, Outcome::Hit, "{what}: then used");
    }
}

#[test]
fn a_file_made_for_another_component_is_not_used() {
    let dir = tempfile::tempdir().expect("dir");
    let other = tempfile::tempdir().expect("dir");
    // A valid cache file of the fault build, under the shipped component's name.
    let (rt, _) = load(&bytes(quota_host::FAULT_COMPONENT_PATH), other.path());
    assert!(is_fault_build(rt));
    let engine_key_file = {
        load(&shipped(), dir.path());
        cache_file(dir.path())
    };
    std::fs::copy(cache_file(other.path()), &engine_key_file).expect("copy");
    let (rt, outcome) = load(&shipped(), dir.path());
    assert_eq!(outcome, Outcome::Compiled);
    assert!(!is_fault_build(rt), "the shipped component, not the file's");
}

#[test]
fn an_unwritable_cache_only_costs_the_compile() {
    let dir = tempfile::tempdir().expect("dir");
    let blocker = dir.path().join("file");
    std::fs::write(&blocker, b"x").expect("write");
    // A directory below a plain file cannot be created.
    let (rt, outcome) = load(&shipped(), &blocker.join("cache"));
    assert_eq!(outcome, Outcome::CompiledUncached);
    assert!(!is_fault_build(rt));
}
