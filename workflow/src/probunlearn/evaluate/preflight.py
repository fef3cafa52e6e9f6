"""What ``probunlearn evaluate`` checks of the checkpoints and the jobs' size before any job runs.

For every local checkpoint (a model, an adapter and its base): whole weight files, a tokenizer that
loads, and every prompt of the sampled set plus ``--max-new-tokens`` within the context. A passed
check is kept in ``<out>/.probunlearn/checks.json`` under a key of the checkpoint's identity (and,
for prompts, the data, template and lengths), so an unchanged call checks nothing again.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from pathlib import Path

from probunlearn.models.files import TOKENIZER_FILES, context_length
from probunlearn.sampling.memory import ROW_BYTES, TOKEN_BYTES, available_bytes, sampling_bytes
from probunlearn.storage import checkpoints
from probunlearn.storage.atomic import write_text

CHECKS = ".probunlearn/checks.json"  # relative to --out


class CheckCache:
    """The checks that passed, by key; read now, written by :meth:`save` once the call may write."""

    def __init__(self, path: str | os.PathLike | None):
        self.path = None if path is None else Path(path)
        self.passed: set[str] = set()
        if self.path is not None and self.path.is_file():
            try:
                self.passed = set(json.loads(self.path.read_text()))
            except (OSError, ValueError, TypeError):
                self.passed = set()
        self.dirty = False

    @staticmethod
    def key(*parts: object) -> str:
        text = json.dumps(parts, sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()[:32]

    def add(self, key: str) -> None:
        if key not in self.passed:
            self.passed.add(key)
            self.dirty = True

    def save(self) -> None:
        if self.dirty and self.path is not None:
            write_text(json.dumps(sorted(self.passed)) + "\n", self.path)
            self.dirty = False


# ---- checkpoints --------------------------------------------------------------------------------


def model_dir(source: str, base: str | None) -> Path | None:
    """The local directory of a model's config and tokenizer (an adapter's base where the adapter
    has none), or None for a hub model."""
    path = Path(source)
    if not path.is_dir():
        return None
    if checkpoints.is_adapter(path):
        if not any((path / f).is_file() for f in TOKENIZER_FILES):
            return Path(base) if base and Path(base).is_dir() else None
    return path


def check_tokenizer(name: str, source: str, revision: str | None, base: str | None):
    """The model's tokenizer, loaded; an error naming the model and its directory otherwise."""
    from probunlearn import models
    from probunlearn.evaluate.plan import PlanError

    d = model_dir(source, base)
    label = f"model {name!r} ({d if d is not None else source})"
    if d is not None and not any((d / f).is_file() for f in TOKENIZER_FILES):
        raise PlanError(
            f"{label}: no tokenizer files ({', '.join(TOKENIZER_FILES)}); save the "
            "tokenizer the model was trained with into its directory"
        )
    try:
        return models.load_tokenizer(source, revision=revision, base=base)
    except Exception as e:  # noqa: BLE001 - any loader error, named with its model
        raise PlanError(f"{label}: its tokenizer does not load ({type(e).__name__}: {e})") from e


def check_prompts(
    name: str, tokenizer, template: str, prompts: list[tuple[str, str]], context: int, new: int
) -> None:
    """Every prompt's tokens plus ``new`` within ``context``; else the longest one, named."""
    from probunlearn.data.qa import prompts_over
    from probunlearn.evaluate.plan import PlanError

    over, longest, pid = prompts_over(tokenizer, template, prompts, context - new)
    if over:
        raise PlanError(
            f"model {name!r}: {over} prompt(s) do not fit its context of {context} positions "
            f"with --max-new-tokens {new}: the longest, {pid!r}, has {longest} tokens; shorten "
            f"the questions, lower --max-new-tokens to {max(context - longest, 0)} or less, or "
            "use a model with a longer context"
        )


def check_checkpoints(plan, cache: CheckCache) -> None:
    """Check every local checkpoint of ``plan`` (a PlanError), skipping what passed before."""
    from probunlearn.data.rows import prompt_column
    from probunlearn.evaluate.plan import PlanError

    rows = plan.sets[plan.sampled_set]
    ids, texts = rows["id"].cast(str).to_list(), rows[prompt_column(rows)].to_list()
    prompts = list(zip(ids, texts, strict=True))
    new = plan.max_new_tokens
    for name, m in plan.models.items():
        source, base = str(m["source"]), plan.base_of(name)
        ident = plan.identity(name)
        for label, path in ((name, source), (f"{name} (base)", base)):
            if path is None or not Path(path).is_dir():
                continue
            key = cache.key("weights", ident, path)
            if key in cache.passed:
                continue
            try:
                checkpoints.check_weights(label, path)
            except checkpoints.CheckpointError as e:
                raise PlanError(str(e)) from e
            cache.add(key)
        d = model_dir(source, base)
        if d is None:
            continue  # a hub model: checked where its jobs load it
        template = plan.template
        key = cache.key("prompts", ident, plan.data_identity(), template, new)
        if key in cache.passed:
            continue
        tokenizer = check_tokenizer(name, source, m.get("revision"), base)
        context = context_length(d)
        if context is not None:
            check_prompts(name, tokenizer, template, prompts, context, new)
        cache.add(key)


# ---- memory ---------------------------------------------------------------------------------------


def profile_mem_mb(profile: str, rule: str = "sample_shard") -> tuple[int, str] | None:
    """The memory (MB) a profile gives a rule's last attempt (its ``set-resources``), with how it
    was found; None where the profile sets none for it (the rule's own resources apply)."""
    import yaml

    path = Path(profile) / "config.yaml"
    if not path.is_file():
        return None
    try:
        cfg = yaml.safe_load(path.read_text()) or {}
    except (OSError, yaml.YAMLError):
        return None
    attempts = 1 + int(cfg.get("retries", 0) or 0)
    value = ((cfg.get("set-resources") or {}).get(rule) or {}).get("mem_mb")
    if value is None:
        return None
    try:
        mb = int(eval(str(value), {"__builtins__": {}}, {"attempt": attempts}))  # noqa: S307
    except Exception:  # noqa: BLE001 - an expression snakemake would reject too
        return None
    return mb, f"{path}'s set-resources for {rule}, attempt {attempts}"


def check_memory(plan, profile: str | None) -> None:
    """Refuse a sampling job that cannot fit: its answers alone (:func:`sampling_bytes`) above this
    machine's available memory, or with ``profile`` above the job's memory at its last attempt."""
    from probunlearn.dag.resources import gpu_mem_mb
    from probunlearn.evaluate.plan import PlanError

    sp = plan.ev["sampling"]
    n, chunk, new = int(sp["n"]), int(sp["chunk_size"]), plan.max_new_tokens
    need = sampling_bytes(n, min(chunk, plan.sets[plan.sampled_set].height), new)
    if profile is None:
        have, where = available_bytes(), "this machine's available memory"
    else:
        given = profile_mem_mb(profile)
        if given is None:
            given = (gpu_mem_mb(None, 1), "the sampling rule's memory at its first attempt")
        have, where = given[0] * 2**20, given[1]
    if have is None or need <= have:
        return
    rows = min(chunk, plan.sets[plan.sampled_set].height)
    fit = max(int(have / (rows * (ROW_BYTES + TOKEN_BYTES * new))) - 1, 0)
    raise PlanError(
        f"--n {n}: a sampling job holds {rows} prompt(s) x {n + 1} answers of up to {new} tokens, "
        f"about {_gb(need)} in memory, more than {where} ({_gb(have)}); lower --n (at most about "
        f"{fit} here) or --chunk-size"
    )


def _gb(b: float) -> str:
    if b >= 100 * 2**30:
        return f"{b / 2**30:,.0f} GB"
    return f"{b / 2**30:.3g} GB" if b >= 2**30 else f"{math.ceil(b / 2**20)} MB"


def preflight(plan, cache: CheckCache, profile: str | None = None) -> None:
    """Every check of this module."""
    check_memory(plan, profile)
    check_checkpoints(plan, cache)
