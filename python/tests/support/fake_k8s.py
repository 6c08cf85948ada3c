"""A small Kubernetes API server for the KubeSpawner tests, on 127.0.0.1 (aiohttp, a dependency of
kubernetes_asyncio): the pod and event routes KubeSpawner 7 uses (list, watch, create, read,
delete), with resource versions and label selectors, and a kubelet in miniature that runs each
pod's container (its `args`, its `env`) as a local process and reports the pod Running, then
Succeeded/Failed when the process ends. Every Pod object it is sent is kept as sent, for the test
to read at `GET /_test/created`.

    python fake_k8s.py PORT_FILE WORKDIR

writes the port it listens on to PORT_FILE when it is ready."""

from __future__ import annotations

import asyncio
import copy
import json
import os
import signal
import socket
import sys
import uuid
from datetime import datetime, timezone
from pathlib import Path

from aiohttp import web

#: A watch with no timeout asked for ends after this long (the client reconnects).
WATCH_DEFAULT_S = 30


def now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def matches(labels: dict, selector: str) -> bool:
    """Equality-based selectors (`a=b,c!=d`, `a`), the kind KubeSpawner sends."""
    for part in filter(None, (selector or "").split(",")):
        if "!=" in part:
            k, v = part.split("!=", 1)
            if labels.get(k.strip()) == v.strip():
                return False
        elif "=" in part:
            k, v = part.split("=", 1)
            if labels.get(k.strip().rstrip("=")) != v.strip().lstrip("="):
                return False
        elif part.strip() not in labels:
            return False
    return True


def field_matches(obj: dict, selector: str) -> bool:
    for part in filter(None, (selector or "").split(",")):
        k, _, v = part.partition("=")
        value = obj
        for key in k.strip().split("."):
            value = value.get(key) if isinstance(value, dict) else None
        if str(value) != v.strip():
            return False
    return True


class Cluster:
    def __init__(self, workdir: Path):
        self.workdir = workdir
        self.version = 0
        self.objects: dict[tuple[str, str, str], dict] = {}  # (kind, namespace, name) -> object
        self.log: list[tuple[int, str, str, dict]] = []  # (version, type, kind, object)
        self.changed = asyncio.Condition()
        self.created: list[dict] = []
        self.processes: dict[tuple[str, str], asyncio.subprocess.Process] = {}

    async def emit(self, kind: str, event: str, obj: dict) -> None:
        async with self.changed:
            self.version += 1
            obj["metadata"]["resourceVersion"] = str(self.version)
            self.log.append((self.version, event, kind, copy.deepcopy(obj)))
            self.changed.notify_all()

    # Pods and the kubelet

    async def create_pod(self, namespace: str, body: dict) -> dict:
        self.created.append(copy.deepcopy(body))
        pod = copy.deepcopy(body)
        meta = pod.setdefault("metadata", {})
        meta.update(namespace=namespace, uid=str(uuid.uuid4()), creationTimestamp=now())
        pod["status"] = {"phase": "Pending", "podIP": None, "containerStatuses": []}
        self.objects[("pods", namespace, meta["name"])] = pod
        await self.emit("pods", "ADDED", pod)
        asyncio.ensure_future(self.run(namespace, meta["name"]))
        return pod

    async def run(self, namespace: str, name: str) -> None:
        pod = self.objects.get(("pods", namespace, name))
        if pod is None:
            return
        container = pod["spec"]["containers"][0]
        argv = list(container.get("command") or []) + list(container.get("args") or [])
        env = {e["name"]: e.get("value") or "" for e in container.get("env") or []}
        home = self.workdir / f"{namespace}-{name}"
        home.mkdir(parents=True, exist_ok=True)
        # The image's PATH: the test's virtualenv, where jupyterhub-singleuser is.
        env.update(PATH=os.environ.get("PATH", ""), HOME=str(home))
        out = open(home / "container.log", "ab")
        try:
            proc = await asyncio.create_subprocess_exec(*argv, env=env, cwd=home, stdout=out, stderr=out, start_new_session=True)
        except OSError as e:
            out.write(f"cannot start {argv}: {e}\n".encode())
            pod["status"] = {"phase": "Failed", "podIP": "127.0.0.1", "containerStatuses": [
                {"name": container["name"], "ready": False, "state": {"terminated": {"exitCode": 127, "reason": "StartError"}}}]}
            await self.emit("pods", "MODIFIED", pod)
            return
        self.processes[(namespace, name)] = proc
        pod["status"] = {"phase": "Running", "podIP": "127.0.0.1", "startTime": now(), "containerStatuses": [
            {"name": container["name"], "ready": True, "state": {"running": {"startedAt": now()}}}]}
        await self.emit("pods", "MODIFIED", pod)
        code = await proc.wait()
        out.close()
        if self.objects.get(("pods", namespace, name)) is pod:
            pod["status"] = {"phase": "Succeeded" if code == 0 else "Failed", "podIP": "127.0.0.1", "containerStatuses": [
                {"name": container["name"], "ready": False, "state": {"terminated": {"exitCode": code}}}]}
            await self.emit("pods", "MODIFIED", pod)

    async def delete_pod(self, namespace: str, name: str) -> dict | None:
        pod = self.objects.pop(("pods", namespace, name), None)
        if pod is None:
            return None
        proc = self.processes.pop((namespace, name), None)
        if proc is not None and proc.returncode is None:
            try:
                os.killpg(proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                await asyncio.wait_for(proc.wait(), 10)
            except asyncio.TimeoutError:
                os.killpg(proc.pid, signal.SIGKILL)
                await proc.wait()
        await self.emit("pods", "DELETED", pod)
        return pod

    def stop_all(self) -> None:
        for proc in self.processes.values():
            if proc.returncode is None:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass


def status(code: int, reason: str, message: str) -> web.Response:
    return web.json_response(
        {"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": message, "reason": reason, "code": code},
        status=code,
    )


def routes(cluster: Cluster) -> web.RouteTableDef:
    r = web.RouteTableDef()

    async def list_or_watch(request: web.Request, kind: str) -> web.StreamResponse:
        ns = request.match_info.get("namespace")
        labels, fields = request.query.get("labelSelector", ""), request.query.get("fieldSelector", "")

        def wanted(k: str, obj: dict) -> bool:
            meta = obj["metadata"]
            return (k == kind and (ns is None or meta.get("namespace") == ns)
                    and matches(meta.get("labels") or {}, labels) and field_matches(obj, fields))

        if request.query.get("watch", "").lower() not in ("true", "1"):
            items = [o for (k, _, _), o in cluster.objects.items() if wanted(k, o)]
            return web.json_response({"kind": "List", "apiVersion": "v1", "metadata": {"resourceVersion": str(cluster.version)}, "items": items})
        since = int(request.query.get("resourceVersion") or 0)
        timeout = float(request.query.get("timeoutSeconds") or WATCH_DEFAULT_S)
        resp = web.StreamResponse()
        resp.content_type = "application/json"
        await resp.prepare(request)
        loop = asyncio.get_running_loop()
        end = loop.time() + timeout
        while True:
            for version, event, k, obj in list(cluster.log):
                if version > since and wanted(k, obj):
                    await resp.write((json.dumps({"type": event, "object": obj}) + "\n").encode())
                since = max(since, version)
            left = end - loop.time()
            if left <= 0:
                break
            async with cluster.changed:
                try:
                    await asyncio.wait_for(cluster.changed.wait_for(lambda: cluster.version > since), left)
                except asyncio.TimeoutError:
                    break
        await resp.write_eof()
        return resp

    def lister(kind: str):
        async def handle(request: web.Request) -> web.StreamResponse:
            return await list_or_watch(request, kind)

        return handle

    for kind in ("pods", "events"):
        r.get(f"/api/v1/namespaces/{{namespace}}/{kind}")(lister(kind))
        r.get(f"/api/v1/{kind}")(lister(kind))  # all namespaces (user namespaces on)

    @r.post("/api/v1/namespaces/{namespace}/pods")
    async def create(request: web.Request) -> web.Response:
        body = await request.json()
        ns = request.match_info["namespace"]
        name = (body.get("metadata") or {}).get("name")
        if not name:
            return status(422, "Invalid", "metadata.name is required")
        if ("pods", ns, name) in cluster.objects:
            return status(409, "AlreadyExists", f'pods "{name}" already exists')
        return web.json_response(await cluster.create_pod(ns, body), status=201)

    @r.get("/api/v1/namespaces/{namespace}/pods/{name}")
    async def read(request: web.Request) -> web.Response:
        pod = cluster.objects.get(("pods", request.match_info["namespace"], request.match_info["name"]))
        if pod is None:
            return status(404, "NotFound", f'pods "{request.match_info["name"]}" not found')
        return web.json_response(pod)

    @r.delete("/api/v1/namespaces/{namespace}/pods/{name}")
    async def delete(request: web.Request) -> web.Response:
        pod = await cluster.delete_pod(request.match_info["namespace"], request.match_info["name"])
        if pod is None:
            return status(404, "NotFound", f'pods "{request.match_info["name"]}" not found')
        return web.json_response(pod)

    @r.get("/_test/created")
    async def created(_request: web.Request) -> web.Response:
        return web.json_response(cluster.created)

    return r


async def main(port_file: Path, workdir: Path) -> None:
    cluster = Cluster(workdir)
    app = web.Application()
    app.add_routes(routes(cluster))
    runner = web.AppRunner(app)
    await runner.setup()
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    site = web.SockSite(runner, sock)
    await site.start()
    port_file.write_text(str(sock.getsockname()[1]))
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        asyncio.get_running_loop().add_signal_handler(sig, stop.set)
    await stop.wait()
    cluster.stop_all()
    await runner.cleanup()


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1]), Path(sys.argv[2])))
