#!/usr/bin/env python3
"""manage_users.py: the quota command line of the specification, for a hub in Kubernetes.

Runs `quota-hub` inside the hub deployment through `kubectl exec` (or on this machine with
`--local`). The in-pod quota-hub finds its database and values file through the container's
QUOTA_HUB_DB and QUOTA_HUB_VALUES (the Helm chart sets both).

    manage_users.py set-quota alice bob --amount 100
    manage_users.py set-quota -f users.csv [--amount 50]     # header username[,quota]
    manage_users.py add-quota -f users.csv --amount 25
    manage_users.py list-quota

Every argument is passed to the program as one element of a list, never through a shell, so a
username such as `a'; rm -rf /` arrives as that one argument (the original tool built a shell
string here, which let a crafted name run commands). A file is read here and sent on standard input
(`-f -`), so it need not exist in the pod.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path


def parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="manage_users.py", description=__doc__.split("\n\n")[0])
    where = p.add_argument_group("where quota-hub runs")
    where.add_argument("--local", action="store_true", help="run quota-hub on this machine instead of in the pod")
    where.add_argument("--quota-hub", default="quota-hub", help="the quota-hub program (with --local)")
    where.add_argument("--kubectl", default="kubectl", help="the kubectl program")
    where.add_argument("--namespace", "-n", default=None, help="the hub's namespace")
    where.add_argument("--deployment", default="quota-hub",
                       help="the deployment to exec into (default quota-hub: the Helm chart's for a release named quota-hub; "
                            "another release's is <release>-quota-hub)")
    where.add_argument("--container", "-c", default=None, help="the container, if the pod has several")
    sub = p.add_subparsers(dest="command", required=True)
    for name, helptext in (("set-quota", "set balances to an exact amount"), ("add-quota", "add an amount to balances")):
        c = sub.add_parser(name, help=helptext)
        c.add_argument("users", nargs="*", help="usernames")
        c.add_argument("-f", "--file", type=Path, help="a CSV file with a header username[,quota]")
        c.add_argument("--amount", type=int, help="the amount (with -f: for rows without a quota column)")
    sub.add_parser("list-quota", help="print every user's balance")
    a = p.parse_args(argv)
    if a.command in ("set-quota", "add-quota"):
        if bool(a.users) == bool(a.file):
            p.error(f"{a.command}: give usernames or -f FILE (one of the two)")
        if a.users and a.amount is None:
            p.error(f"{a.command}: --amount is required with usernames")
        if a.command == "add-quota" and a.amount is None:
            p.error("add-quota: --amount is required")
    return a


def quota_hub_args(a: argparse.Namespace) -> list[str]:
    """The quota-hub command line, as a list of arguments."""
    if a.command == "list-quota":
        return ["list-quota"]
    args = [a.command]
    if a.file is not None:
        args += ["-f", "-"]
    else:
        # `--` ends the options: a username starting with `-` is still a username.
        args += ["--"] if any(u.startswith("-") for u in a.users) else []
    if a.amount is not None:
        args = args[:1] + ["--amount", str(a.amount)] + args[1:]
    if a.file is None:
        args += list(a.users)
    return args


def command(a: argparse.Namespace) -> list[str]:
    if a.local:
        return [a.quota_hub, *quota_hub_args(a)]
    cmd = [a.kubectl, "exec", "-i"]
    if a.namespace:
        cmd += ["-n", a.namespace]
    cmd.append(f"deploy/{a.deployment}")
    if a.container:
        cmd += ["-c", a.container]
    return cmd + ["--", "quota-hub", *quota_hub_args(a)]


def main(argv: list[str]) -> int:
    a = parse(argv)
    stdin = None
    if getattr(a, "file", None) is not None:
        try:
            stdin = a.file.read_bytes()
        except OSError as e:
            print(f"manage_users.py: {a.file}: {e.strerror}", file=sys.stderr)
            return 2
    try:
        done = subprocess.run(command(a), input=stdin, check=False)  # a list: no shell
    except FileNotFoundError as e:
        print(f"manage_users.py: cannot run {e.filename}: not found (install it or give its path)", file=sys.stderr)
        return 127
    return done.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
