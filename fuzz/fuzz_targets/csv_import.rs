//! `csv_import`: see `quota_scenarios::surfaces::csv_import` for the input format and the invariants.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| quota_scenarios::surfaces::csv_import(data));
