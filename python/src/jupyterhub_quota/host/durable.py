"""Where the quota database may live: not in a container's own writable layer, which is gone when the
container is replaced (a pod restart, an upgrade), and with it every balance and the whole ledger."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Optional

#: File systems container runtimes give a container's root (its writable layer).
CONTAINER_LAYERS = ("overlay", "aufs", "fuse.fuse-overlayfs")


def root_fs_type(mountinfo: str = "/proc/self/mountinfo") -> Optional[str]:
    """The type of the file system mounted at `/` (the last mount there wins), or None if unknown."""
    try:
        lines = Path(mountinfo).read_text().splitlines()
    except OSError:
        return None
    kind = None
    for line in lines:
        fields = line.split()
        # id parent major:minor root mount-point options [optional...] - fstype source super-options
        if len(fields) > 7 and fields[4] == "/" and "-" in fields[6:]:
            kind = fields[fields.index("-", 6) + 1]
    return kind


def on_container_layer(path: str, mountinfo: str = "/proc/self/mountinfo") -> Optional[str]:
    """The root's file system type if `path` (a file, existing or not) would be written to a
    container's own layer: `/` is an overlay (or aufs) and the nearest existing folder of `path` is on
    the same device as `/` (no volume mounted over it). None otherwise."""
    kind = root_fs_type(mountinfo)
    if kind not in CONTAINER_LAYERS:
        return None
    p = Path(os.path.abspath(path))
    while not p.exists() and p != p.parent:
        p = p.parent
    try:
        return kind if os.stat(p).st_dev == os.stat("/").st_dev else None
    except OSError:
        return None


def refusal(db_url: str, path: str, kind: str) -> str:
    return (
        f"{db_url!r} puts the quota database at {os.path.abspath(path)}, on the container's own "
        f"file system ({kind}, not a mounted volume): every balance and the whole ledger would be lost "
        "when the container restarts. Put it on a volume (z2jh: `hub.db.type: sqlite-pvc` keeps "
        "/srv/jupyterhub on one; otherwise mount one with hub.extraVolumes and hub.extraVolumeMounts "
        "and point db_url at it), or use PostgreSQL (db_url='postgresql://...'); "
        "or pass allow_ephemeral_db=True to configure() if losing it is acceptable (a demo). See docs/z2jh.md."
    )
