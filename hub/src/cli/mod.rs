//! The command line (clap). Every command has `--help`; their arguments are `args.rs`.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

mod args;

pub use args::*;

#[derive(Parser)]
#[command(
    name = "quota-hub",
    version,
    about = "Per-user compute-credit quotas for notebook hubs: the server and its admin tool"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    /// Log lines on standard error as `text` or `json` (one object per line). Levels and targets
    /// as RUST_LOG says (default `info`; `RUST_LOG=access=off` silences the access log).
    #[arg(long, global = true, env = "QUOTA_HUB_LOG_FORMAT", default_value = "text", value_parser = ["text", "json"])]
    pub log_format: String,
}

#[derive(Subcommand)]
pub enum Command {
    /// Serve the REST API and run scheduled refresh rules.
    Serve(ServeArgs),
    /// Manage API tokens.
    Token {
        #[command(subcommand)]
        command: TokenCommand,
    },
    /// Set balances to an exact amount (users as arguments, or a CSV file `username[,quota]`).
    SetQuota(QuotaArgs),
    /// Add an amount to balances (users as arguments, or a CSV file; its quota column is ignored).
    AddQuota(QuotaArgs),
    /// Print every user's balance.
    ListQuota(Target),
    /// Groups: list, show, set members, add or remove members.
    Group {
        #[command(subcommand)]
        command: GroupCommand,
    },
    /// Copy every group of a JupyterHub (its REST API; a token with `read:groups`) as the users'
    /// groups: a user in no hub group is in none afterwards.
    SyncGroups(SyncGroupsArgs),
    /// Shared budgets: list, show, create (or redefine), set, add, deduct, delete.
    Budget {
        #[command(subcommand)]
        command: BudgetCommand,
    },
    /// Run one configured refresh rule now.
    Refresh {
        /// The rule's name (a key of `custom.quota.refreshRules`).
        rule: String,
        /// Compute and print the changes without writing anything.
        #[arg(long)]
        dry_run: bool,
        /// With `--url`: the rule itself as JSON (its values-file form), instead of reading it from
        /// `--values` (what a CronJob from `render-cronjobs` passes).
        #[arg(long)]
        rule_json: Option<String>,
        /// Apply at most once under this run id.
        #[arg(long, conflicts_with = "scheduled_within")]
        run_id: Option<String>,
        /// The run id is `<rule>@<fire time>` of the rule's latest scheduled minute, which must be
        /// at most this many seconds ago (a CronJob's start deadline): a retried or duplicated Job
        /// applies once.
        #[arg(long)]
        scheduled_within: Option<i64>,
        #[command(flatten)]
        target: Target,
    },
    /// Copy a SQLite database (users, ledger, sessions, refresh runs, tokens) into PostgreSQL in one
    /// transaction, then check counts and every balance against its ledger.
    MigrateDb {
        /// The SQLite file: `sqlite://FILE`.
        #[arg(long)]
        from: String,
        /// The PostgreSQL database: `postgres://user@host/db`.
        #[arg(long)]
        to: String,
        #[arg(long, env = "QUOTA_HUB_VALUES", default_value = DEFAULT_VALUES)]
        values: PathBuf,
        /// Empty a target that already holds rows first (otherwise it is refused).
        #[arg(long)]
        replace: bool,
    },
    /// Copy a SQLite database, consistent and checked, while the server serves (writers do not
    /// wait for it): integrity, schema version and every balance against its ledger, then the
    /// file appears whole. PostgreSQL: pg_dump.
    Backup {
        /// The database: `sqlite://FILE`.
        #[arg(long, env = "QUOTA_HUB_DB", default_value = DEFAULT_DB)]
        db: String,
        /// The backup file to write; or a folder (`DIR/`), where it is `quota-<UTC time>Z.db`.
        #[arg(short, long)]
        output: PathBuf,
        /// Replace the backup file if it exists.
        #[arg(long)]
        force: bool,
        /// With a folder as `-o`: keep this many backups there, removing the oldest.
        #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
        keep: Option<u32>,
        #[arg(long, env = "QUOTA_HUB_VALUES", default_value = DEFAULT_VALUES)]
        values: PathBuf,
    },
    /// List the backups in folders (the scheduled ones, the pre-migration ones): each file's UTC
    /// time, size and schema version, and what the folder's scheduled backups last did
    Backups {
        /// The folders (e.g. /backups /data/pre-migration).
        #[arg(required = true)]
        dirs: Vec<PathBuf>,
    },
    /// Bring the database to this binary's schema, the one step that does (a server creates an
    /// empty database but never migrates one): a SQLite file is backed up first into
    /// `--backup-dir` (PostgreSQL: pg_dump before, as the chart's pre-upgrade Job does). Progress
    /// on stderr; docs/upgrade.md.
    Migrate {
        /// The database (`sqlite://FILE` or `postgres://user:password@host/db`).
        #[arg(long, env = "QUOTA_HUB_DB", default_value = DEFAULT_DB)]
        db: String,
        /// SQLite: the folder the backup taken before the migration goes to
        /// (`quota-<UTC time>Z.db`), a folder of pre-migration backups only: they are never
        /// pruned (the rollback needs the one of its upgrade), kept until you remove them.
        #[arg(long, env = "QUOTA_HUB_BACKUP_DIR")]
        backup_dir: Option<PathBuf>,
        /// Migrate a SQLite file without a backup first (a copy of your own exists).
        #[arg(long)]
        no_backup: bool,
        #[arg(long, env = "QUOTA_HUB_VALUES", default_value = DEFAULT_VALUES)]
        values: PathBuf,
    },
    /// Replace a SQLite database with a backup, after checking the backup (it opens, has this
    /// binary's schema, every balance equals its ledger). Stop the server first; the database it
    /// replaces is kept beside it (`FILE.before-restore-<time>`).
    Restore {
        /// The database to replace: `sqlite://FILE`.
        #[arg(long, env = "QUOTA_HUB_DB", default_value = DEFAULT_DB)]
        db: String,
        /// The backup file (from `backup`).
        #[arg(short, long)]
        input: PathBuf,
        #[arg(long, env = "QUOTA_HUB_VALUES", default_value = DEFAULT_VALUES)]
        values: PathBuf,
    },
    /// Print one Kubernetes CronJob (batch/v1) per enabled refresh rule, as YAML.
    RenderCronjobs {
        #[arg(long, env = "QUOTA_HUB_VALUES", default_value = DEFAULT_VALUES)]
        values: PathBuf,
        #[arg(long, default_value = "default")]
        namespace: String,
        /// CronJob names are `<PREFIX>-refresh-<rule>` (the Helm chart uses its release's full name).
        #[arg(long, default_value = "quota")]
        name_prefix: String,
        /// The hub's base URL the Jobs send the refresh to.
        #[arg(long, default_value = "http://quota-hub:8765/hub")]
        hub_url: String,
        /// The Secret holding a token with only the `quota:refresh` scope.
        #[arg(long, default_value = "quota-refresh-token")]
        token_secret: String,
        /// The key of that token in the Secret.
        #[arg(long, default_value = "token")]
        token_key: String,
        /// The image with the quota-hub binary (default: the release's, as the Helm chart's).
        #[arg(long, default_value = concat!(env!("QUOTA_IMAGE_REPOSITORY"), ":", env!("CARGO_PKG_VERSION")))]
        image: String,
        /// A Secret of the namespace that lets the Job pods pull the image (a private registry or
        /// mirror); repeat for several.
        #[arg(long = "image-pull-secret", value_name = "NAME")]
        image_pull_secrets: Vec<String>,
        /// The label that lets a Job pod through the hub's NetworkPolicy (z2jh's admits only pods
        /// labelled `hub.jupyter.org/network-access-hub: "true"`).
        #[arg(
            long,
            value_name = "KEY=VALUE",
            default_value = "hub.jupyter.org/network-access-hub=true"
        )]
        hub_access_label: String,
        /// Give the Job pods no hub access label (a hub without a NetworkPolicy).
        #[arg(long, conflicts_with = "hub_access_label")]
        no_hub_access_label: bool,
        /// More labels of the Job pods (repeat the option for each).
        #[arg(long = "pod-label", value_name = "KEY=VALUE")]
        pod_labels: Vec<String>,
        /// Annotations of the Job pods, e.g. `sidecar.istio.io/inject=false` so that a mesh sidecar
        /// does not keep a finished Job running (repeat the option for each).
        #[arg(long = "pod-annotation", value_name = "KEY=VALUE")]
        pod_annotations: Vec<String>,
        /// A resource request of the refresh container, over the defaults `cpu=10m` and
        /// `memory=32Mi` (the chart's `cronjobs.resources`; a namespace ResourceQuota refuses a pod
        /// without them); repeat for each resource.
        #[arg(long = "request", value_name = "RESOURCE=QUANTITY")]
        requests: Vec<String>,
        /// A resource limit of the refresh container, over the default `memory=128Mi`; repeat for
        /// each resource.
        #[arg(long = "limit", value_name = "RESOURCE=QUANTITY")]
        limits: Vec<String>,
        /// Write the CronJobs as a chart of their own into this folder (Chart.yaml and
        /// templates/cronjobs.yaml) instead of printing them: `helm upgrade --install` makes them a
        /// release, which removes a CronJob whose rule is gone.
        #[arg(long, value_name = "DIR")]
        chart_dir: Option<PathBuf>,
    },
    /// Write every ledger transaction of a range of UTC days as CSV or JSON lines, oldest first,
    /// a page at a time (constant memory, however long the ledger).
    ExportLedger(ExportLedgerArgs),
    /// Close sessions active for more than 8 hours (the server also does this when it starts).
    Cleanup(Target),
    /// Print the JSON Schema of the values the engine reads (draft-07); or write its `custom` part
    /// into a Helm chart's values.schema.json.
    ConfigSchema {
        /// The chart schema whose `properties.custom` to replace with the engine's.
        #[arg(long, value_name = "FILE")]
        into_chart: Option<PathBuf>,
    },
    /// Ask a running server whether it is ready (`{URL}/readyz`): exit 0 when it answers 200,
    /// 1 otherwise, with its answer. For a container health check or a `helm test`; no token.
    Healthcheck {
        /// The server's base URL.
        #[arg(long, default_value = "http://127.0.0.1:8765/hub")]
        url: String,
    },
    /// Validate a values file and print every problem with its key path.
    CheckConfig {
        #[arg(long, env = "QUOTA_HUB_VALUES", default_value = DEFAULT_VALUES)]
        values: PathBuf,
    },
}
