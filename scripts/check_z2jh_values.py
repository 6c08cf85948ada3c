#!/usr/bin/env python3
"""Checks z2jh values files against Zero to JupyterHub's own values schema, as `helm install`
does: each file merged over the chart's default values in Helm's way (maps merge, a list or a
scalar replaces, null removes), then validated with jsonschema against the chart's
values.schema.yaml. Prints each problem with its key path; exits 1 if any.

    python scripts/check_z2jh_values.py --defaults values.yaml --schema values.schema.yaml \\
        examples/z2jh/config.yaml

The release workflow runs it against z2jh 4.4.0's files (downloaded there; they are not part of
this repository). python/tests/test_z2jh.py checks in CI that every key the example sets is one
z2jh 4.4.0's default values know."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import jsonschema
import yaml


def helm_merge(base, over):
    """Helm's coalescing of a values file over the chart's defaults."""
    if not isinstance(base, dict) or not isinstance(over, dict):
        return over
    out = dict(base)
    for k, v in over.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = helm_merge(out.get(k), v) if isinstance(v, dict) else v
    return out


def problems(defaults: dict, schema: dict, values: dict) -> list[str]:
    merged = helm_merge(defaults, values)
    validator = jsonschema.Draft7Validator(schema)
    return sorted(f"{'.'.join(map(str, e.absolute_path)) or '(top)'}: {e.message}" for e in validator.iter_errors(merged))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--defaults", required=True, type=Path, help="the z2jh chart's values.yaml")
    p.add_argument("--schema", required=True, type=Path, help="the z2jh chart's values.schema.yaml")
    p.add_argument("values", nargs="+", type=Path, help="values files, merged in order as -f gives them")
    a = p.parse_args(argv)
    defaults = yaml.safe_load(a.defaults.read_text())
    schema = yaml.safe_load(a.schema.read_text())
    values: dict = {}
    for f in a.values:
        values = helm_merge(values, yaml.safe_load(f.read_text()) or {})
    found = problems(defaults, schema, values)
    for line in found:
        print(f"{', '.join(map(str, a.values))}: {line}", file=sys.stderr)
    if not found:
        print(f"{', '.join(map(str, a.values))}: valid against {a.schema}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
