//! The reference's bookkeeping of one account's credit: an undated lot and dated grants, spent
//! in an order the test chooses (the engine's, or a wrong one the test must catch).

use std::collections::BTreeMap;

/// Which grant a reference spends first: the engine's order, or a wrong one to see the test fail.
#[derive(Clone, Copy, PartialEq)]
pub enum Order {
    SoonestFirst,
    LatestFirst,
}

/// One account's credit as the reference keeps it.
#[derive(Clone, Debug, Default)]
pub struct Lots {
    pub undated: i64,
    /// grant id -> (remaining, expires at); spent or lapsed grants are removed.
    pub grants: BTreeMap<i64, (i64, i64)>,
}

impl Lots {
    pub fn live(&self, now: i64) -> i64 {
        self.grants
            .values()
            .filter(|(_, at)| *at > now)
            .map(|(r, _)| r)
            .sum()
    }
    pub fn balance(&self, now: i64) -> i64 {
        self.undated + self.live(now)
    }
    /// Due grants written off (the engine's settle before any write, or the sweep).
    pub fn settle(&mut self, now: i64) {
        self.grants.retain(|_, (_, at)| *at > now);
    }
    pub fn draw(&mut self, mut amount: i64, now: i64, order: Order) {
        let mut live: Vec<(i64, i64)> = self
            .grants
            .iter()
            .filter(|(_, (_, at))| *at > now)
            .map(|(id, (_, at))| (*at, *id))
            .collect();
        live.sort();
        if order == Order::LatestFirst {
            live.reverse();
        }
        for (_, id) in live {
            if amount == 0 {
                break;
            }
            let g = self.grants.get_mut(&id).expect("grant");
            let took = g.0.min(amount);
            g.0 -= took;
            amount -= took;
            if g.0 == 0 {
                self.grants.remove(&id);
            }
        }
        self.undated -= amount;
    }
}
