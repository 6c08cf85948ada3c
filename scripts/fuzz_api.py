"""Fuzzes a real `quota-hub serve` (a SQLite file) from its own OpenAPI document with schemathesis,
then checks the database: run by scripts/fuzz-api.sh (see there for the options).

Every operation gets up to MAX_EXAMPLES generated requests in each phase (examples, coverage,
fuzzing, and stateful sequences that follow the document's links: start a session, read it, end
it, read the user). The run fails on any 5xx, any response the document does not describe
(status, content type, headers, body schema), a request the document calls invalid that the
server accepts, a 405 without `Allow`, or a route that ignores its authentication. After the
server stops (SIGTERM, exit 0), the ledger must reconcile: every transaction moves its amount, and
every balance is the sum of its user's transactions.
"""

from __future__ import annotations

import argparse
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def drain(stream, keep: list) -> None:
    """Reads a pipe to its end (a full pipe would block the server's writes), keeping its lines."""
    for line in stream:
        keep.append(line)


def start(binary: Path, db: Path, values: Path, log: list) -> tuple[subprocess.Popen, str]:
    p = subprocess.Popen(
        [str(binary), "serve", "--db", f"sqlite://{db}", "--values", str(values), "--listen", "127.0.0.1:0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    threading.Thread(target=drain, args=(p.stderr, log), daemon=True).start()
    for line in p.stdout:
        if "listening on http://" in line:
            url = line.split()[-1].rstrip("/")
            threading.Thread(target=drain, args=(p.stdout, []), daemon=True).start()
            return p, url
    p.wait()
    raise SystemExit("quota-hub serve did not start:\n" + "".join(log))


def reconcile(db: Path) -> list[str]:
    problems = []
    con = sqlite3.connect(db)
    try:
        for tid, user, amount, before, after in con.execute(
            "SELECT id, username, amount, balance_before, balance_after FROM transactions"
        ):
            if amount != after - before:
                problems.append(f"transaction {tid} ({user}) has amount {amount} but moves {before} -> {after}")
        sums = dict(con.execute("SELECT username, SUM(amount) FROM transactions WHERE budget IS NULL GROUP BY username"))
        users = list(con.execute("SELECT username, balance FROM users"))
        for user, balance in users:
            if sums.get(user, 0) != balance:
                problems.append(f"user {user}: balance {balance}, transactions sum to {sums.get(user, 0)}")
        counts = {
            "users": len(users),
            "transactions": con.execute("SELECT COUNT(*) FROM transactions").fetchone()[0],
            "sessions": con.execute("SELECT COUNT(*) FROM sessions").fetchone()[0],
        }
        print("database after the run: " + ", ".join(f"{v} {k}" for k, v in counts.items()))
    finally:
        con.close()
    return problems


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", type=Path, required=True, help="the quota-hub binary")
    ap.add_argument("--max-examples", type=int, default=25, help="per operation and phase (default 25)")
    ap.add_argument("--seed", type=int, default=None, help="schemathesis' seed (default: a new one, printed)")
    ap.add_argument("--report-dir", type=Path, default=None, help="keep schemathesis' JUnit report here")
    args = ap.parse_args()
    if args.max_examples < 1:
        ap.error("--max-examples: must be at least 1")
    with tempfile.TemporaryDirectory(prefix="quota-fuzz-api-") as tmp:
        db = Path(tmp) / "quota.db"
        values = REPO / "examples" / "values.yaml"
        token = subprocess.run(
            [str(args.bin), "token", "issue", "--db", f"sqlite://{db}", "--user", "fuzz-admin", "--admin"],
            check=True, capture_output=True, text=True,
        ).stdout.strip()
        log: list = []
        server, url = start(args.bin, db, values, log)
        print(f"quota-hub serving {url} over {db}", flush=True)
        cmd = [
            str(Path(sys.executable).with_name("schemathesis")), "run", f"{url}/api/quota/openapi.json",
            "--url", f"{url}/",
            "-H", f"Authorization: token {token}",
            "--phases", os.environ.get("FUZZ_API_PHASES", "examples,coverage,fuzzing,stateful"),
            "--checks", "all",
            # Valid input is refused for business reasons (a deduct beyond the balance, an unknown
            # session id), and there is one identity: these two checks do not apply.
            "--exclude-checks", "positive_data_acceptance,object_level_authorization",
            # The original's aliases (/admin/api/quota/{name}) overlap every other admin route by design:
            # a generated name such as `batch` is that route. Their handlers are the documented ones.
            "--exclude-deprecated",
            "--max-examples", str(args.max_examples),
            # One worker: schemathesis generating in two threads trips a CPython 3.11 bug
            # ("AST constructor recursion depth mismatch") in its own code.
            "--workers", "1",
            "--request-timeout", "30",
            "--no-color",
            "--output-sanitize", "true",
            "--generation-database", "none",
            "--suppress-health-check", "all",
        ]
        if args.seed is not None:
            cmd += ["--seed", str(args.seed)]
        if args.report_dir is not None:
            cmd += ["--report", "junit", "--report-dir", str(args.report_dir)]
        env = dict(os.environ, SCHEMATHESIS_HOOKS="")
        st = subprocess.run(cmd, env=env).returncode
        server.send_signal(signal.SIGTERM)
        exit_code = server.wait(timeout=60)
        stderr = "".join(log)
        problems = []
        if exit_code != 0:
            problems.append(f"quota-hub exited {exit_code} after SIGTERM:\n{stderr[-3000:]}")
        if "panicked" in stderr:
            problems.append("quota-hub logged a panic:\n" + "\n".join(l for l in stderr.splitlines() if "panicked" in l))
        problems += reconcile(db)
        for p in problems:
            print(f"fuzz-api: {p}", file=sys.stderr)
        if st != 0:
            print(f"fuzz-api: schemathesis found failures (exit {st})", file=sys.stderr)
        return 1 if (st != 0 or problems) else 0


if __name__ == "__main__":
    sys.exit(main())
