//! The admin list of 50,000 users (`GET /admin/api/quota/`, whole) through the component over a
//! SQLite file, as quota-hub's worker answers it: the median of 10 calls.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use quota_core::{Caller, Request, Timestamp};
use quota_host::{Runtime, SqliteDb, SqliteOptions, Worker};

use super::{median, seed_sql, values};

const LIST_USERS: usize = 50_000;

pub fn admin_list(rt: &Arc<Runtime>, db: &Path) {
    let mut w = Worker::new(
        rt.clone(),
        Box::new(SqliteDb::open(rt, db, SqliteOptions::default()).unwrap()),
        &values().to_string(),
    )
    .unwrap();
    let names: Vec<String> = (0..LIST_USERS).map(|i| format!("u{i:05}")).collect();
    seed_sql(
        w.db(),
        names
            .iter()
            .enumerate()
            .map(|(i, n)| (n.as_str(), (i % 100) as i64)),
    );
    let admin = Caller {
        name: "bench".into(),
        admin: true,
        scopes: vec![],
    };
    let list = Request {
        method: "GET",
        path: "/admin/api/quota/",
        query: "",
        body: "",
        caller: Some(&admin),
    };
    let mut times = Vec::new();
    let mut bytes = 0;
    for _ in 0..10 {
        let t = Instant::now();
        let r = w.handle_request(&list, Timestamp(1_795_000_000)).unwrap();
        times.push(t.elapsed().as_secs_f64() * 1e3);
        assert_eq!(r.status, 200, "{}", r.body);
        bytes = r.body.len();
    }
    println!(
        "GET /admin/api/quota/ with {LIST_USERS} users (SQLite file), median of 10: {:.1} ms ({bytes} bytes)",
        median(times)
    );
}
