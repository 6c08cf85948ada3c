//! The route table: which paths the engine answers, with which methods, and who may call them.
//! `core/tests/openapi.rs` holds `api/openapi.json` to this table.

use super::*;

/// Who may call a route.
#[derive(Clone, Copy)]
pub(super) enum Access<'p> {
    /// Anyone, without a token.
    Public,
    Authenticated,
    /// The named user themself, a quota admin, or course staff (the handler checks the user is
    /// one of their groups' members).
    SelfAdminOrManager(&'p str),
    Admin,
    /// A quota admin, or course staff (the handler keeps them to their groups).
    AdminOrManager,
    Sessions,
    Refresh,
}

/// What a path names.
pub(super) enum Route<'p> {
    ListUsers,
    User(&'p str),
    Batch,
    Refresh,
    Cleanup,
    Expire,
    Ledger,
    Me,
    Rates,
    Accelerators,
    Sessions,
    Session(&'p str),
    EndById(&'p str),
    EndByServer,
    OpenApi,
    Groups,
    Group(&'p str),
    Memberships,
    MyTransactions,
    MySessions,
    MyUsage,
    Usage,
    Budgets,
    Budget(&'p str),
    Extend(&'p str),
    MyEvents,
    MyStatus,
    Events,
    Webhooks,
    Redeliver(&'p str),
    Deliveries(&'p str),
    MyRequests,
    MyRights,
    Requests,
    Request(&'p str),
}

/// The route the decoded path segments name.
pub(super) fn route<'p>(segs: &[&'p str]) -> Option<Route<'p>> {
    Some(match segs {
        ["admin", "api", "quota"] | ["admin", "api", "quota", "users"] => Route::ListUsers,
        ["admin", "api", "quota", "batch"] => Route::Batch,
        ["admin", "api", "quota", "refresh"] => Route::Refresh,
        ["admin", "api", "quota", "cleanup"] => Route::Cleanup,
        ["admin", "api", "quota", "expire"] => Route::Expire,
        ["admin", "api", "quota", "transactions"] => Route::Ledger,
        ["admin", "api", "quota", "groups"] => Route::Groups,
        ["admin", "api", "quota", "groups", name] => Route::Group(name),
        ["admin", "api", "quota", "memberships"] => Route::Memberships,
        ["admin", "api", "quota", "usage"] => Route::Usage,
        ["admin", "api", "quota", "budgets"] => Route::Budgets,
        ["admin", "api", "quota", "budgets", name] => Route::Budget(name),
        ["admin", "api", "quota", "events"] => Route::Events,
        ["admin", "api", "quota", "webhooks"] => Route::Webhooks,
        ["admin", "api", "quota", "webhooks", name, "redeliver"] => Route::Redeliver(name),
        ["admin", "api", "quota", "webhooks", name, "deliveries"] => Route::Deliveries(name),
        ["admin", "api", "quota", "requests"] => Route::Requests,
        ["admin", "api", "quota", "requests", id] => Route::Request(id),
        ["admin", "api", "quota", "users", name] | ["admin", "api", "quota", name] => Route::User(name),
        ["api", "quota", "me"] => Route::Me,
        ["api", "quota", "me", "transactions"] => Route::MyTransactions,
        ["api", "quota", "me", "sessions"] => Route::MySessions,
        ["api", "quota", "me", "usage"] => Route::MyUsage,
        ["api", "quota", "me", "events"] => Route::MyEvents,
        ["api", "quota", "me", "status"] => Route::MyStatus,
        ["api", "quota", "me", "requests"] => Route::MyRequests,
        ["api", "quota", "me", "rights"] => Route::MyRights,
        ["api", "quota", "rates"] => Route::Rates,
        ["api", "accelerators"] => Route::Accelerators,
        ["api", "quota", "sessions"] => Route::Sessions,
        ["api", "quota", "sessions", "end"] => Route::EndByServer,
        ["api", "quota", "openapi.json"] => Route::OpenApi,
        ["api", "quota", "sessions", id, "end"] => Route::EndById(id),
        ["api", "quota", "sessions", id, "extend"] => Route::Extend(id),
        ["api", "quota", "sessions", id] => Route::Session(id),
        _ => return None,
    })
}

/// The route `path` (below the base URL) names, as a template whose variable parts read `{name}`
/// and `{id}`: a bounded set of labels for a host's request metrics. `None`: no route.
pub fn route_template(path: &str) -> Option<&'static str> {
    let segs: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    Some(match route(&segs)? {
        Route::ListUsers => "/admin/api/quota/users",
        Route::User(_) => "/admin/api/quota/users/{name}",
        Route::Batch => "/admin/api/quota/batch",
        Route::Refresh => "/admin/api/quota/refresh",
        Route::Cleanup => "/admin/api/quota/cleanup",
        Route::Expire => "/admin/api/quota/expire",
        Route::Ledger => "/admin/api/quota/transactions",
        Route::Me => "/api/quota/me",
        Route::Rates => "/api/quota/rates",
        Route::Accelerators => "/api/accelerators",
        Route::Sessions => "/api/quota/sessions",
        Route::Session(_) => "/api/quota/sessions/{id}",
        Route::EndById(_) => "/api/quota/sessions/{id}/end",
        Route::EndByServer => "/api/quota/sessions/end",
        Route::OpenApi => "/api/quota/openapi.json",
        Route::Groups => "/admin/api/quota/groups",
        Route::Group(_) => "/admin/api/quota/groups/{name}",
        Route::Memberships => "/admin/api/quota/memberships",
        Route::MyTransactions => "/api/quota/me/transactions",
        Route::MySessions => "/api/quota/me/sessions",
        Route::MyUsage => "/api/quota/me/usage",
        Route::Usage => "/admin/api/quota/usage",
        Route::Budgets => "/admin/api/quota/budgets",
        Route::Budget(_) => "/admin/api/quota/budgets/{name}",
        Route::Extend(_) => "/api/quota/sessions/{id}/extend",
        Route::MyEvents => "/api/quota/me/events",
        Route::MyStatus => "/api/quota/me/status",
        Route::Events => "/admin/api/quota/events",
        Route::Webhooks => "/admin/api/quota/webhooks",
        Route::Redeliver(_) => "/admin/api/quota/webhooks/{name}/redeliver",
        Route::Deliveries(_) => "/admin/api/quota/webhooks/{name}/deliveries",
        Route::MyRequests => "/api/quota/me/requests",
        Route::MyRights => "/api/quota/me/rights",
        Route::Requests => "/admin/api/quota/requests",
        Route::Request(_) => "/admin/api/quota/requests/{id}",
    })
}

/// The methods a route answers, and who may call it with `method`.
pub(super) fn access<'p>(route: &Route<'p>, method: &str) -> (&'static [&'static str], Access<'p>) {
    match route {
        Route::ListUsers | Route::Ledger | Route::Usage => (&["GET"], Access::AdminOrManager),
        Route::User(name) => (
            &["GET", "POST"],
            if method == "GET" {
                Access::SelfAdminOrManager(name)
            } else {
                Access::AdminOrManager
            },
        ),
        Route::Batch => (&["POST"], Access::AdminOrManager),
        Route::Cleanup => (&["POST"], Access::Admin),
        Route::Refresh | Route::Expire => (&["POST"], Access::Refresh),
        Route::Me
        | Route::Rates
        | Route::Accelerators
        | Route::MyTransactions
        | Route::MySessions
        | Route::MyUsage
        | Route::MyEvents
        | Route::MyStatus
        | Route::MyRights => (&["GET"], Access::Authenticated),
        // The handler checks the session's owner (a plain user extends only their own).
        Route::Extend(_) => (&["POST"], Access::Authenticated),
        Route::Events | Route::Webhooks => (&["GET"], Access::Admin),
        Route::Redeliver(_) => (&["POST"], Access::Admin),
        // A host's delivery step hands out every event body and moves the cursor: quota admins
        // only (the built-in hosts step with their in-process caller).
        Route::Deliveries(_) => (&["POST"], Access::Admin),
        Route::Sessions => (
            &["GET", "POST"],
            if method == "GET" {
                Access::AdminOrManager
            } else {
                Access::Sessions
            },
        ),
        Route::Session(_) => (&["GET"], Access::AdminOrManager),
        Route::EndById(_) | Route::EndByServer => (&["POST"], Access::Sessions),
        Route::OpenApi => (&["GET"], Access::Public),
        // A user's own requests (asked and read); the handler names the caller.
        Route::MyRequests => (&["GET", "POST"], Access::Authenticated),
        // Quota admins, and course staff for their groups' members and shared budgets (the
        // handler keeps them to those).
        Route::Requests => (&["GET"], Access::AdminOrManager),
        Route::Request(_) => (&["GET", "POST"], Access::AdminOrManager),
        Route::Groups => (&["GET"], Access::Admin),
        Route::Budgets => (&["GET"], Access::AdminOrManager),
        Route::Budget(_) => (
            &["GET", "PUT", "POST", "DELETE"],
            if method == "GET" || method == "POST" {
                Access::AdminOrManager
            } else {
                Access::Admin
            },
        ),
        Route::Group(_) => (&["GET", "PUT", "POST", "DELETE"], Access::Admin),
        Route::Memberships => (&["GET", "PUT"], Access::Admin),
    }
}

/// The methods the route `path` (below the base URL) answers; `None`: no route.
pub fn route_methods(path: &str) -> Option<&'static [&'static str]> {
    let segs: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    route(&segs).map(|r| access(&r, "GET").0)
}

/// Whether `caller` may use a route with this access.
pub(super) fn permitted(access: Access<'_>, caller: &Caller) -> bool {
    match access {
        Access::Public | Access::Authenticated => true,
        Access::SelfAdminOrManager(name) => {
            caller.has(SCOPE_ADMIN)
                || !caller.managed_groups().is_empty()
                || normalize_username("username", name).is_ok_and(|n| n == caller.name.to_lowercase())
        }
        Access::Admin => caller.has(SCOPE_ADMIN),
        Access::AdminOrManager => caller.has(SCOPE_ADMIN) || !caller.managed_groups().is_empty(),
        Access::Sessions => caller.has(SCOPE_SESSIONS),
        Access::Refresh => caller.has(SCOPE_REFRESH) || caller.has(SCOPE_ADMIN),
    }
}
