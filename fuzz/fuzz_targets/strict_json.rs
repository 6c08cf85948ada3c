//! `strict_json`: see `quota_scenarios::surfaces::strict_json` for the input format and the invariants.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| quota_scenarios::surfaces::strict_json(data));
