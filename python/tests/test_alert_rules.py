"""The durability alerts (issue 59) evaluated by Prometheus' own rule engine: the chart's
PrometheusRule, rendered by Helm's SDK, run by `promtool test rules` (Debian's prometheus package)
over series written as the servers export them. Each alert fires when it should, after its `for:`,
and stays quiet just before: a backup that stopped succeeding, one that never ran while the
server has been up for a day and more, a failed backup, a replica that fell behind, a repaired
budget."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest
import yaml

from support.chart import kinds, render

PROMTOOL = shutil.which("promtool")
pytestmark = pytest.mark.skipif(not PROMTOOL and not os.environ.get("CI"), reason="promtool (Debian's prometheus package)")

SEL = 'job="rel-quota-hub", namespace="hub"'  # the chart's own selector for release rel in hub
DAY = 86400
STALE = 26 * 3600  # the chart's backupStaleSeconds


def rules(tmp_path) -> tuple[str, dict]:
    (rule,) = kinds(render({"metrics": {"prometheusRule": {"enabled": True}}}), "PrometheusRule")
    path = tmp_path / "rules.yaml"
    path.write_text(yaml.safe_dump({"groups": rule["spec"]["groups"]}))
    by_name = {r["alert"]: r for g in rule["spec"]["groups"] for r in g["rules"]}
    return str(path), by_name


def promtool(tmp_path, rule_file: str, tests: list[dict]) -> subprocess.CompletedProcess:
    spec = tmp_path / "tests.yaml"
    spec.write_text(yaml.safe_dump({"rule_files": [rule_file], "evaluation_interval": "1m", "tests": tests}))
    return subprocess.run([PROMTOOL, "test", "rules", str(spec)], capture_output=True, text=True, timeout=120)


def fired(name: str, severity: str, at_s: int, annotations: dict) -> dict:
    return {"eval_time": f"{at_s}s", "alertname": name,
            "exp_alerts": [{"exp_labels": {"severity": severity}, "exp_annotations": annotations}]}


def quiet(name: str, at_s: int) -> dict:
    return {"eval_time": f"{at_s}s", "alertname": name, "exp_alerts": []}


def plain(rule: dict) -> dict:
    """The rule's annotations as Prometheus renders them when they hold no template (a templated
    one is given below as it must read)."""
    return dict(rule["annotations"])


def test_the_durability_alerts_fire_when_they_should_and_not_before(tmp_path):
    rule_file, by_name = rules(tmp_path)
    stale, failing = by_name["QuotaBackupStale"], by_name["QuotaBackupFailing"]
    lagging, repaired = by_name["QuotaReplicationLagging"], by_name["QuotaBudgetHoldsRepaired"]
    assert stale["for"] == "10m" and failing["for"] == "1m" and lagging["for"] == "5m" and repaired["for"] == "1m"
    minutes = (STALE + 3600) // 60
    up = f'process_start_time_seconds{{{SEL}}}'
    tests = [
        # The newest backup at t=60 s, none after: stale 26 h later, firing once `for:` passed.
        {"interval": "1m", "input_series": [
            {"series": f"quota_backup_last_success_timestamp_seconds{{{SEL}}}", "values": f"60+0x{minutes}"},
            {"series": up, "values": f"0+0x{minutes}"}],
         "alert_rule_test": [quiet("QuotaBackupStale", STALE + 60 + 5 * 60),
                             fired("QuotaBackupStale", "critical", STALE + 60 + 12 * 60, plain(stale))]},
        # No backup ever (the state's 0), the server up since t=0: the same alarm.
        {"interval": "1m", "input_series": [
            {"series": f"quota_backup_last_success_timestamp_seconds{{{SEL}}}", "values": f"0+0x{minutes}"},
            {"series": up, "values": f"0+0x{minutes}"}],
         "alert_rule_test": [quiet("QuotaBackupStale", STALE - 60),
                             fired("QuotaBackupStale", "critical", STALE + 12 * 60, plain(stale))]},
        # No backup yet, but the server started an hour ago: nothing to say yet.
        {"interval": "1m", "input_series": [
            {"series": f"quota_backup_last_success_timestamp_seconds{{{SEL}}}", "values": f"0+0x{minutes}"},
            {"series": up, "values": f"{STALE}+0x{minutes}"}],
         "alert_rule_test": [quiet("QuotaBackupStale", STALE + 3600)]},
        # A failure at minute 30: the warning a minute later, gone an hour after.
        {"interval": "1m", "input_series": [
            {"series": f"quota_backup_failures_total{{{SEL}}}", "values": "0x30 1x120"}],
         "alert_rule_test": [quiet("QuotaBackupFailing", 29 * 60),
                             fired("QuotaBackupFailing", "warning", 33 * 60, plain(failing)),
                             quiet("QuotaBackupFailing", 100 * 60)]},
        # The replica 5 s behind, then 120 s from minute 10 on: critical after 5 minutes of it.
        {"interval": "1m", "input_series": [
            {"series": f"quota_replication_lag_seconds{{{SEL}}}", "values": "5x10 120x30"}],
         "alert_rule_test": [quiet("QuotaReplicationLagging", 9 * 60),
                             quiet("QuotaReplicationLagging", 13 * 60),
                             fired("QuotaReplicationLagging", "critical", 17 * 60,
                                   {**plain(lagging), "summary": "Litestream's replica is 2m 0s behind the quota database"})]},
        # A repaired budget: a warning.
        {"interval": "1m", "input_series": [
            {"series": f"quota_budget_holds_repaired_total{{{SEL}}}", "values": "0x10 1x60"}],
         "alert_rule_test": [quiet("QuotaBudgetHoldsRepaired", 9 * 60),
                             fired("QuotaBudgetHoldsRepaired", "warning", 13 * 60, plain(repaired))]},
    ]
    r = promtool(tmp_path, rule_file, tests)
    assert r.returncode == 0, r.stdout + r.stderr


def test_a_wrong_expectation_fails_so_the_check_can_fail(tmp_path):
    rule_file, by_name = rules(tmp_path)
    tests = [{"interval": "1m", "input_series": [
        {"series": f"quota_replication_lag_seconds{{{SEL}}}", "values": "5x30"}],
        "alert_rule_test": [fired("QuotaReplicationLagging", "critical", 20 * 60, plain(by_name["QuotaReplicationLagging"]))]}]
    r = promtool(tmp_path, rule_file, tests)
    assert r.returncode != 0 and "QuotaReplicationLagging" in r.stdout + r.stderr, r.stdout + r.stderr
