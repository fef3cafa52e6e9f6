"""What an evaluation ran with: the resolved prompt template of each model, the package versions,
and :func:`effective_config`, what ``<out>/config.yaml`` holds (the configuration that ran, not the
request, ``evaluate.yaml``)."""

from __future__ import annotations

import importlib.metadata
import platform
from collections.abc import Mapping
from typing import Any

from probunlearn.models.device import resolve_device
from probunlearn.models.files import AUTO, CHAT, DEFAULT_TEMPLATE, has_chat_template

VERSIONED = ("probunlearn", "torch", "transformers", "peft", "tokenizers", "snakemake", "polars",
             "numpy")  # fmt: skip


def versions() -> dict[str, str | None]:
    """Python's and the installed distributions' versions (None: not installed)."""
    out: dict[str, str | None] = {"python": platform.python_version()}
    for name in VERSIONED:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = None
    return out


def resolved_template(
    template: str, source: str, revision: str | None = None, base: str | None = None
) -> str:
    """The prompt template a model's jobs use: ``template`` itself, or for ``auto`` / ``chat`` the
    default template or the model's rendered chat template (:func:`probunlearn.data.qa.resolve_template`;
    the tokenizer is loaded only where it has a chat template)."""
    if template not in (AUTO, CHAT):
        return template
    chat = has_chat_template(source, base)
    if chat is False and template == AUTO:
        return DEFAULT_TEMPLATE
    from probunlearn import models
    from probunlearn.data import qa

    try:
        tokenizer = models.load_tokenizer(source, revision=revision, base=base)
        return qa.resolve_template(tokenizer, template)
    except Exception as e:  # a hub tokenizer not in the cache: say so, do not fail the summary
        return f"{template} (not resolved here: {type(e).__name__}: {e})"


def effective_config(
    config: Mapping[str, Any],
    *,
    models: Mapping[str, Mapping[str, Any]],
    evalset: str,
    template: str,
    max_new_tokens: int,
    stops: list[str],
    scorers: list[str],
    tofu: Mapping[str, Any] | None,
) -> dict[str, Any]:
    """The configuration that ran (``<out>/config.yaml``): the resolved template of every model,
    the device, dtype and lengths, the scorers computed, the versions; ``config`` is the request."""
    ev = config["evaluate"]
    device = ev.get("device", "auto")
    remote = ev.get("profile") is not None
    resolved = (
        "auto: cuda where the job's node has one, else cpu (jobs ran through a profile)"
        if remote and device == "auto"
        else resolve_device(device)
    )
    sampling = {k: v for k, v in ev["sampling"].items() if k != "template"}
    sampling.update(max_new_tokens=max_new_tokens, stops=list(stops))
    return {
        "evaluate": {
            "evalset": evalset,
            "data": dict(ev["data"]),
            "models": {n: dict(m) for n, m in models.items()},
            "template": {
                "requested": ev["sampling"]["template"],
                "resolved": {
                    n: resolved_template(template, m["source"], m.get("revision"), m.get("base"))
                    for n, m in models.items()
                },
            },
            "sampling": sampling,
            "bounds": dict(ev["bounds"]),
            "scorers": list(scorers),
            "tofu": None if tofu is None else dict(tofu),
            "device": {"requested": device, "resolved": resolved},
            "dtype": ev.get("dtype", "float32"),
            "threads": ev.get("threads"),
        },
        "versions": versions(),
    }
