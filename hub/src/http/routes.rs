//! The bounded `route` label of the HTTP series: which route a request's path names.

/// The route a request's path names, as a bounded label: a route template, the admin page or its
/// assets, `/metrics`, else `unmatched`.
pub fn route_label(base: &str, full_path: &str) -> &'static str {
    let Some(path) = full_path.strip_prefix(base).filter(|p| p.starts_with('/')) else {
        return "unmatched";
    };
    if path == crate::metrics::metrics_path {
        return crate::metrics::metrics_path;
    }
    if path == super::health::healthz_path {
        return super::health::healthz_path;
    }
    if path == super::health::readyz_path {
        return super::health::readyz_path;
    }
    if let Some(page) = super::pages::route_label(path) {
        return page;
    }
    quota_core::api::route_template(path).unwrap_or("unmatched")
}
