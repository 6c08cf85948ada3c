//! The bounded `route` label of the HTTP series: which route a request's path names.

/// The route a request's path names, as a bounded label: a route template, the admin page or its
/// assets, `/metrics`, else `unmatched`.
pub fn route_label(base: &str, full_path: &str) -> &'static str {
    let Some(path) = full_path.strip_prefix(base).filter(|p| p.starts_with('/')) else {
        return "unmatched";
    };
    if path == crate::metrics::METRICS_PATH {
        return crate::metrics::METRICS_PATH;
    }
    if path == super::health::HEALTHZ_PATH {
        return super::health::HEALTHZ_PATH;
    }
    if path == super::health::READYZ_PATH {
        return super::health::READYZ_PATH;
    }
    if let Some(page) = super::pages::route_label(path) {
        return page;
    }
    quota_core::api::route_template(path).unwrap_or("unmatched")
}
