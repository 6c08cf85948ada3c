"""What the stand-ins of python/tests/support/walk/bin share: the walk's state directory (WALK_STATE),
where the images they built, the registry they pushed to and the cluster objects they applied
live, and the repository (WALK_REPO). See test_docs_walk.py."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

STATE = Path(os.environ["WALK_STATE"])
REPO = Path(os.environ["WALK_REPO"])


def die(msg: str) -> None:
    print(f"{Path(sys.argv[0]).name} (stand-in): {msg}", file=sys.stderr)
    sys.exit(1)


def safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name)


def image_record(tag: str) -> dict | None:
    path = STATE / "images" / safe(tag) / "image.json"
    return json.loads(path.read_text()) if path.is_file() else None


def released_hub_image() -> str:
    """The z2jh hub image a release pushes (release.yml's hub-image job): beside the chart's image
    repository, `hub-quota:<z2jh version>-quota-<version>`."""
    import yaml

    repo = yaml.safe_load((REPO / "deploy/helm/quota-hub/values.yaml").read_text())["image"]["repository"]
    z2jh = re.search(r"^ARG Z2JH_VERSION=(\S+)$", (REPO / "deploy/z2jh/hub.Dockerfile").read_text(), re.M).group(1)
    version = (REPO / "VERSION").read_text().strip()
    return f"{repo.rsplit('/', 1)[0]}/hub-quota:{z2jh}-quota-{version}"


def pulled(tag: str) -> dict | None:
    """The image `tag` as a node pulls it: one the walk built, or the released hub image, which
    stands in as the release job builds it (hub.Dockerfile, this version's wheel from the checkout,
    the postgres extra; the walk's docker reuses an identical build the docs made)."""
    import shutil
    import subprocess

    record = image_record(tag)
    if record or tag != released_hub_image():
        return record
    [wheel] = (REPO / "target" / "python-dist").glob(f"jupyterhub_quota-{(REPO / 'VERSION').read_text().strip()}-py3-none-any.whl")
    context = STATE / "release-context"
    context.mkdir(exist_ok=True)
    shutil.copy(wheel, context)
    version = (REPO / "VERSION").read_text().strip()
    subprocess.run(["docker", "build", "-f", str(REPO / "deploy/z2jh/hub.Dockerfile"), "--build-arg", f"QUOTA_VERSION={version}",
                    "--build-arg", "EXTRAS=postgres", "-t", tag, str(context)], check=True, stdout=sys.stderr)
    return image_record(tag)


def save_image(tag: str, record: dict) -> Path:
    d = STATE / "images" / safe(tag)
    d.mkdir(parents=True, exist_ok=True)
    (d / "image.json").write_text(json.dumps(record))
    return d


def apply(docs: list[dict], namespace: str | None) -> list[str]:
    """Checks each object as `kubectl apply` would before sending it (built-in kinds against
    Kubernetes' own schema) and keeps it in the cluster directory."""
    import kubernetes_validate
    import yaml

    out = []
    for d in docs:
        if not d:
            continue
        for key in ("apiVersion", "kind", "metadata"):
            if key not in d:
                die(f"an object without {key}: {d}")
        try:
            kubernetes_validate.validate(d, "1.30", strict=True)
        except kubernetes_validate.SchemaNotFoundError:
            pass  # a custom resource (PrometheusRule): its operator checks it
        except kubernetes_validate.ValidationError as e:
            die(f"{d['kind']}/{d['metadata'].get('name')}: {e.message}")
        ns = d["metadata"].get("namespace") or namespace or "default"
        path = STATE / "cluster" / ns / f"{d['kind']}-{d['metadata']['name']}.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(d))
        out.append(f"{d['kind'].lower()}/{d['metadata']['name']} created")
    return out


def cluster(kind: str, namespace: str) -> dict[str, dict]:
    import yaml

    return {p.stem.split("-", 1)[1]: yaml.safe_load(p.read_text())
            for p in sorted((STATE / "cluster" / namespace).glob(f"{kind}-*.yaml"))}
