//! Every scenario replayed through the wasm component over a real SQLite file gives exactly the
//! native core's transcript (status and body of every request, byte for byte).

use crate::common;

use quota_host::{Database, Durability, SqliteDb, SqliteOptions};

#[test]
fn component_over_sqlite_matches_the_native_core_byte_for_byte() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut n = 0;
    let base = dir.path().to_path_buf();
    let fresh = Box::new(move || -> Box<dyn Database> {
        n += 1;
        Box::new(
            SqliteDb::open(
                &common::runtime(),
                &base.join(format!("s{n}.db")),
                SqliteOptions {
                    durability: Some(Durability::Normal),
                    ..SqliteOptions::default()
                },
            )
            .expect("sqlite file"),
        )
    });
    let (files, exchanges) = common::assert_every_scenario_matches_native(fresh, "SQLite");
    println!("{files} scenarios, {exchanges} requests: component over SQLite == native core");
}
