"""`configure()` refuses a SQLite quota database that would be lost with the container (z2jh with the
hub's own database on PostgreSQL leaves /srv/jupyterhub in the container's layer). Run in a real
container-like root: a mount namespace whose `/` is an overlay over this machine's, as container
runtimes lay a container's writable layer, with a folder bind-mounted at `/data` as a volume is.
Needs root (mount namespaces), as the README's test command runs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from jupyterhub_quota.host import durable

CONFIGURE = """
import sys
from traitlets.config import Config
from jupyterhub_quota import ConfigError, configure
kwargs = eval(sys.argv[2])
try:
    configure(Config(), values={"custom": {"authMode": "github"}}, db_url=sys.argv[1], **kwargs)
except ConfigError as e:
    print("REFUSED", e)
    sys.exit(3)
print("CONFIGURED")
"""


def in_container(tmp_path: Path, db_url: str, **kwargs) -> subprocess.CompletedProcess:
    for d in ("u", "w", "m", "vol"):
        (tmp_path / d).mkdir()
    d = tmp_path
    script = (
        f"set -e; mount -t overlay overlay -o lowerdir=/,upperdir={d}/u,workdir={d}/w {d}/m; "
        f"mount -t proc proc {d}/m/proc; mkdir -p {d}/m/data {d}/m/srv/jupyterhub; mount --bind {d}/vol {d}/m/data; "
        f'exec chroot {d}/m "$@"'
    )
    return subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh",
         sys.executable, "-c", CONFIGURE, db_url, repr(kwargs)],
        capture_output=True, text=True, timeout=300,
    )


def test_a_database_on_the_containers_layer_is_refused_naming_db_url_and_the_fix(tmp_path):
    r = in_container(tmp_path, "sqlite:///srv/jupyterhub/quota.sqlite")
    assert r.returncode == 3, r.stdout + r.stderr
    for part in ("db_url:", "/srv/jupyterhub/quota.sqlite", "container's own file system (overlay",
                 "sqlite-pvc", "postgresql://", "allow_ephemeral_db=True"):
        assert part in r.stdout, (part, r.stdout)
    assert not (tmp_path / "u" / "srv" / "jupyterhub" / "quota.sqlite").exists()


def test_a_database_on_a_mounted_volume_is_taken(tmp_path):
    r = in_container(tmp_path, "sqlite:///data/quota/quota.sqlite")
    assert r.returncode == 0 and "CONFIGURED" in r.stdout, r.stdout + r.stderr
    assert (tmp_path / "vol" / "quota" / "quota.sqlite").exists()


def test_allow_ephemeral_db_takes_the_containers_layer(tmp_path):
    r = in_container(tmp_path, "sqlite:///srv/jupyterhub/quota.sqlite", allow_ephemeral_db=True)
    assert r.returncode == 0 and "CONFIGURED" in r.stdout, r.stdout + r.stderr
    assert (tmp_path / "u" / "srv" / "jupyterhub" / "quota.sqlite").exists()


@pytest.mark.parametrize("text, kind", [
    ("27 1 254:0 / / rw,relatime - ext4 /dev/vda rw\n", "ext4"),
    ("2356 2164 0:389 / / rw,relatime master:633 - overlay overlay rw,lowerdir=/x\n"
     "2380 2356 259:1 /var/lib/kubelet/v /srv/jupyterhub rw - ext4 /dev/nvme0n1p1 rw\n", "overlay"),
    ("27 1 254:0 / / rw - ext4 /dev/vda rw\n65 27 0:39 / / rw - overlay overlay rw\n", "overlay"),
    ("garbage\n", None),
])
def test_the_last_mount_at_root_gives_its_type(tmp_path, text, kind):
    (tmp_path / "mountinfo").write_text(text)
    assert durable.root_fs_type(str(tmp_path / "mountinfo")) == kind
