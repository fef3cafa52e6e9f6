"""TOFU's published eval logs of its retain-only models: the reference of forget quality that TOFU's
leaderboard uses, instead of training the reference models (config ``tofu_eval.published_retain_logs``).
"""

from __future__ import annotations

import os
from pathlib import Path

from probunlearn.data.downloads import fetch_url
from probunlearn.data.evalsets import RETAIN_OF

# TOFU's published eval logs of its retain-only models (github.com/locuslab/tofu, data/, "ds_size300"):
# the reference of forget quality that TOFU's leaderboard uses, instead of training the reference models.
# {(model family, forget split): (fine-tuning learning rate in the folder name, sha256 at the commit)}
TOFU_LOGS_COMMIT = "bdc209ea7c6cc2e7079ea1afb6468d3ddcc65f8e"
TOFU_EVAL_LOGS: dict[tuple[str, str], tuple[str, str]] = {
    ("phi", "forget10"): (
        "2e-05",
        "a9fe48362732e84baf9f7aec00fb5b18a55cf597d0777451a99eb93144eeb989",
    ),
    ("phi", "forget05"): (
        "2e-05",
        "a83cea7d929e5e4dc7267d1151794e24ab829da803ab367a09058ddd0250560c",
    ),
    ("phi", "forget01"): (
        "2e-05",
        "a637878deb1d19d69975a008269a8d3b7b962d15e0b27d4c6d6d5239e0037a6d",
    ),
    ("llama2-7b", "forget10"): (
        "1e-05",
        "67ff907bb852c8c79c15e2c18455149a695c8b150ef9876d3f3b77a0195cfcd2",
    ),
    ("llama2-7b", "forget05"): (
        "1e-05",
        "c6300fa15004f2b560af7fab897ce7d669b5d7c11d48219002dbafeee6826e05",
    ),
    ("llama2-7b", "forget01"): (
        "1e-05",
        "a9ad8388927f33f7063fe68194b8e9521a5ee08edc9e3e7077e4d75c6c70a81c",
    ),
}


def tofu_eval_log_url(family: str, split: str) -> str:
    """The pinned URL of ``eval_log_forget.json`` of TOFU's retain-only ``family`` model for ``split``
    (e.g. phi, forget10: ``data/ft_epoch5_lr2e-05_phi_retain90_wd0.01/eval_results/ds_size300/``)."""
    if (family, split) not in TOFU_EVAL_LOGS:
        raise ValueError(
            f"no published TOFU eval log for ({family!r}, {split!r}); known: {sorted(TOFU_EVAL_LOGS)}"
        )
    lr = TOFU_EVAL_LOGS[(family, split)][0]
    folder = f"ft_epoch5_lr{lr}_{family}_{RETAIN_OF[split]}_wd0.01"
    return (
        f"https://raw.githubusercontent.com/locuslab/tofu/{TOFU_LOGS_COMMIT}/data/{folder}/"
        "eval_results/ds_size300/eval_log_forget.json"
    )


def fetch_tofu_eval_log(family: str, split: str, dest: str | os.PathLike) -> Path:
    """Download TOFU's published forget-set eval log of its retain-only model (see
    :func:`tofu_eval_log_url`) to ``dest``, verified by its sha256; kept when already there. Offline,
    :class:`OfflineError` says where to put the file by hand."""
    return fetch_url(
        tofu_eval_log_url(family, split), dest, sha256=TOFU_EVAL_LOGS[(family, split)][1]
    )
