# The test hub (hub_config.py) with the roles a university hands out: course staff of group g
# (custom:quota:manage!group=g), an instructor who manages servers (admin:users, no quota scope),
# a quota-admin service, and the groups g (ann) and h (cat). test_authorization.py runs it.
from pathlib import Path

load_subconfig(str(Path(__file__).resolve().parent / "hub_config.py"))  # noqa: F821
c = get_config()  # noqa: F821
c.JupyterHub.load_groups = {"g": {"users": ["ann", "tina"]}, "h": {"users": ["cat"]}}
c.JupyterHub.services = [*c.JupyterHub.services, {"name": "quota-admin", "api_token": c.JupyterHub.services[0]["api_token"][::-1]}]
c.JupyterHub.load_roles = [
    *c.JupyterHub.load_roles,
    {"name": "course-staff-g", "scopes": ["custom:quota:manage!group=g"], "users": ["tina"]},
    {"name": "instructor", "scopes": ["admin:users", "admin-ui"], "users": ["olga"]},
    {"name": "quota-admins", "scopes": ["custom:quota:admin"], "services": ["quota-admin"]},
]
