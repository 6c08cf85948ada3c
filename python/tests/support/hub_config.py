# The JupyterHub configuration of the integration tests with the simple local-process spawner
# (support/hub_process.py fills the environment).
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import jupyterhub_quota  # noqa: E402
from hub_base_config import base  # noqa: E402

env = os.environ
c = get_config()  # noqa: F821
state = base(c)

c.JupyterHub.spawner_class = "simple"
c.Spawner.notebook_dir = str(state)
c.Spawner.args = ["--allow-root"] if os.geteuid() == 0 else []
c.Spawner.http_timeout = int(env.get("QT_HTTP_TIMEOUT", "60"))
if not env.get("QT_JUPYTERLAB"):
    # A real jupyterhub-singleuser, without the server extensions only JupyterLab's tests need
    # (JupyterLab, its language server and terminals, the quota extension's server side): it starts
    # in about half the time. test_jupyterlab.py sets QT_JUPYTERLAB.
    light = state / "jupyter-config"
    light.mkdir(exist_ok=True)
    off = {name: False for name in ("jupyterlab", "jupyter_lsp", "jupyter_server_terminals", "notebook_shim", "jupyterlab_quota")}
    (light / "jupyter_server_config.json").write_text(json.dumps({"ServerApp": {"jpserver_extensions": off}}))
    c.Spawner.environment = {"JUPYTER_CONFIG_DIR": str(light)}
c.Spawner.start_timeout = 60

if env.get("QT_EXTRA_PRE_SPAWN"):
    # A hook the operator had already set: configure() must keep it (and run it first).
    def earlier_hook(spawner):
        (state / "earlier-hook-ran").write_text(spawner.user.name)
        if spawner.user.name.startswith("broken"):
            # This user's server cannot start: the spawn fails after the quota gate allowed it.
            spawner.cmd = [str(state / "no-such-singleuser-command")]
        if spawner.user.name.startswith("slow"):
            # This user's server starts and never answers: its spawn stays pending.
            spawner.cmd = [sys.executable, "-c", "import time; time.sleep(3600)"]

    c.Spawner.pre_spawn_hook = earlier_hook

if env.get("QT_OWN_FORM"):
    # The operator's own spawn form and parser: configure() adds the quota fields below the form,
    # and the parser still runs.
    c.Spawner.options_form = '<label for="image">Image</label> <select id="image" name="image"><option>lab</option><option>r</option></select>'

    def own_parser(form):
        return {"image": form.get("image", ["lab"])[0], "parsed_by": "the operator"}

    c.Spawner.options_from_form = own_parser

if env.get("QT_NO_UNDO"):
    # test_failure_limit.py: JupyterHub 5's own counting, without the package's undo.
    import jupyterhub_quota.hub.failures

    jupyterhub_quota.hub.failures.COUNTS_REFUSALS = False

kwargs = json.loads(env.get("QT_QUOTA_KWARGS", "{}"))
jupyterhub_quota.configure(
    c,
    values_file=env["QT_VALUES"],
    db_url=env.get("QT_DB_URL") or f"sqlite://{state / 'quota.sqlite'}",
    **kwargs,
)
