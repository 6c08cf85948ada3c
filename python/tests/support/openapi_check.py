"""The published API contract (``core/src/api/openapi.json``) applied to exchanges, as
``tests/support/src/openapi_check.rs`` does for the Rust hosts: every status is documented for its
operation and its body validates against that status's schema; a request the engine accepted (2xx)
validates against the operation's request schema and names only documented query parameters."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Optional

import jsonschema

REPO = Path(__file__).resolve().parents[3]
DOCUMENT = json.loads((REPO / "core" / "src" / "api" / "openapi.json").read_text())


def template_of(path: str) -> Optional[str]:
    segs = [s for s in path.split("/") if s]
    best = None
    for t in DOCUMENT["paths"]:
        tsegs = [s for s in t.split("/") if s]
        if len(tsegs) != len(segs):
            continue
        literal = 0
        for a, b in zip(tsegs, segs):
            if a.startswith("{"):
                continue
            if a != b:
                break
            literal += 1
        else:
            if best is None or literal > best[0]:
                best = (literal, t)
    return best[1] if best else None


def _escape(s: str) -> str:
    return s.replace("~", "~0").replace("/", "~1")


def _resolve(pointer: str):
    node = DOCUMENT
    for part in pointer.lstrip("/").split("/"):
        node = node[part.replace("~1", "/").replace("~0", "~")]
    return node


@functools.lru_cache(maxsize=None)
def _validator(pointer: str) -> jsonschema.Draft202012Validator:
    root = dict(DOCUMENT)
    root["$ref"] = "#" + pointer.replace("{", "%7B").replace("}", "%7D")
    return jsonschema.Draft202012Validator(root)


def _validate(pointer: str, value) -> Optional[str]:
    errors = [f"{e.message} at {list(e.absolute_path)}" for e in _validator(pointer).iter_errors(value)]
    return "; ".join(errors) or None


def check(method: str, target: str, sent: str, status: int, body: str) -> Optional[str]:
    """None when the exchange is as the document says, else what is not."""
    path, _, query = target.partition("?")
    try:
        parsed = json.loads(body)
    except ValueError as e:
        return f"{status} body is not JSON ({e}): {body}"
    template = template_of(path)
    if template is None:
        if status not in (400, 404):
            return f"undocumented path answered {status}"
        return _validate("/components/schemas/Error", parsed)
    op_ptr = f"/paths/{_escape(template)}/{method.lower()}"
    op = DOCUMENT["paths"][template].get(method.lower())
    if op is None:
        if status != 405:
            return f"{method} is not documented for {template} but answered {status}"
        return _validate("/components/schemas/Error", parsed)
    response = op["responses"].get(str(status))
    if response is None:
        return f"{method} {template}: status {status} is not documented ({body})"
    resp_ptr = f"{op_ptr}/responses/{status}"
    if "$ref" in response:
        resp_ptr = response["$ref"].lstrip("#")
        response = _resolve(resp_ptr)
    if "application/json" in response.get("content", {}):
        problem = _validate(f"{resp_ptr}/content/application~1json/schema", parsed)
        if problem:
            return f"{method} {template} {status}: response {body}: {problem}"
    if 200 <= status < 300:
        if "requestBody" in op:
            request = json.loads(sent) if sent.strip() else {}
            problem = _validate(f"{op_ptr}/requestBody/content/application~1json/schema", request)
            if problem:
                return f"{method} {template}: accepted request {sent} is not in the document: {problem}"
        documented = {p["name"] for p in op.get("parameters", []) if p["in"] == "query"}
        for pair in filter(None, query.split("&")):
            key = pair.split("=")[0]
            if key not in documented:
                return f"{method} {template}: accepted the undocumented query parameter `{key}`"
    return None


def assert_conforms(transcript: list[dict]) -> None:
    """Every exchange of a replay's transcript as the document says."""
    problems = []
    for x in transcript:
        method, _, target = x["request"].partition(" ")
        p = check(method, target, x["sent"], x["status"], x["body"])
        if p:
            problems.append(f"step {x['step']} {x['request']}: {p}")
    assert not problems, "not as the OpenAPI document says:\n" + "\n".join(problems)
