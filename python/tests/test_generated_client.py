"""A Python client generated from the OpenAPI document a running quota-hub serves, with
openapi-python-client (as a new user would: `openapi-python-client generate --path openapi.json`),
is whole: every operation is generated (the only warning is quota-hub's text `/metrics`, whose
body the generator does not parse), no model is named after a position (`...Type0`), and every
engine operation, called through the generated functions against the real server, answers what
the document says with a parsed model."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
import yaml

from support.hub_process import DEADLINE_S, free_port, wait_for

PACKAGE = "compute_credit_quota_api_client"
VALUES = {"custom": {"authMode": "github", "quota": {"defaultQuota": 0, "refreshRules": {
    "weekly": {"enabled": True, "schedule": "0 6 * * 1", "action": "add", "amount": 10}},
    # A receiver that is not there: its events stay pending (the routes are what is tested).
    "webhooks": [{"name": "ops", "url": "http://127.0.0.1:9/hook", "secretEnv": "QUOTA_TEST_UNSET", "events": ["start.refused"]}]},
    "accelerators": {"phx": {"displayName": "PHX", "quotaRate": 2}}}}


@pytest.fixture(scope="module")
def server(tmp_path_factory, quota_hub_bin):
    tmp = tmp_path_factory.mktemp("client")
    (tmp / "values.yaml").write_text(yaml.safe_dump(VALUES))
    db = f"sqlite://{tmp / 'q.db'}"

    def token(*args: str) -> str:
        return subprocess.run([quota_hub_bin, "token", "issue", "--db", db, *args], capture_output=True, text=True, check=True).stdout.strip()

    tokens = {"admin": token("--user", "root", "--admin"), "hub": token("--user", "hub", "--scope", "quota:sessions"),
              "ann": token("--user", "ann")}
    port = free_port()
    proc = subprocess.Popen([quota_hub_bin, "serve", "--listen", f"127.0.0.1:{port}", "--db", db, "--values", str(tmp / "values.yaml"),
                             "--no-scheduler"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}/hub"

    def up():
        try:
            with urllib.request.urlopen(f"{base}/readyz", timeout=5) as r:
                return r.status == 200
        except OSError:
            assert proc.poll() is None, "quota-hub exited"
            return False

    wait_for("quota-hub", up)
    yield base, tokens, tmp
    proc.terminate()
    proc.wait(timeout=DEADLINE_S)


@pytest.fixture(scope="module")
def generated(server):
    base, _, tmp = server
    with urllib.request.urlopen(f"{base}/api/quota/openapi.json", timeout=DEADLINE_S) as r:
        document = json.loads(r.read())
    (tmp / "openapi.json").write_text(json.dumps(document))
    out = subprocess.run([str(Path(sys.executable).parent / "openapi-python-client"), "generate", "--path", str(tmp / "openapi.json"),
                          "--meta", "none", "--output-path", str(tmp / "gen" / PACKAGE)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    sys.path.insert(0, str(tmp / "gen"))
    try:
        yield document, out.stdout + out.stderr, importlib.import_module(PACKAGE)
    finally:
        sys.path.remove(str(tmp / "gen"))


def test_every_operation_is_generated_with_readable_names(generated):
    document, log, _ = generated
    warned = [line for line in log.splitlines() if line.startswith(("WARNING", "Unable"))]
    assert warned == ["WARNING parsing GET /metrics within quota_hub."], log
    root = Path(sys.modules[PACKAGE].__file__).parent
    models = sorted(p.stem for p in (root / "models").glob("*.py") if p.stem != "__init__")
    assert not [m for m in models if "type_" in m], models
    generated_ops = {p.stem for tag in ("quota", "quota_hub") for p in (root / "api" / tag).glob("*.py") if p.stem != "__init__"}
    snake = lambda s: "".join(f"_{c.lower()}" if c.isupper() else c for c in s)  # noqa: E731
    ops = {snake(op["operationId"]) for item in document["paths"].values() for op in item.values() if isinstance(op, dict) and "operationId" in op}
    assert ops == generated_ops, ops ^ generated_ops


def test_every_engine_operation_answers_through_the_generated_client(server, generated):
    base, tokens, _ = server
    document, _, pkg = generated
    api = importlib.import_module(f"{PACKAGE}.api.quota")
    m = importlib.import_module(f"{PACKAGE}.models")
    client = importlib.import_module(f"{PACKAGE}.client")
    admin, hub, ann = (client.AuthenticatedClient(base_url=base, token=tokens[k], prefix="token") for k in ("admin", "hub", "ann"))

    def op(name: str):
        return importlib.import_module(f"{PACKAGE}.api.quota.{name}")

    calls = {}

    def call(op_id: str, status: int, model: str, fn):
        r = fn()
        assert r.status_code == status, (op_id, r.status_code, r.content)
        assert type(r.parsed).__name__ == model, (op_id, type(r.parsed), r.content)
        calls[op_id] = r.parsed
        return r.parsed

    call("changeUser", 200, "AdminResult", lambda: op("change_user").sync_detailed("ann", client=admin, body=m.AmountChange(action=m.AmountChangeAction.SET, amount=500)))
    call("changeUserLegacy", 200, "AdminResult", lambda: op("change_user_legacy").sync_detailed("bob", client=admin, body=m.UnlimitedChange(action="set_unlimited", unlimited=True)))
    call("getUser", 200, "UserDetail", lambda: op("get_user").sync_detailed("ann", client=admin))
    call("getUserLegacy", 200, "UserDetail", lambda: op("get_user_legacy").sync_detailed("ann", client=admin))
    call("listUsers", 200, "UserList", lambda: op("list_users").sync_detailed(client=admin, limit=10))
    call("listUsersLegacy", 200, "UserList", lambda: op("list_users_legacy").sync_detailed(client=admin))
    batch = call("batch", 200, "BatchResult", lambda: op("batch").sync_detailed(client=admin, body=m.BatchRequest(users=[
        m.BatchEntry(username="cy", amount=40).to_dict(), {"username": 7}])))
    assert [d.status.value for d in batch.details] == ["success", "failed"], batch
    started = call("startSession", 201, "Started", lambda: op("start_session").sync_detailed(client=hub, body=m.StartRequest(
        username="ann", runtime_minutes=30, resource_type="phx")))
    refused = op("start_session").sync_detailed(client=hub, body=m.StartRequest(username="dan", runtime_minutes=30))
    assert refused.status_code == 403 and type(refused.parsed).__name__ == "StartRefused", refused.content
    assert refused.parsed.next_refresh.rule == "weekly", refused.content
    extended = call("extendSession", 200, "Session", lambda: op("extend_session").sync_detailed(
        started.session_id, client=ann, body=m.ExtendRequest(minutes=5)))
    assert extended.runtime_minutes == 35, extended
    call("getSession", 200, "Session", lambda: op("get_session").sync_detailed(started.session_id, client=admin))
    call("listSessions", 200, "SessionList", lambda: op("list_sessions").sync_detailed(client=admin, status=m.SessionStatus.ACTIVE))
    call("endSession", 200, "Ended", lambda: op("end_session").sync_detailed(started.session_id, client=hub, body=m.EndOptions(outcome=m.SessionOutcome.COMPLETED)))
    op("start_session").sync_detailed(client=hub, body=m.StartRequest(username="ann", runtime_minutes=5, server_name="two"))
    call("endSessionByServer", 200, "Ended", lambda: op("end_session_by_server").sync_detailed(client=hub, body=m.EndByServerRequest(
        username="ann", server_name="two", outcome=m.SessionOutcome.FAILED)))
    call("refresh", 200, "RefreshResult", lambda: op("refresh").sync_detailed(client=admin, body=m.RefreshRequest(
        action=m.RefreshRequestAction.ADD, amount=1, targets=m.Targets(include_users=["ann", "cy"]), dry_run=True)))
    call("cleanup", 200, "CleanupResult", lambda: op("cleanup").sync_detailed(client=admin, body=m.CleanupOptions()))
    call("ledger", 200, "Ledger", lambda: op("ledger").sync_detailed(client=admin, username="ann"))
    call("me", 200, "Me", lambda: op("me").sync_detailed(client=ann))
    call("rates", 200, "RatesView", lambda: op("rates").sync_detailed(client=ann))
    call("accelerators", 200, "Accelerators", lambda: op("accelerators").sync_detailed(client=ann))
    call("openapi", 200, "OpenAPI", lambda: op("openapi").sync_detailed(client=ann))
    call("setGroupMembers", 200, "GroupChanged", lambda: op("set_group_members").sync_detailed("lab", client=admin, body=m.GroupMembers(members=["ann"])))
    call("changeGroupMembers", 200, "GroupChanged", lambda: op("change_group_members").sync_detailed("lab", client=admin, body=m.GroupMemberChange(add=["cy"])))
    call("getGroup", 200, "Group", lambda: op("get_group").sync_detailed("lab", client=admin))
    call("listGroups", 200, "GroupList", lambda: op("list_groups").sync_detailed(client=admin))
    call("replaceMemberships", 200, "MembershipsReplaced", lambda: op("replace_memberships").sync_detailed(client=admin, body=m.Memberships(
        users=m.MembershipsUsers.from_dict({"bob": ["lab", "staff"]}))))
    call("listMemberships", 200, "MembershipList", lambda: op("list_memberships").sync_detailed(client=admin))
    call("deleteGroup", 200, "GroupChanged", lambda: op("delete_group").sync_detailed("staff", client=admin))
    call("myTransactions", 200, "MyTransactionPage", lambda: op("my_transactions").sync_detailed(client=ann))
    call("mySessions", 200, "MySessionPage", lambda: op("my_sessions").sync_detailed(client=ann))
    call("myUsage", 200, "MyUsage", lambda: op("my_usage").sync_detailed(client=ann))
    call("usageReport", 200, "UsageReport", lambda: op("usage_report").sync_detailed(client=admin, from_="2026-01-01", to="2026-12-31", group_by=m.UsageReportGroupBy.USER))
    call("defineBudget", 200, "BudgetDefined", lambda: op("define_budget").sync_detailed("course", client=admin, body=m.BudgetDefinition(
        description="a course", users=["ann"], member_limit=50)))
    call("changeBudget", 200, "BudgetChanged", lambda: op("change_budget").sync_detailed("course", client=admin, body=m.AmountChange(
        action=m.AmountChangeAction.ADD, amount=100)))
    call("getBudget", 200, "BudgetDetail", lambda: op("get_budget").sync_detailed("course", client=admin))
    call("listBudgets", 200, "BudgetList", lambda: op("list_budgets").sync_detailed(client=admin))
    op("change_budget").sync_detailed("course", client=admin, body=m.AmountChange(action=m.AmountChangeAction.SET, amount=0))
    call("deleteBudget", 200, "BudgetDeleted", lambda: op("delete_budget").sync_detailed("course", client=admin))
    call("expire", 200, "Swept", lambda: op("expire").sync_detailed(client=admin, body=m.ExpireRequest(in_chunks=True)))
    mine = call("myEvents", 200, "EventList", lambda: op("my_events").sync_detailed(client=ann))
    assert [e.kind.value for e in mine.events] == ["session.ended", "session.ended"], mine
    status = call("myServerStatus", 200, "MyServerStatus", lambda: op("my_server_status").sync_detailed(client=ann, events_after=0))
    assert status.me.username == "ann" and status.session is None and [e.kind.value for e in status.events] == ["session.ended", "session.ended"], status
    events = call("listEvents", 200, "EventList", lambda: op("list_events").sync_detailed(client=admin, kind=m.EventKind.START_REFUSED))
    assert [e.username for e in events.events] == ["dan"], events
    hooks = call("listWebhooks", 200, "WebhookList", lambda: op("list_webhooks").sync_detailed(client=admin))
    assert [h.name for h in hooks.webhooks] == ["ops"], hooks
    call("redeliverWebhook", 200, "WebhookStatus", lambda: op("redeliver_webhook").sync_detailed("ops", client=admin, body=m.RedeliverRequest(from_id=1)))
    call("deliveryStep", 200, "DeliveryBatch", lambda: op("delivery_step").sync_detailed("ops", client=admin, body=m.DeliveryStep(holder="the-test")))
    rights = call("myRights", 200, "Rights", lambda: op("my_rights").sync_detailed(client=ann))
    assert (rights.username, rights.quota_admin, rights.manages) == ("ann", False, []), rights
    asked = call("askCredit", 201, "CreditRequest", lambda: op("ask_credit").sync_detailed(
        client=ann, body=m.CreditAsk(amount=5, reason="a generated client asks")))
    call("myRequests", 200, "CreditRequestList", lambda: op("my_requests").sync_detailed(client=ann))
    call("listRequests", 200, "CreditRequestList", lambda: op("list_requests").sync_detailed(client=admin))
    call("getRequest", 200, "CreditRequest", lambda: op("get_request").sync_detailed(str(asked.id), client=admin))
    decided = call("decideRequest", 200, "CreditRequest", lambda: op("decide_request").sync_detailed(
        str(asked.id), client=admin, body=m.CreditDecision(action=m.CreditDecisionAction.APPROVE, amount=3)))
    assert (decided.granted, decided.decided_by) == (3, "root"), decided
    engine_ops = {o["operationId"] for item in document["paths"].values() for o in item.values()
                  if isinstance(o, dict) and "quota" in o.get("tags", [])}
    assert set(calls) == engine_ops, engine_ops ^ set(calls)
