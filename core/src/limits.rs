//! Every limit of the engine, as a named constant with its unit last.
//!
//! Values that leave the engine must stay exact in JavaScript (a double), so balances are bounded
//! by `2^53 - 1` even though they are held as `i64`.

/// Largest magnitude of any balance or ledger value (exact in a JavaScript number).
pub const balance_abs_max: i64 = 9_007_199_254_740_991;
/// Largest magnitude of an integer carried as JSON between the engine and a host: 2^53 - 1, exact
/// in Rust, Python and JavaScript alike.
pub const json_int_abs_max: i64 = 9_007_199_254_740_991;
/// Largest magnitude of one admin or refresh `amount`.
pub const amount_abs_max: i64 = 10_000_000;
/// Requested runtime bounds, in minutes. The maximum is also the stale threshold.
pub const runtime_minutes_min: i64 = 1;
pub const runtime_minutes_max: i64 = 480;
/// A session active for more than this is stale and cleaned up without charge.
pub const stale_after_seconds: i64 = 8 * 60 * 60;
/// Shortest billed duration.
pub const billed_minutes_min: i64 = 1;
/// Username length in characters.
pub const username_chars_max: usize = 255;
/// Server name length in characters (JupyterHub's named servers).
pub const server_name_chars_max: usize = 255;
/// Group name length in characters (JupyterHub's groups).
pub const group_name_chars_max: usize = 255;
/// Groups one user may be in, as reported (a start's `groups`, a snapshot's entry).
pub const user_groups_max: usize = 1000;
/// Length of an accelerator `env` variable name, in bytes.
pub const env_name_len_max: usize = 255;
/// Admin description length in characters.
pub const description_chars_max: usize = 500;
/// Entries in one batch request.
pub const batch_users_max: usize = 1000;
/// Length of a refresh `usernamePattern`, in characters.
pub const pattern_chars_max: usize = 256;
/// Usernames in one `includeUsers` / `excludeUsers` list.
pub const target_users_max: usize = 10_000;
/// Usernames in one group change (`members`, `add`, `remove`).
pub const group_members_max: usize = 100_000;
/// Groups in one `includeGroups` / `excludeGroups` list.
pub const target_groups_max: usize = 1000;
/// Length of a refresh `rule_name` / `run_id`, in characters.
pub const rule_name_chars_max: usize = 255;
/// Newest transactions returned with a user's detail.
pub const recent_transactions_max: usize = 20;
/// Rates are held in thousandths: at most 3 fractional digits.
pub const rate_fraction_digits_max: u32 = 3;
/// Largest rate (credits per minute) a configuration may set.
pub const rate_max_milli: i64 = 1_000_000 * 1000;
/// Users read per page while scanning (refresh, list).
pub const scan_page_users: usize = 1000;
/// Transactions returned by one ledger page.
pub const ledger_page_max: usize = 1000;
/// Largest page of `GET /admin/api/quota/?limit=` (without `limit` or `after`: every user).
pub const users_page_max: usize = 10_000;
/// Longest range of a usage report, in days.
pub const usage_range_days_max: i64 = 366;
/// Rows in one page of a usage report.
pub const usage_page_max: usize = 1000;
/// Days of a user's own usage chart when the request names none.
pub const my_usage_days_default: i64 = 30;
/// Sessions returned by one session listing.
pub const sessions_list_max: usize = 1000;
/// Largest request body the HTTP front door reads, in bytes; a larger one is answered 413.
pub const body_bytes_max: usize = 1024 * 1024;
/// How many scheduled rule runs a refused start's forecast looks through for the first that would
/// let the start through (`next_refresh` in the 403): a rule every minute is 16 hours of runs.
pub const forecast_runs_max: usize = 1_000;
/// ... and how far ahead, in days: a top-up further out than a year tells a user nothing.
pub const forecast_days_max: i64 = 366;

/// How far ahead a cron expression is searched for its next firing minute, in days (8 years: a
/// `29 2` rule fires at most every 4 years, a day-of-week combination later still).
pub const cron_search_horizon_days: i64 = 366 * 8;
/// Earliest and latest timestamps accepted, in seconds since the epoch: 1970-01-01T00:00:00Z to
/// 9999-12-31T23:59:59Z, so formatting never fails.
pub const timestamp_seconds_min: i64 = 0;
pub const timestamp_seconds_max: i64 = 253_402_300_799;
/// How far ahead a dated grant may expire (`expires_at`, `expires_after`), in days: ten years.
pub const grant_days_max: i64 = 3660;

/// Grants a sweep in chunks (`{"in_chunks": true}`) writes off per call: each call is one
/// transaction, short enough that no writer waits long behind it (measured by
/// `host-shim/benches/postgres.rs`, section 4: under 100 ms a chunk on SQLite and PostgreSQL).
pub const sweep_chunk_grants: usize = 1000;

/// Events are kept at least this many days (credit model 2, "Events"); the sweep purges older ones.
pub const event_retention_days: i64 = 30;
/// Events purged per sweep call: each call is one short transaction.
pub const event_purge_chunk: usize = 5000;
/// Events in one page of `GET .../events` (the default too).
pub const events_page_max: usize = 500;
/// Sessions and grants one sweep call warns about (the rest in the next chunk).
pub const warn_chunk: usize = 1000;
/// Entries in `warnBeforeStopMinutes`, `notifyBeforeExpiryDays`, `notifyBelow`.
pub const notify_marks_max: usize = 20;
/// Webhooks a values file may list.
pub const webhooks_max: usize = 50;
/// Length of a webhook URL, in characters.
pub const webhook_url_chars_max: usize = 2048;
/// Events one delivery step hands a host at most.
pub const delivery_batch_max: usize = 500;
/// How long a host holds a webhook's deliveries after a step, in seconds (another replica takes
/// over after this when the holder died). A host reports before half of it has passed.
pub const delivery_hold_seconds: i64 = 30;
/// A failed delivery is retried until its event is this old, in seconds; then it is `failed`.
pub const delivery_retry_window_seconds: i64 = 24 * 60 * 60;
/// The pause before the first retry, doubled each time up to the cap, in seconds.
pub const delivery_backoff_first_seconds: i64 = 1;
pub const delivery_backoff_max_seconds: i64 = 10 * 60;
/// Length of a delivery error kept for the status route, in characters.
pub const delivery_error_chars_max: usize = 500;
