//! The server's clock: the system clock, optionally shifted to start at a given instant (testing).

use std::time::{SystemTime, UNIX_EPOCH};

use quota_core::Timestamp;

#[derive(Clone, Copy, Debug)]
pub struct Clock {
    offset_ms: i64,
}

fn system_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

impl Clock {
    pub fn system() -> Clock {
        Clock { offset_ms: 0 }
    }

    /// A clock that reads `start` now and then advances in real time.
    pub fn starting_at(start: Timestamp) -> Clock {
        Clock {
            offset_ms: start.seconds() * 1000 - system_ms(),
        }
    }

    pub fn now_ms(&self) -> i64 {
        system_ms() + self.offset_ms
    }

    pub fn now(&self) -> Timestamp {
        Timestamp(self.now_ms().div_euclid(1000))
    }
}
