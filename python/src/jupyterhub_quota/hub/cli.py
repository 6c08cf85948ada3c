"""`jupyterhub-quota`: the operator's command line inside the hub's own container (z2jh:
`kubectl exec deploy/hub -- jupyterhub-quota list`), running the same engine on the hub's quota
database: list, show, set, add, deduct, budget, export-ledger, backup, restore, check.

The database is `--db` (default: `$QUOTA_DB_URL`, else `configure()`'s default
`sqlite://jupyterhub_quota.sqlite`); the values are `--values FILE` (default: `$QUOTA_VALUES`, else
the chart values z2jh mounts into the hub pod, whose `custom` block `configure(values=...)` reads).
Every change is an admin request through the engine, recorded in the ledger as made by
`jupyterhub-quota`, exactly as the admin page's would be."""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Callable, Optional
from urllib.parse import quote

from ..host import values as values_mod
from ..host.engine import Caller, ConfigError, QuotaEngine, StorageError
from .backups import MISMATCHES, BackupFailed
from . import backups

ADMIN = Caller("jupyterhub-quota", admin=True)
#: Where z2jh mounts the chart's values in the hub pod (its `z2jh.py` reads them the same way).
Z2JH_VALUES = ("/usr/local/etc/jupyterhub/secret/values.yaml", "/usr/local/etc/jupyterhub/existing-secret/values.yaml")
#: The CSV columns of `export-ledger`, as quota-hub's (the REST API's transaction fields).
LEDGER_COLUMNS = ("id", "created_at", "username", "transaction_type", "amount", "resource_type", "description",
                  "balance_before", "balance_after", "created_by", "budget", "expires_at")
class Failed(Exception):
    """A refusal to print as `jupyterhub-quota: <message>` with exit status 1."""


def _merge(a: dict, b: dict) -> dict:
    out = dict(a)
    for k, v in b.items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def load_values(path: Optional[str], z2jh: tuple[str, ...] = Z2JH_VALUES) -> dict:
    """The values document: the file given, else z2jh's mounted chart values (merged as z2jh
    merges them)."""
    if path:
        return values_mod.load(path)
    found = [p for p in z2jh if os.path.exists(p)]
    if not found:
        raise Failed("--values: give the values file (or set QUOTA_VALUES); no z2jh chart values are mounted here")
    import yaml

    doc: dict = {}
    for p in found:
        with open(p) as f:
            doc = _merge(doc, yaml.safe_load(f) or {})
    return values_mod.document(doc)


def open_engine(args: argparse.Namespace) -> QuotaEngine:
    try:
        return QuotaEngine(values_mod.sqlite_path(args.db), load_values(args.values))
    except ConfigError as e:
        raise Failed(f"the values are refused: {e}") from None
    except (StorageError, values_mod.ValuesError) as e:
        raise Failed(f"--db {_shown(args.db)}: {e}") from None


def _shown(url: str) -> str:
    """A URL without its password."""
    scheme, sep, rest = url.partition("://")
    if sep and "@" in rest:
        creds, _, host = rest.rpartition("@")
        return f"{scheme}://{creds.split(':')[0]}@{host}"
    return url


def call(engine: QuotaEngine, method: str, path: str, body: Any = None, query: str = "") -> Any:
    text = "" if body is None else json.dumps(body)
    r = engine.handle_request(method, path, query, text, ADMIN, int(time.time()))
    answer = json.loads(r.body) if r.body else {}
    if r.status >= 400:
        raise Failed(answer.get("error", r.body) if isinstance(answer, dict) else r.body)
    return answer


def _table(head: list[str], rows: list[list[str]], right: set[int] = frozenset()) -> None:
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(head)]
    for r in [head, *rows]:
        print("  ".join(c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))).rstrip())


def _balance(u: dict) -> str:
    return "unlimited" if u.get("unlimited") else str(u.get("balance"))


def cmd_list(engine: QuotaEngine, args: argparse.Namespace) -> None:
    # Every user in one answer (the table's widths need every row before the first is printed).
    users = call(engine, "GET", "/admin/api/quota/")["users"]
    rows = [[u["username"], _balance(u), ",".join(u.get("groups") or []), u.get("updated_at", "")] for u in users]
    print(f"Users ({len(rows)})")
    _table(["Username", "Balance", "Groups", "Last Updated"], rows, right={1})


def cmd_show(engine: QuotaEngine, args: argparse.Namespace) -> None:
    u = call(engine, "GET", f"/admin/api/quota/users/{quote(args.user, safe='')}")
    print(f"{u['username']}: balance {_balance(u)}" + (f", groups {', '.join(u['groups'])}" if u.get("groups") else ""))
    txs = u.get("recent_transactions") or []
    if txs:
        _table(["When", "Type", "Amount", "Balance", "By", "Description"],
               [[t["created_at"], t["transaction_type"], str(t["amount"]), str(t["balance_after"]), t.get("created_by") or "",
                 t.get("description") or ""] for t in txs], right={2, 3})


def _change(action: str) -> Callable[[QuotaEngine, argparse.Namespace], None]:
    def run(engine: QuotaEngine, args: argparse.Namespace) -> None:
        for user in args.users:
            if action == "set" and str(args.amount).lower() in ("-1", "unlimited", "∞"):
                body: dict = {"action": "set_unlimited", "unlimited": True}
            else:
                try:
                    body = {"action": action, "amount": int(args.amount)}
                except ValueError:
                    raise Failed(f"--amount: `{args.amount}` is not a whole number") from None
                if getattr(args, "expires", None):
                    body["expires_at"] = args.expires
            try:
                r = call(engine, "POST", f"/admin/api/quota/users/{quote(user, safe='')}", body)
            except Failed as e:
                raise Failed(f"{user}: {e} (the users before it are done)" if user != args.users[0] else f"{user}: {e}") from None
            print(f"{r.get('username', user)}: {_balance(r)}")
    return run


def cmd_export(engine: QuotaEngine, args: argparse.Namespace) -> None:
    query = "".join(f"&{k}={quote(v)}" for k, v in (("from", args.start), ("to", args.end), ("username", args.user)) if v)
    # No `limit`: the engine's largest page; `next_after_id` is null on the last one.
    first = call(engine, "GET", "/admin/api/quota/transactions", query=f"after_id=0{query}")
    out_path = Path(args.output) if args.output else None
    partial = out_path.with_name(out_path.name + ".partial") if out_path else None
    f = open(partial, "w", newline="") if partial else sys.stdout
    count = 0
    try:
        writer = csv.writer(f) if args.format == "csv" else None
        if writer:
            writer.writerow(LEDGER_COLUMNS)
        page = first
        while True:
            txs = page["transactions"]
            for t in txs:
                if writer:
                    writer.writerow(["" if t.get(c) is None else t[c] for c in LEDGER_COLUMNS])
                else:
                    f.write(json.dumps(t, ensure_ascii=False) + "\n")
            count += len(txs)
            if page.get("next_after_id") is None:
                break
            page = call(engine, "GET", "/admin/api/quota/transactions", query=f"after_id={page['next_after_id']}{query}")
        if partial:
            f.flush()
            os.fsync(f.fileno())
    except BaseException:
        if partial:
            f.close()
            partial.unlink(missing_ok=True)
        raise
    if partial:
        f.close()
        os.replace(partial, out_path)
    print(f"{count} transactions exported", file=sys.stderr)


def _schema_version(engine: QuotaEngine) -> int:
    return engine.migrate()[1]


def _sqlite_file(args: argparse.Namespace, what: str) -> Path:
    path = values_mod.sqlite_path(args.db)
    if "://" in path or path == ":memory:":
        raise Failed(f"--db {_shown(args.db)}: {what} is for SQLite files; PostgreSQL has pg_dump and pg_restore (docs/postgres.md)")
    return Path(path)


def cmd_backup(args: argparse.Namespace) -> None:
    src = _sqlite_file(args, "backup")
    if not src.is_file():
        raise Failed(f"--db {args.db}: no such file")
    folder = args.output.endswith("/") or Path(args.output).is_dir()
    if args.keep is not None and not folder:
        raise Failed(f"--keep: only with a folder as -o (e.g. -o {args.output}/)")
    say = lambda m: print(m, file=sys.stderr if m.startswith("backing up") else sys.stdout)  # noqa: E731
    backups.backup(src, Path(args.output), load_values(args.values), folder=folder, keep=args.keep, force=args.force, say=say)


def cmd_restore(args: argparse.Namespace) -> None:
    target = _sqlite_file(args, "restore")
    say = lambda m: print(m, file=sys.stdout if m.startswith("restored") else sys.stderr)  # noqa: E731
    try:
        backups.restore(target, Path(args.backup), load_values(args.values), say=say)
    except BackupFailed as e:
        raise Failed(f"{e}; {target} was not changed") from None


def cmd_check(engine: QuotaEngine, args: argparse.Namespace) -> None:
    version = _schema_version(engine)
    wrong = [r[0] for r in engine.bridge.run(MISMATCHES)]
    users = engine.bridge.run("SELECT COUNT(*) FROM users")[0][0]
    ledger = engine.bridge.run("SELECT COUNT(*) FROM transactions")[0][0]
    active = len(call(engine, "GET", "/api/quota/sessions", query="status=active")["sessions"])
    if wrong:
        raise Failed(f"{len(wrong)} balance(s) differ from the sum of their ledger: {', '.join(wrong[:5])}")
    summary = engine.summary
    print(f"OK: values accepted (quota {'enabled' if summary and summary.enabled else 'disabled'}, "
          f"{sum(1 for r in (summary.rules if summary else ()) if r.enabled)} refresh rule(s) enabled); "
          f"database {_shown(args.db)} at schema {version}: {users} users, {ledger} ledger rows, {active} active "
          f"session(s); every balance equals its ledger")


def cmd_budget(engine: QuotaEngine, args: argparse.Namespace) -> None:
    """`budget list|show|create|set|add|deduct|delete`: shared budgets, as quota-hub's command."""
    path = f"/admin/api/quota/budgets/{quote(args.name, safe='')}" if getattr(args, "name", None) else ""
    if args.budget_command == "list":
        budgets = call(engine, "GET", "/admin/api/quota/budgets")["budgets"]
        print(f"Budgets ({len(budgets)})")
        _table(["Budget", "Balance", "Reserved", "Members", "Member limit", "Source"],
               [[b["name"], str(b["balance"]), str(b["reserved"]), str(b["members"]),
                 "" if b["member_limit"] is None else str(b["member_limit"]), b["source"]] for b in budgets],
               right={1, 2, 3, 4})
    elif args.budget_command == "show":
        print(json.dumps(call(engine, "GET", path), indent=2))
    elif args.budget_command == "create":
        r = call(engine, "PUT", path, {"description": args.description, "users": args.user or [], "groups": args.group or [],
                                       "accelerators": args.accelerator or None, "member_limit": args.member_limit})
        print(f"budget {args.name}: {'created' if r['created'] else 'redefined'}")
    elif args.budget_command == "delete":
        call(engine, "DELETE", path)
        print(f"budget {args.name}: deleted")
    else:
        body: dict = {"action": args.budget_command, "amount": args.amount}
        if getattr(args, "expires", None):
            body["expires_at"] = args.expires
        print(f"budget {args.name}: balance {call(engine, 'POST', path, body)['balance']}")


def _budget_parser(sub: Any) -> None:
    b = sub.add_parser("budget", help="shared budgets: list, show, create, set, add, deduct, delete")
    bs = b.add_subparsers(dest="budget_command", required=True, metavar="ACTION")
    bs.add_parser("list", help="every budget: balance, reservations, members, limit")
    for action, about in (("show", "one budget: grants, members' month, newest transactions"),
                          ("delete", "a budget made over REST, with balance 0 and no running session")):
        bs.add_parser(action, help=about).add_argument("name")
    c = bs.add_parser("create", help="define a budget (or replace a REST budget's whole definition)")
    c.add_argument("name")
    c.add_argument("--description", default="")
    c.add_argument("--user", action="append", help="a member (repeat for more)")
    c.add_argument("--group", action="append", help="every member of this group (repeat for more)")
    c.add_argument("--accelerator", action="append", help="a resource type it pays for (repeat; none: all)")
    c.add_argument("--member-limit", type=int, help="credits one member may charge it per UTC month")
    for action, about in (("set", "set its balance"), ("add", "add credits"), ("deduct", "deduct credits")):
        a = bs.add_parser(action, help=about)
        a.add_argument("name")
        a.add_argument("amount", type=int)
        if action != "deduct":
            a.add_argument("--expires", help="a dated grant lapsing at this time (RFC 3339)")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="jupyterhub-quota", description=__doc__.split("\n\n")[0])
    p.add_argument("--db", default=os.environ.get("QUOTA_DB_URL", "sqlite://jupyterhub_quota.sqlite"),
                   help="the quota database, as configure()'s db_url (default: $QUOTA_DB_URL, else sqlite://jupyterhub_quota.sqlite)")
    p.add_argument("--values", default=os.environ.get("QUOTA_VALUES"),
                   help="the values file (default: $QUOTA_VALUES, else the chart values z2jh mounts in the hub pod)")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    sub.add_parser("list", help="every user: balance, groups, last update")
    s = sub.add_parser("show", help="one user's balance and latest transactions")
    s.add_argument("user")
    for action, about in (("set", "set balances (-1 or unlimited: unlimited)"), ("add", "add credits"), ("deduct", "deduct credits")):
        s = sub.add_parser(action, help=about)
        s.add_argument("users", nargs="+", metavar="USER")
        s.add_argument("--amount", required=True)
        if action != "deduct":
            s.add_argument("--expires", help="a dated grant lapsing at this time (RFC 3339)")
    s = sub.add_parser("export-ledger", help="the ledger of a range of UTC days as CSV or JSON lines")
    s.add_argument("--from", dest="start", help="the first UTC day (YYYY-MM-DD)")
    s.add_argument("--to", dest="end", help="the last UTC day, included")
    s.add_argument("--user")
    s.add_argument("--format", choices=("csv", "jsonl"), default="csv")
    s.add_argument("-o", "--output", help="a file (written beside it and renamed when complete); default: standard output")
    s = sub.add_parser("backup", help="a consistent, checked copy of the SQLite quota database while the hub runs")
    s.add_argument("-o", "--output", required=True, help="the backup file, or a folder (DIR/) for quota-<UTC time>Z.db")
    s.add_argument("--keep", type=int, help="with a folder: keep this many backups there")
    s.add_argument("--force", action="store_true", help="replace an existing backup file")
    s = sub.add_parser("backups", help="the backups in folders, with their schema (default: the hub's backup folder and "
                                       "its pre-migration folder)")
    s.add_argument("folders", nargs="*", help="folders of backups")
    s = sub.add_parser("restore", help="replace the SQLite quota database with a checked backup (stop the hub first)")
    s.add_argument("backup", help="the backup file (from backup, the hub's schedule or the one it took before a migration), or a folder: its newest")
    sub.add_parser("check", help="the values, the database's schema and that every balance equals its ledger")
    _budget_parser(sub)
    return p


COMMANDS: dict[str, Callable[[QuotaEngine, argparse.Namespace], None]] = {
    "list": cmd_list, "show": cmd_show, "set": _change("set"), "add": _change("add"), "deduct": _change("deduct"),
    "export-ledger": cmd_export, "check": cmd_check, "budget": cmd_budget,
}


def main(argv: Optional[list[str]] = None) -> int:
    args = parser().parse_args(argv)
    try:
        if args.command == "backups":
            from .upgrade import default_backup_dir, pre_migration_dir

            base = default_backup_dir(str(_sqlite_file(args, "backups")))
            folders = [Path(f) for f in args.folders] or [base, pre_migration_dir(base)]
            print("\n".join(backups.listing(folders)))
            return 0
        if args.command in ("backup", "restore"):
            (cmd_backup if args.command == "backup" else cmd_restore)(args)
            return 0
        engine = open_engine(args)
        try:
            COMMANDS[args.command](engine, args)
        finally:
            engine.close()
    except (Failed, BackupFailed, values_mod.ValuesError, StorageError) as e:
        print(f"jupyterhub-quota: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
