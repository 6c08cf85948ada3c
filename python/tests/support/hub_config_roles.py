# The test hub (hub_config.py) with the roles a university hands out: course staff of group g
# (custom:quota:manage!group=g, tina, herself a member of g), course staff of a group named like a
# scope (g<U+00A0>quota:admin: mona, of nia), an instructor who manages servers (admin:users, no
# quota scope), a quota-admin service, and the groups g (ann, tina) and h (cat). For the names
# issue 58 found (test_authorization.py): cs101 (stu; ted x, a name the engine cannot take) and its
# staff tm; a Keycloak-style path /course/101 (pia) and its staff pat; a group the engine cannot
# take (bell<BEL>, ann); and the generated names of support/names_gen.py, group i (pm<i>) with
# its staff ps<i>, a staff allowance of 40 credits per change each.
import sys
from pathlib import Path

load_subconfig(str(Path(__file__).resolve().parent / "hub_config.py"))  # noqa: F821
sys.path.insert(0, str(Path(__file__).resolve().parent))
from names_gen import generated  # noqa: E402

c = get_config()  # noqa: F821
NBSP_GROUP = "g\u00a0quota:admin"
names = generated()
c.JupyterHub.load_groups = {
    "g": {"users": ["ann", "tina"]}, "h": {"users": ["cat"]}, NBSP_GROUP: {"users": ["nia"]},
    "cs101": {"users": ["stu", "ted x", "tm"]}, "/course/101": {"users": ["pia"]}, "bell\x07": {"users": ["ann"]},
    **{g: {"users": [f"pm{i}"]} for i, g in enumerate(names)},
}
c.JupyterHub.services = [*c.JupyterHub.services, {"name": "quota-admin", "api_token": c.JupyterHub.services[0]["api_token"][::-1]}]
c.JupyterHub.load_roles = [
    *c.JupyterHub.load_roles,
    {"name": "course-staff-g", "scopes": ["custom:quota:manage!group=g"], "users": ["tina"]},
    {"name": "course-staff-nbsp", "scopes": [f"custom:quota:manage!group={NBSP_GROUP}"], "users": ["mona"]},
    {"name": "course-staff-cs101", "scopes": ["custom:quota:manage!group=cs101"], "users": ["tm"]},
    {"name": "course-staff-path", "scopes": ["custom:quota:manage!group=/course/101"], "users": ["pat"]},
    *({"name": f"prop-{i}", "scopes": [f"custom:quota:manage!group={g}"], "users": [f"ps{i}"]} for i, g in enumerate(names)),
    {"name": "instructor", "scopes": ["admin:users", "admin-ui"], "users": ["olga"]},
    {"name": "quota-admins", "scopes": ["custom:quota:admin"], "services": ["quota-admin"]},
]
