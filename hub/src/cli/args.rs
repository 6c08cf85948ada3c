//! The commands' arguments (clap): what `serve`, the token, group and budget commands and the
//! balance commands take, and where an admin command acts (`Target`).

use std::path::PathBuf;

use clap::{Args, Subcommand};

/// The values file and the database when no flag or variable names them.
pub const DEFAULT_VALUES: &str = "examples/values.yaml";
pub const DEFAULT_DB: &str = "sqlite://quota.db";

#[derive(Args)]
pub struct ExportLedgerArgs {
    /// The first UTC day (YYYY-MM-DD); from the first transaction when absent.
    #[arg(long)]
    pub from: Option<String>,
    /// The last UTC day (YYYY-MM-DD), included; to the newest transaction when absent.
    #[arg(long)]
    pub to: Option<String>,
    /// Only this user's transactions.
    #[arg(long)]
    pub user: Option<String>,
    /// `csv` (a header row, then one row per transaction) or `jsonl` (one JSON object per line,
    /// as the REST API answers it).
    #[arg(long, default_value = "csv", value_parser = ["csv", "jsonl"])]
    pub format: String,
    /// Write here instead of standard output (written to a temporary file beside it and renamed
    /// when complete, so a failed export never leaves a partial file under the name).
    #[arg(long, short)]
    pub output: Option<PathBuf>,
    #[command(flatten)]
    pub target: Target,
}

#[derive(Args)]
pub struct ServeArgs {
    /// The values file (the Helm chart's format: `custom.quota`, `custom.accelerators`, `custom.authMode`).
    #[arg(long, env = "QUOTA_HUB_VALUES", default_value = DEFAULT_VALUES)]
    pub values: PathBuf,
    /// Database: `sqlite://FILE` (created if missing; `sqlite:///abs/path` for an absolute one) or
    /// `postgres://user:password@host/db` (several servers on one database).
    #[arg(long, env = "QUOTA_HUB_DB", default_value = DEFAULT_DB)]
    pub db: String,
    /// Address to listen on (`127.0.0.1:0` picks a free port; the URL printed says which).
    #[arg(long, default_value = "127.0.0.1:8765")]
    pub listen: String,
    /// Path prefix of every route.
    #[arg(long, default_value = "/hub")]
    pub base_url: String,
    /// Engine instances answering reads in parallel.
    #[arg(long, default_value_t = 2)]
    pub readers: usize,
    /// Engine instances answering writes in parallel: 1 on SQLite (one writer at a time anyway);
    /// on PostgreSQL 4 unless given (conflicts between them are retried).
    #[arg(long)]
    pub writers: Option<usize>,
    /// How long a write waits for another process holding the database lock before the request
    /// fails with 503 (retry later); milliseconds. Unless given, the engine's hosting contract's
    /// (10,000).
    #[arg(long)]
    pub busy_timeout_ms: Option<u64>,
    /// Do not run the refresh rules here: Kubernetes CronJobs (`render-cronjobs`, the Helm chart)
    /// or another process run them. Use one of the two, not both.
    #[arg(long, env = "QUOTA_HUB_NO_SCHEDULER")]
    pub no_scheduler: bool,
    /// Connections served at once; more wait until one closes. Keep it below the open-file limit
    /// (`ulimit -n`) with room for the database.
    #[arg(long, env = "QUOTA_HUB_CONNECTIONS_MAX", default_value_t = 1000, value_parser = clap::value_parser!(u32).range(1..))]
    pub connections_max: u32,
    /// A request's head must arrive within this many ms of the server waiting for it (a new
    /// connection's accept, or a kept-alive one's previous response: also the idle timeout).
    #[arg(long, env = "QUOTA_HUB_HEADER_READ_TIMEOUT_MS", default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub header_read_timeout_ms: u64,
    /// The longest silence, in ms, in the middle of a request body.
    #[arg(long, env = "QUOTA_HUB_BODY_READ_TIMEOUT_MS", default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub body_read_timeout_ms: u64,
    /// Write requests already queued when the writer is free share one transaction and one commit
    /// (each in its own savepoint), up to this many (default 64); 1 commits each alone. SQLite only
    /// (PostgreSQL shares the flushes of concurrent commits itself). `QUOTA_HUB_GROUP_COMMIT_MAX`,
    /// its name until 0.2.0, is read for one more release, with a WARNING.
    #[arg(long, env = "QUOTA_HUB_SHARED_COMMIT_MAX", value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub shared_commit_max: Option<u32>,
    /// Count nothing and serve no `{base}/metrics` (answered 404).
    #[arg(long, env = "QUOTA_HUB_NO_METRICS")]
    pub no_metrics: bool,
    /// The folder the scheduled backups go to (`quota-hub backup -o DIR/`, the chart's backup
    /// CronJob): `/metrics` exports what they last did (`quota_backup_*`, docs/operations.md).
    #[arg(long, env = "QUOTA_HUB_BACKUP_DIR")]
    pub backup_dir: Option<PathBuf>,
    /// Litestream's control socket (its `socket:` setting), when Litestream replicates the SQLite
    /// file: `/metrics` exports how far its replica is behind (`quota_replication_lag_seconds`).
    #[arg(long, env = "QUOTA_HUB_LITESTREAM_SOCKET")]
    pub litestream_socket: Option<PathBuf>,
    /// Tokens whose secrets the operator sets (a Kubernetes Secret's file or environment
    /// variable), imported at start and stored hashed: a YAML list of {name, scopes, admin,
    /// secretFile | secretEnv}. The imported tokens become exactly this file's.
    #[arg(long, env = "QUOTA_HUB_TOKENS")]
    pub tokens: Option<PathBuf>,
    /// Write access log lines for `{base}/healthz` and `{base}/readyz` too (off: a probe every few
    /// seconds would bury the users' requests).
    #[arg(long, env = "QUOTA_HUB_LOG_PROBES")]
    pub log_probes: bool,
    /// Serve a SQLite file on the container's own file system (not a mounted volume), which is lost
    /// when the container restarts; without it such a start is refused.
    #[arg(long, env = "QUOTA_HUB_ALLOW_EPHEMERAL_DB")]
    pub allow_ephemeral_db: bool,
    /// Testing only: honour an `X-Quota-Test-Now: <RFC 3339>` header as the request's clock.
    #[arg(long, hide = true)]
    pub test_clock: bool,
    /// Testing only: start the server's clock at this instant (RFC 3339); it then runs in real time.
    #[arg(long, hide = true)]
    pub clock_start: Option<String>,
}

#[derive(Subcommand)]
pub enum TokenCommand {
    /// Create a token; prints it once on stdout (only its hash is stored).
    Issue {
        /// The database (`sqlite://FILE` or `postgres://user:password@host/db`).
        #[arg(long, env = "QUOTA_HUB_DB", default_value = DEFAULT_DB)]
        db: String,
        /// The user or service the token acts as.
        #[arg(long)]
        user: String,
        /// An administrator: may do everything.
        #[arg(long)]
        admin: bool,
        /// A service scope; repeat for several. `quota:manage` (course staff) needs `--group`.
        #[arg(long, value_parser = ["quota:sessions", "quota:refresh", "quota:admin", "quota:metrics", "quota:manage"])]
        scope: Vec<String>,
        /// With `--scope quota:manage`: a group whose members and budgets the token manages;
        /// repeat for several.
        #[arg(long)]
        group: Vec<String>,
        /// Refuse the token after this long: `90d`, `12h`, `30m`, `45s` (default: never).
        #[arg(long, value_name = "DURATION")]
        expires_in: Option<String>,
    },
    /// Every token: name, its first characters, scopes, admin, created, expires, last used (written
    /// at most once a minute). Never a secret.
    List {
        /// The database (`sqlite://FILE` or `postgres://user:password@host/db`).
        #[arg(long, env = "QUOTA_HUB_DB", default_value = DEFAULT_DB)]
        db: String,
    },
    /// Revoke tokens: every token of a user or service (`hub`), or one token by its secret or its
    /// first characters as `token list` shows them (`qh_1a2b3c4d`). Refused from the next request.
    Revoke {
        /// The database (`sqlite://FILE` or `postgres://user:password@host/db`).
        #[arg(long, env = "QUOTA_HUB_DB", default_value = DEFAULT_DB)]
        db: String,
        /// A name, or `qh_` and at least 6 characters of a token.
        what: String,
    },
}

/// Where a command acts: the database directly, or a running server.
#[derive(Args, Clone)]
pub struct Target {
    /// Database to act on directly: `sqlite://FILE` or `postgres://user:password@host/db`.
    #[arg(long, env = "QUOTA_HUB_DB", default_value = DEFAULT_DB)]
    pub db: String,
    /// The values file (used with `--db`).
    #[arg(long, env = "QUOTA_HUB_VALUES", default_value = DEFAULT_VALUES)]
    pub values: PathBuf,
    /// Act through a running server instead, e.g. `http://127.0.0.1:8765/hub`.
    #[arg(long)]
    pub url: Option<String>,
    /// Admin token for `--url`.
    #[arg(long, env = "QUOTA_HUB_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
}

#[derive(Subcommand)]
pub enum GroupCommand {
    /// Every group with members or settings, and its member count.
    List(Target),
    /// One group's members and settings.
    Show {
        name: String,
        #[command(flatten)]
        target: Target,
    },
    /// Set a group's members to exactly these users (arguments, or a CSV file with a `username`
    /// column); everyone else leaves it.
    Set(GroupMembersArgs),
    /// Add these users to a group.
    AddMembers(GroupMembersArgs),
    /// Remove these users from a group.
    RemoveMembers(GroupMembersArgs),
}

#[derive(Subcommand)]
pub enum BudgetCommand {
    /// Every budget: balance, reservations, member limit, members, where it is defined.
    List(Target),
    /// One budget: its grants, each member's month, its newest transactions.
    Show {
        name: String,
        #[command(flatten)]
        target: Target,
    },
    /// Define a budget over REST, or replace the whole definition of one made so (a budget the
    /// values file defines is changed there).
    Create(BudgetDefineArgs),
    /// Set a budget's balance (the whole credit replaced; dated with `--expires`).
    Set(BudgetAmountArgs),
    /// Add credits to a budget (a dated grant with `--expires`).
    Add(BudgetAmountArgs),
    /// Deduct credits from a budget (refused when its balance is smaller).
    Deduct(BudgetAmountArgs),
    /// Delete a budget made over REST (its balance must be 0 and no running session charge it).
    Delete {
        name: String,
        #[command(flatten)]
        target: Target,
    },
}

#[derive(Args)]
pub struct BudgetDefineArgs {
    /// The budget's name (as a group name).
    pub name: String,
    #[arg(long, default_value = "")]
    pub description: String,
    /// A member by username (repeat for more).
    #[arg(long = "user")]
    pub users: Vec<String>,
    /// Every member of this group is a member (repeat for more).
    #[arg(long = "group")]
    pub groups: Vec<String>,
    /// A resource type it pays for, `cpu` or an accelerator (repeat for more; none given: all).
    #[arg(long = "accelerator")]
    pub accelerators: Vec<String>,
    /// Credits one member may charge it per UTC calendar month (none: no limit).
    #[arg(long)]
    pub member_limit: Option<i64>,
    #[command(flatten)]
    pub target: Target,
}

#[derive(Args)]
pub struct BudgetAmountArgs {
    pub name: String,
    #[arg(allow_negative_numbers = true)]
    pub amount: i64,
    /// A dated grant lapsing at this time (RFC 3339), with `set` and `add`.
    #[arg(long)]
    pub expires: Option<String>,
    /// What the ledger says of the change.
    #[arg(long)]
    pub description: Option<String>,
    #[command(flatten)]
    pub target: Target,
}

#[derive(Args)]
pub struct GroupMembersArgs {
    /// The group's name (as the hub spells it: case matters).
    pub name: String,
    /// Usernames (trimmed and lowercased).
    pub users: Vec<String>,
    /// A CSV file with a header `username` (a `quota` column is ignored); `-` reads standard input.
    #[arg(short = 'f', long = "file", conflicts_with = "users")]
    pub file: Option<PathBuf>,
    #[command(flatten)]
    pub target: Target,
}

#[derive(Args)]
pub struct SyncGroupsArgs {
    /// The JupyterHub: its public URL with any base URL (`http://hub:8000/jhub`), or its API URL
    /// (ending in `/hub/api`, as `JUPYTERHUB_API_URL`).
    #[arg(long)]
    pub hub_url: String,
    /// A JupyterHub API token with the `read:groups` scope.
    #[arg(long, env = "JUPYTERHUB_API_TOKEN", hide_env_values = true)]
    pub hub_token: String,
    /// Print what would change; write nothing.
    #[arg(long)]
    pub dry_run: bool,
    #[command(flatten)]
    pub target: Target,
}

#[derive(Args)]
pub struct QuotaArgs {
    /// Usernames (trimmed and lowercased).
    pub users: Vec<String>,
    /// A CSV file with a header `username[,quota]`; `-` reads it from standard input.
    #[arg(short = 'f', long = "file", conflicts_with = "users")]
    pub file: Option<PathBuf>,
    /// The amount (for `set-quota` with a file, used for rows without a quota).
    #[arg(long, allow_negative_numbers = true)]
    pub amount: Option<i64>,
    /// The credit given is a dated grant that lapses at this time (RFC 3339, e.g.
    /// `2026-12-18T17:00:00Z`): with `add-quota` a grant of the amount, with `set-quota` the new
    /// balance as one grant (the whole credit replaced).
    #[arg(long)]
    pub expires: Option<String>,
    #[command(flatten)]
    pub target: Target,
}

/// The shared commit's bound when no flag and no `QUOTA_HUB_SHARED_COMMIT_MAX` set it.
pub const SHARED_COMMIT_MAX_DEFAULT: u32 = 64;
/// The environment variable `--shared-commit-max` had before it was named for what it sets.
pub const SHARED_COMMIT_MAX_OLD_ENV: &str = "QUOTA_HUB_GROUP_COMMIT_MAX";

/// `--shared-commit-max` as given (the flag or `QUOTA_HUB_SHARED_COMMIT_MAX`), else the old
/// variable's value (`old`, checked as the flag is), else the default; with the WARNING the old
/// name earns.
pub fn shared_commit_max(given: Option<u32>, old: Option<&str>) -> Result<(u32, Option<String>), String> {
    let Some(old) = old else {
        return Ok((given.unwrap_or(SHARED_COMMIT_MAX_DEFAULT), None));
    };
    let renamed = format!(
        "WARNING: {SHARED_COMMIT_MAX_OLD_ENV} is the old name of QUOTA_HUB_SHARED_COMMIT_MAX \
         (--shared-commit-max) and is read for this release only: rename it"
    );
    if let Some(n) = given {
        return Ok((
            n,
            Some(format!(
                "{renamed}; --shared-commit-max {n} is used, {old:?} ignored"
            )),
        ));
    }
    match old.trim().parse::<u32>() {
        Ok(n) if (1..=1000).contains(&n) => Ok((n, Some(renamed))),
        _ => Err(format!(
            "{SHARED_COMMIT_MAX_OLD_ENV}: {old:?} is not a whole number from 1 to 1000"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_old_name_of_the_shared_commit_bound_is_read_for_one_release_with_a_warning() {
        assert_eq!(shared_commit_max(None, None), Ok((64, None)));
        assert_eq!(shared_commit_max(Some(8), None), Ok((8, None)));
        let (n, warning) = shared_commit_max(None, Some("16")).expect("the old name");
        assert_eq!(n, 16);
        let warning = warning.expect("a warning");
        assert!(
            warning.contains("QUOTA_HUB_GROUP_COMMIT_MAX") && warning.contains("QUOTA_HUB_SHARED_COMMIT_MAX"),
            "{warning}"
        );
        // The new name (or the flag) wins, and the warning says the old one was ignored.
        let (n, warning) = shared_commit_max(Some(2), Some("16")).expect("both");
        assert_eq!(n, 2);
        assert!(warning.expect("a warning").contains("ignored"));
        for bad in ["0", "1001", "many", ""] {
            let err = shared_commit_max(None, Some(bad)).expect_err(bad);
            assert!(
                err.starts_with("QUOTA_HUB_GROUP_COMMIT_MAX:") && err.contains("1 to 1000"),
                "{err}"
            );
        }
    }
}
