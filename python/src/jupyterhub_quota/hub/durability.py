"""Whether the ledger would survive losing its volume (issue 59), as quota-hub says it: what the
scheduled backups of a folder did, kept beside them in ``backup-state.json`` (quota-hub's
``storage/backup_state.rs`` writes the same file), and, with Litestream beside the hub
(``litestream_socket``), how far its replica is behind: every ``PROBE_EVERY_S`` the hub asks
Litestream through its control socket to sync and wait; when the replica holds the local
transaction id, every change committed before the probe began is off the volume."""

from __future__ import annotations

import asyncio
import http.client
import json
import os
import socket
import time
from pathlib import Path
from typing import Any, Optional

from ..host.service import log

#: The state file's name in a backup folder.
STATE_FILE = "backup-state.json"
#: How often the replica is asked where it is, and how long one sync may take.
PROBE_EVERY_S = 10.0
SYNC_WAIT_S = 30


def read_state(folder: Path) -> Optional[dict]:
    """The folder's state (None: no backup tried there yet)."""
    try:
        return json.loads((folder / STATE_FILE).read_text())
    except FileNotFoundError:
        return None


def record(folder: Path, ok: bool, *, size: int = 0, error: str = "", now: Optional[int] = None) -> None:
    """Records a backup's outcome, written whole (a temporary file renamed over the old)."""
    at = int(time.time()) if now is None else now
    try:
        s = read_state(folder) or {}
    except (OSError, ValueError):
        s = {}
    s = {"last_success": s.get("last_success"), "last_bytes": s.get("last_bytes", 0), "failures": s.get("failures", 0),
         "last_failure": s.get("last_failure"), "last_error": s.get("last_error")}
    if ok:
        s["last_success"], s["last_bytes"] = at, size
    else:
        s["failures"] += 1
        s["last_failure"], s["last_error"] = at, error[:500]
    tmp = folder / f".{STATE_FILE}.partial"
    tmp.write_text(json.dumps(s, separators=(",", ":")) + "\n")
    os.replace(tmp, folder / STATE_FILE)


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: str, timeout: float):
        super().__init__("litestream", timeout=timeout)
        self._path = path

    def connect(self) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self._path)


class ReplicaProbe:
    """Litestream's replica of the SQLite file at ``db_path``, asked through ``socket_path``."""

    def __init__(self, socket_path: str, db_path: str):
        self.socket_path, self.db_path = socket_path, str(Path(db_path).resolve())
        self.started = time.time()
        #: When the last successful probe began (None: none yet).
        self.in_sync_at: Optional[float] = None

    def lag_seconds(self, now: Optional[float] = None) -> float:
        now = time.time() if now is None else now
        return max(0.0, now - (self.in_sync_at if self.in_sync_at is not None else self.started))

    def probe(self) -> None:
        """One probe (blocking): Litestream syncs and says whether the replica holds the local id."""
        began = time.time()
        c = _UnixConnection(self.socket_path, SYNC_WAIT_S + 5)
        try:
            c.request("POST", "/sync", json.dumps({"path": self.db_path, "wait": True, "timeout": SYNC_WAIT_S}),
                      {"Content-Type": "application/json"})
            r = c.getresponse()
            body = r.read().decode("utf-8", "replace")
        finally:
            c.close()
        if r.status != 200:
            raise RuntimeError(f"Litestream answered {r.status}: {body}")
        v = json.loads(body)
        if v.get("replicated_txid") is None or v.get("txid") is None or v["replicated_txid"] < v["txid"]:
            raise RuntimeError(f"the replica is behind: {body}")
        self.in_sync_at = max(self.in_sync_at or 0.0, began)

    async def run_forever(self) -> None:
        failing = False
        while True:
            try:
                await asyncio.to_thread(self.probe)
                if failing:
                    log.info("quota: Litestream's replica holds every change again")
                failing = False
            except Exception as e:  # noqa: BLE001 - reported once, then the lag grows
                if not failing:
                    log.warning("quota: asking Litestream where its replica is failed "
                                "(quota_replication_lag_seconds grows): %s", e)
                failing = True
            await asyncio.sleep(PROBE_EVERY_S)


def families(backup_dir: Optional[Path], replica: Optional[ReplicaProbe]) -> list:
    """The durability series for a scrape (prometheus_client families), as quota-hub exports them."""
    from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

    out: list[Any] = []
    if backup_dir is not None:
        try:
            s = read_state(backup_dir) or {}
        except (OSError, ValueError) as e:
            log.warning("quota: reading the backups' state failed: %s", e)
            s = {}
        out += [
            GaugeMetricFamily("quota_backup_last_success_timestamp_seconds",
                              "When the newest scheduled backup was written whole and checked (Unix seconds; 0: none yet)",
                              value=s.get("last_success") or 0),
            CounterMetricFamily("quota_backup_failures",
                                "Scheduled backups that failed (read from the backup folder's backup-state.json)",
                                value=s.get("failures", 0)),
            GaugeMetricFamily("quota_backup_bytes", "The size of the newest scheduled backup", value=s.get("last_bytes", 0)),
        ]
    if replica is not None:
        out.append(GaugeMetricFamily(
            "quota_replication_lag_seconds",
            "How long ago Litestream's replica last held every committed change (a change older than this is off the volume)",
            value=replica.lag_seconds()))
    return out
