//! The label sets of the quota series (each value bounded), and the request histogram's buckets.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(super) struct GateLabels {
    pub(super) result: &'static str,
    pub(super) resource_type: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(super) struct ResourceLabels {
    pub(super) resource_type: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(super) struct EndLabels {
    pub(super) status: &'static str,
    pub(super) resource_type: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(super) struct BudgetLabels {
    pub(super) budget: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(super) struct RuleLabels {
    pub(super) rule: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(super) struct HttpLabels {
    pub(super) route: &'static str,
    pub(super) method: &'static str,
    pub(super) status: u16,
}

pub(super) fn request_histogram() -> Histogram {
    // 0.25 ms .. ~4 s.
    Histogram::new(exponential_buckets(0.000_25, 2.0, 15))
}

/// A request method as a label: the known ones, `other` for the rest.
pub(super) fn method_label(method: &str) -> &'static str {
    match method {
        "GET" => "GET",
        "HEAD" => "HEAD",
        "POST" => "POST",
        "PUT" => "PUT",
        "PATCH" => "PATCH",
        "DELETE" => "DELETE",
        "OPTIONS" => "OPTIONS",
        _ => "other",
    }
}
