//! Every fuzz target's checks (src/surfaces.rs) over its seeds and over every input a fuzzer ever
//! found to break it (`tests/fuzz-regressions/<target>/`): a finding, once fixed, stays fixed.

use quota_scenarios::surfaces;

#[test]
fn every_seed_passes_its_targets_checks() {
    for target in surfaces::TARGETS {
        let seeds = quota_scenarios::fuzz_seeds::seeds(target);
        assert!(!seeds.is_empty(), "{target} has no seeds");
        for (name, data) in seeds {
            let r = std::panic::catch_unwind(|| surfaces::check(target, &data));
            assert!(r.is_ok(), "{target}: seed {name} breaks an invariant");
        }
    }
}

#[test]
fn every_saved_finding_passes_its_targets_checks() {
    let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fuzz-regressions");
    let mut count = 0;
    for target in surfaces::TARGETS {
        let Ok(entries) = std::fs::read_dir(dir.join(target)) else {
            continue;
        };
        for entry in entries {
            let path = entry.expect("a readable directory").path();
            let data = std::fs::read(&path).expect("a readable finding");
            let r = std::panic::catch_unwind(|| surfaces::check(target, &data));
            assert!(
                r.is_ok(),
                "{target}: {} breaks an invariant again",
                path.display()
            );
            count += 1;
        }
    }
    eprintln!("{count} saved findings replayed");
}
