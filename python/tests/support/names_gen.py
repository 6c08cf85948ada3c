"""Generated group names for the names-are-data property test inside the hub (test_authorization.py;
hub/tests/integration/rights.rs is quota-hub's): from tests/authorization/name-pools.json, name `i` holds the
`i`th Unicode space, invisible character and separator (so every one is used), letters around
them and more of each at random (a seeded generator: the same names in the hub's configuration
and in the test); some begin or end with a space, some are Keycloak-style paths."""

from __future__ import annotations

import json
import random
from pathlib import Path

POOLS = Path(__file__).resolve().parents[3] / "tests" / "authorization" / "name-pools.json"


def generated() -> list[str]:
    pools = json.loads(POOLS.read_text())
    spaces, invisible, seps, letters = (pools[k] for k in ("spaces", "invisible", "separators", "letters"))
    rng = random.Random(58)
    out = []
    for i in range(max(len(spaces), len(invisible), len(seps))):
        name = "/" if i % 5 == 0 else ""
        if i % 7 == 3:
            name += spaces[i % len(spaces)]
        name += rng.choice(letters) + spaces[i % len(spaces)] + seps[i % len(seps)] + invisible[i % len(invisible)]
        for _ in range(rng.randrange(6)):
            name += rng.choice(rng.choice([letters, spaces, seps, invisible]))
        name += str(i) + ("/101" if i % 5 == 0 else "")
        if i % 7 == 4:
            name += spaces[(i + 1) % len(spaces)]
        out.append(name)
    return out
