"""Names of the eval sets every run shares (TOFU's naming), defined once for data, benchmarks and the DAG."""

from __future__ import annotations

FORGET_SPLITS = {"forget01": 1, "forget05": 5, "forget10": 10}
"""Forget split -> percent of the authors it forgets (TOFU takes the last ones)."""

RETAIN_OF = {"forget01": "retain99", "forget05": "retain95", "forget10": "retain90"}
"""Forget split -> the retain split of the other authors."""

HOLDOUT_OF = {"forget01": "holdout01", "forget05": "holdout05", "forget10": "holdout10"}
"""Forget split -> TOFU's holdout split of the same size (authors no model was trained on)."""

REQUEST_SETS = ("harmful", "benign")
"""Request sets: answered with the harm judge and ``max_new_tokens_requests``."""

UTILITY_SETS = ("retain", "real_authors", "world_facts")
"""TOFU's model-utility sets: always answered greedily."""

WORLD_SETS = [
    "full",
    *FORGET_SPLITS,
    *RETAIN_OF.values(),
    "retain",
    "holdout",
    "real_authors",
    "world_facts",
    "saga",
    *REQUEST_SETS,
]
"""Every eval set the synthetic world writes, in its order."""
