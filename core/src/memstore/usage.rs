//! The usage sums in memory.

use std::collections::BTreeMap;

use super::MemStore;
use crate::error::StoreError;
use crate::store::{BudgetUsage, Usage, UsageKey, UsageStore};

impl UsageStore for MemStore {
    fn record_usage(&mut self, key: &UsageKey<'_>, usage: &Usage) -> Result<(), StoreError> {
        let (username, day, resource_type) = (key.username, key.day, key.resource_type);
        self.usage_days
            .entry((day, resource_type.to_string()))
            .or_default()
            .add(usage);
        self.user_usage_days
            .entry((username.to_string(), day, resource_type.to_string()))
            .or_default()
            .add(usage);
        if !key.budget.is_empty() {
            self.budget_usage_days
                .entry((
                    key.budget.to_string(),
                    username.to_string(),
                    day,
                    resource_type.to_string(),
                ))
                .or_default()
                .add(usage);
        }
        Ok(())
    }

    fn usage_by_day(&mut self, first: i64, last: i64) -> Result<Vec<(i64, String, Usage)>, StoreError> {
        Ok(self
            .usage_days
            .range((first, String::new())..)
            .take_while(|((d, _), _)| *d <= last)
            .map(|((d, r), u)| (*d, r.clone(), *u))
            .collect())
    }

    fn usage_by_user(
        &mut self,
        first: i64,
        last: i64,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<(String, Usage)>, StoreError> {
        let mut by: BTreeMap<&str, Usage> = BTreeMap::new();
        for ((user, day, _), u) in &self.user_usage_days {
            if (first..=last).contains(day) && after.is_none_or(|a| user.as_str() > a) {
                by.entry(user).or_default().add(u);
            }
        }
        Ok(by
            .into_iter()
            .take(limit)
            .map(|(u, s)| (u.to_string(), s))
            .collect())
    }

    fn usage_top_users(
        &mut self,
        first: i64,
        last: i64,
        limit: usize,
    ) -> Result<Vec<(String, Usage)>, StoreError> {
        let mut all = self.usage_by_user(first, last, None, usize::MAX)?;
        all.sort_by(|a, b| {
            (b.1.credits, b.1.minutes)
                .cmp(&(a.1.credits, a.1.minutes))
                .then_with(|| a.0.cmp(&b.0))
        });
        all.truncate(limit);
        Ok(all)
    }

    fn user_usage(
        &mut self,
        username: &str,
        first: i64,
        last: i64,
    ) -> Result<Vec<(i64, String, Usage)>, StoreError> {
        Ok(self
            .user_usage_days
            .range((username.to_string(), first, String::new())..)
            .take_while(|((u, d, _), _)| u == username && *d <= last)
            .map(|((_, d, r), u)| (*d, r.clone(), *u))
            .collect())
    }

    fn budget_usage(
        &mut self,
        first: i64,
        last: i64,
        budget: Option<&str>,
    ) -> Result<Vec<BudgetUsage>, StoreError> {
        Ok(self
            .budget_usage_days
            .iter()
            .filter(|((b, _, day, _), _)| (first..=last).contains(day) && budget.is_none_or(|x| x == b))
            .map(|((b, u, day, r), usage)| BudgetUsage {
                budget: b.clone(),
                username: u.clone(),
                day: *day,
                resource_type: r.clone(),
                usage: *usage,
            })
            .collect())
    }
}
