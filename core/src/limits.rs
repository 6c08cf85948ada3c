//! Every limit of the engine, as a named constant with its unit last.
//!
//! Values that leave the engine must stay exact in JavaScript (a double), so balances are bounded
//! by `2^53 - 1` even though they are held as `i64`.

/// Largest magnitude of any balance or ledger value (exact in a JavaScript number).
pub const BALANCE_ABS_MAX: i64 = 9_007_199_254_740_991;
/// Largest magnitude of an integer carried as JSON between the engine and a host: 2^53 - 1, exact
/// in Rust, Python and JavaScript alike.
pub const JSON_INT_ABS_MAX: i64 = 9_007_199_254_740_991;
/// Largest magnitude of one admin or refresh `amount`.
pub const AMOUNT_ABS_MAX: i64 = 10_000_000;
/// Requested runtime bounds, in minutes. The maximum is also the stale threshold.
pub const RUNTIME_MINUTES_MIN: i64 = 1;
pub const RUNTIME_MINUTES_MAX: i64 = 480;
/// The runtime of a spawn that gives none (`custom.quota.defaultRuntimeMinutes`'s default).
pub const DEFAULT_RUNTIME_MINUTES: i64 = 20;
/// The extensions a running server's user is offered, in minutes (`/me/status`, JupyterLab).
pub const EXTEND_CHOICES: [i64; 3] = [30, 60, 120];
/// A session active for more than this is stale and cleaned up without charge.
pub const STALE_AFTER_SECONDS: i64 = 8 * 60 * 60;
/// Shortest billed duration.
pub const BILLED_MINUTES_MIN: i64 = 1;
/// Username length in characters.
pub const USERNAME_CHARS_MAX: usize = 255;
/// Server name length in characters (JupyterHub's named servers).
pub const SERVER_NAME_CHARS_MAX: usize = 255;
/// Group name length in characters (JupyterHub's groups).
pub const GROUP_NAME_CHARS_MAX: usize = 255;
/// Groups one user may be in, as reported (a start's `groups`, a snapshot's entry).
pub const USER_GROUPS_MAX: usize = 1000;
/// Length of an accelerator `env` variable name, in bytes.
pub const ENV_NAME_LEN_MAX: usize = 255;
/// Admin description length in characters.
pub const DESCRIPTION_CHARS_MAX: usize = 500;
/// Entries in one batch request.
pub const BATCH_USERS_MAX: usize = 1000;
/// Length of a refresh `usernamePattern`, in characters.
pub const PATTERN_CHARS_MAX: usize = 256;
/// Usernames in one `includeUsers` / `excludeUsers` list.
pub const TARGET_USERS_MAX: usize = 10_000;
/// Usernames in one group change (`members`, `add`, `remove`).
pub const GROUP_MEMBERS_MAX: usize = 100_000;
/// Groups in one `includeGroups` / `excludeGroups` list.
pub const TARGET_GROUPS_MAX: usize = 1000;
/// Length of a refresh `rule_name` / `run_id`, in characters.
pub const RULE_NAME_CHARS_MAX: usize = 255;
/// Newest transactions returned with a user's detail.
pub const RECENT_TRANSACTIONS_MAX: usize = 20;
/// Rates are held in thousandths: at most 3 fractional digits.
pub const RATE_FRACTION_DIGITS_MAX: u32 = 3;
/// Largest rate (credits per minute) a configuration may set.
pub const RATE_MAX_MILLI: i64 = 1_000_000 * 1000;
/// Users read per page while scanning (refresh, list).
pub const SCAN_PAGE_USERS: usize = 1000;
/// Transactions returned by one ledger page.
pub const LEDGER_PAGE_MAX: usize = 1000;
/// Largest page of `GET /admin/api/quota/?limit=` (without `limit` or `after`: every user).
pub const USERS_PAGE_MAX: usize = 10_000;
/// Budgets a hub may define (the values file's and those made over REST together).
pub const BUDGETS_MAX: usize = 1000;
/// Budget rows read per page while listing them.
pub const SCAN_PAGE_BUDGETS: usize = 1000;
/// Budgets with due grants a sweep reads per page.
pub const SWEEP_PAGE_BUDGETS: usize = 100;
/// Longest range of a usage report, in days.
pub const USAGE_RANGE_DAYS_MAX: i64 = 366;
/// Rows in one page of a usage report.
pub const USAGE_PAGE_MAX: usize = 1000;
/// Days of a user's own usage chart when the request names none.
pub const MY_USAGE_DAYS_DEFAULT: i64 = 30;
/// Sessions returned by one session listing.
pub const SESSIONS_LIST_MAX: usize = 1000;
/// Largest request body the HTTP front door reads, in bytes; a larger one is answered 413.
pub const BODY_BYTES_MAX: usize = 1024 * 1024;
/// How many scheduled rule runs a refused start's forecast looks through for the first that would
/// let the start through (`next_refresh` in the 403): a rule every minute is 16 hours of runs.
pub const FORECAST_RUNS_MAX: usize = 1_000;
/// ... and how far ahead, in days: a top-up further out than a year tells a user nothing.
pub const FORECAST_DAYS_MAX: i64 = 366;

/// How far ahead a cron expression is searched for its next firing minute, in days (8 years: a
/// `29 2` rule fires at most every 4 years, a day-of-week combination later still).
pub const CRON_SEARCH_HORIZON_DAYS: i64 = 366 * 8;
/// Earliest and latest timestamps accepted, in seconds since the epoch: 1970-01-01T00:00:00Z to
/// 9999-12-31T23:59:59Z, so formatting never fails.
pub const TIMESTAMP_SECONDS_MIN: i64 = 0;
pub const TIMESTAMP_SECONDS_MAX: i64 = 253_402_300_799;
/// How far ahead a dated grant may expire (`expires_at`, `expires_after`), in days: ten years.
pub const GRANT_DAYS_MAX: i64 = 3660;

/// Grants a sweep in chunks (`{"in_chunks": true}`) writes off per call: each call is one
/// transaction, short enough that no writer waits long behind it (measured by
/// `host-shim/benches/postgres.rs`, section 4: under 100 ms a chunk on SQLite and PostgreSQL).
pub const SWEEP_CHUNK_GRANTS: usize = 1000;

/// How the component must be hosted (its `hosting` contract states these to every host):
/// how long a statement waits for another writer's lock before it fails as `busy`.
pub const BUSY_WAIT_MS: u32 = 10_000;
/// A refresh of 100,000 users in one call runs well under a second; a call still running after
/// this is a runaway guest.
pub const CALL_DEADLINE_MS: u32 = 30_000;
/// `migrate`: schema 5's usage sums are built from the whole ledger (measured: 20 s for ten
/// million rows on SQLite, longer on PostgreSQL), so an upgrade gets an hour, not 30 s.
pub const MIGRATION_DEADLINE_MS: u32 = 3_600_000;
/// Users per transaction of a refresh with a run id: about 30 ms of PostgreSQL's time and 6 ms of
/// SQLite's per chunk (docs/postgres.md).
pub const REFRESH_CHUNK_USERS: u32 = 2_000;
/// The largest linear memory of one instance: a refresh of 100,000 users holds every change in
/// memory for a moment (about 20 MiB).
pub const MEMORY_LIMIT_BYTES: u64 = 256 << 20;
/// How often a host runs the sweep (due grants, warnings, the purge), in seconds: a warning or an
/// expiry is written at most this late.
pub const SWEEP_INTERVAL_SECONDS: u32 = 10;
/// How long a host waits for a webhook's receiver to answer one delivery, in seconds.
pub const WEBHOOK_TIMEOUT_SECONDS: u32 = 10;

/// Grants written off per page of a sweep: one read of the grants, one of their users, one bulk
/// write of the `expire` rows and one of the grants.
pub const SWEEP_PAGE_GRANTS: usize = 1000;
/// Newest events `GET .../me/status` shows.
pub const STATUS_EVENTS_MAX: usize = 20;

/// Observations one engine call returns at most (a call records a handful: cleanup aggregates by
/// resource type).
pub const OBSERVATIONS_PER_CALL_MAX: usize = 1000;
/// Events one call may note at most (a refresh of many users notes one balance move per user;
/// beyond this the rest are dropped rather than hold unbounded memory).
pub const NOTES_PER_CALL_MAX: usize = 1_000_000;

/// Events are kept at least this many days (credit model 2, "Events"); the sweep purges older ones.
pub const EVENT_RETENTION_DAYS: i64 = 30;
/// Events purged per sweep call: each call is one short transaction.
pub const EVENT_PURGE_CHUNK: usize = 5000;
/// Events in one page of `GET .../events` (the default too).
pub const EVENTS_PAGE_MAX: usize = 500;
/// Sessions and grants one sweep call warns about (the rest in the next chunk).
pub const WARN_CHUNK: usize = 1000;
/// Entries in `warnBeforeStopMinutes`, `notifyBeforeExpiryDays`, `notifyBelow`.
pub const NOTIFY_MARKS_MAX: usize = 20;
/// Webhooks a values file may list.
pub const WEBHOOKS_MAX: usize = 50;
/// Length of a webhook URL, in characters.
pub const WEBHOOK_URL_CHARS_MAX: usize = 2048;
/// Credit requests: the largest amount a user may ask for by default
/// (`custom.quota.requestMaxAmount`), the reason's and a decision note's length in characters.
pub const REQUEST_MAX_AMOUNT_DEFAULT: i64 = 1_000;
pub const REQUEST_REASON_CHARS_MAX: usize = 500;
pub const REQUEST_NOTE_CHARS_MAX: usize = 500;
/// Requests one page of the request lists holds at most.
pub const REQUESTS_PAGE_MAX: usize = 500;
/// Live balance streams one user may hold open in a hub (`custom.quota.liveStreamsPerUser`): the
/// default, and the most a values file may allow.
pub const LIVE_STREAMS_PER_USER_DEFAULT: i64 = 10;
pub const LIVE_STREAMS_PER_USER_MAX: i64 = 1_000;
/// Events one delivery step hands a host at most.
pub const DELIVERY_BATCH_MAX: usize = 500;
/// How long a host holds a webhook's deliveries after a step, in seconds (another replica takes
/// over after this when the holder died). A host reports before half of it has passed.
pub const DELIVERY_HOLD_SECONDS: i64 = 30;
/// A failed delivery is retried until its event is this old, in seconds; then it is `failed`.
pub const DELIVERY_RETRY_WINDOW_SECONDS: i64 = 24 * 60 * 60;
/// The pause before the first retry, doubled each time up to the cap, in seconds.
pub const DELIVERY_BACKOFF_FIRST_SECONDS: i64 = 1;
pub const DELIVERY_BACKOFF_MAX_SECONDS: i64 = 10 * 60;
/// Length of a delivery error kept for the status route, in characters.
pub const DELIVERY_ERROR_CHARS_MAX: usize = 500;
