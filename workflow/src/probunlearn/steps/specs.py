"""The settings of the evaluation core's jobs, typed: one dataclass per kind of job, whose fields are
every value that enters that rule's params, and :meth:`params`, the params themselves.

A field whose value is its default and that is marked optional is left out of the params, so a new
option (a new field with a default) changes no existing job's params and reruns nothing; ``keep``
names the optional fields a workflow writes even at their default, because results made before had
them (the paper's workflow always wrote ``adaptive_threshold`` and ``pack_prompts``, evaluate always
``stops``). Snakemake compares a rule's params by their ``repr``: a dict param is written with sorted
keys (:func:`canon`), so reordering a config reruns nothing.

The command-line options of ``probunlearn evaluate``'s sampling come from :data:`SAMPLING_OPTIONS`, and
the sampler's keyword arguments from :meth:`SamplingSpec.sampler_kwargs`: a new sampling option is a
field here and its use in the sampler.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

OPTIONAL = "optional"  # a field's metadata key: left out of the params at its default


def canon(d: Mapping) -> dict:
    """A dict param with sorted keys, so reordering config.yaml reruns nothing."""
    return {k: canon(v) if isinstance(v, Mapping) else v for k, v in sorted(d.items())}


def _optional(default: Any, **meta: Any) -> Any:
    if isinstance(default, (list, dict, set)):
        return field(
            default_factory=lambda: type(default)(default), metadata={OPTIONAL: True, **meta}
        )
    return field(default=default, metadata={OPTIONAL: True, **meta})


def spec_params(spec: Any, keep: Collection[str] = ()) -> dict:
    """A spec's fields as its rule's params: optional fields at their default left out unless in
    ``keep``, tuples as lists, mappings canonical."""
    out = {}
    for f in dataclasses.fields(spec):
        value = getattr(spec, f.name)
        if f.metadata.get(OPTIONAL) and f.name not in keep and value == _default(f):
            continue
        if isinstance(value, tuple):
            value = list(value)
        out[f.name] = value
    return canon(out)


def _default(f: dataclasses.Field) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return dataclasses.MISSING


# ---- sampling -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SamplingSpec:
    """Every value that changes a shard's samples (rule ``sample_shard``)."""

    n: int
    temperature: float
    top_p: float
    max_new_tokens: int
    chunk_size: int
    batch_size: int
    base_seed: int
    template: str
    dtype: str
    device: str
    threads: int | None
    stops: tuple[str, ...] = _optional(())
    adaptive_threshold: float | None = _optional(None)
    pack_prompts: bool = _optional(False)
    sequential: Mapping | None = _optional(None)
    random_numbers: str = _optional("common")
    prompts: str | None = _optional(None)
    """The benchmark that builds each row's whole prompt from the model's chat template (RWKU), in
    the job, where the tokenizer is; None: the rows' questions in ``template``."""
    stop_tokens: tuple[str, ...] = _optional(())
    """Tokens (as the tokenizer names them) that end an answer besides eos: a benchmark's own."""

    def params(self, keep: Collection[str] = ()) -> dict:
        """The rule's params (see the module docstring)."""
        return spec_params(self, keep)

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> SamplingSpec:
        """The spec a rule's params hold (the inverse of :meth:`params`); a param that is no
        field is a ValueError naming it."""
        given = dict(params)
        unknown = sorted(set(given) - {f.name for f in dataclasses.fields(cls)})
        if unknown:
            raise ValueError(f"sampling params {unknown}: no such setting of {cls.__name__}")
        for key in ("stops", "stop_tokens"):
            if key in given:
                given[key] = tuple(given[key] or ())
        return cls(**given)

    def sampler_kwargs(self) -> dict[str, Any]:
        """The keyword arguments of :func:`probunlearn.sampling.sample_answers` (with the seed key,
        the job's own)."""
        skip = {"chunk_size", "dtype", "threads", "sequential", "random_numbers", "prompts",
                "stop_tokens"}  # fmt: skip
        out = {
            f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name not in skip
        }
        out["stops"] = tuple(self.stops)
        return out


@dataclass(frozen=True)
class Option:
    """An option of ``probunlearn evaluate``: its key in the config's ``section`` (``sampling``: a
    :class:`SamplingSpec` field), type, default, help and the values it takes (``minimum`` and
    ``maximum`` inclusive, ``above`` and ``below`` strict, or ``choices``); ``flag`` names it in
    messages (default ``--`` and the key with dashes)."""

    name: str
    type: type
    default: Any
    help: str = ""
    minimum: float | None = None
    maximum: float | None = None
    above: float | None = None
    expected: str = ""
    below: float | None = None
    choices: tuple[str, ...] = ()
    section: str = "sampling"
    flag: str = ""

    def __post_init__(self) -> None:
        if not self.flag:
            object.__setattr__(self, "flag", "--" + self.name.replace("_", "-"))

    def value(self, config: Mapping) -> Any:
        """Its value in an ``evaluate`` config (the default where the config lacks it)."""
        block = (config.get(self.section) or {}) if self.section else config
        return block.get(self.name, self.default)

    def error(self, value: Any) -> str | None:
        """What is wrong with a value of this option (None: it is fine)."""
        import math
        import numbers

        if value is None and self.default is None:
            return None
        if value in self.choices or not self.choices and self.type is str:
            return None
        if self.choices:
            return f"{self.flag} {value!r}: expected one of {', '.join(self.choices)}"
        kind = numbers.Integral if self.type is int else numbers.Real
        ok = not isinstance(value, bool) and isinstance(value, kind) and math.isfinite(value)
        ok = ok and (self.minimum is None or value >= self.minimum)
        ok = ok and (self.maximum is None or value <= self.maximum)
        ok = ok and (self.above is None or value > self.above)
        ok = ok and (self.below is None or value < self.below)
        shown = f"{value:g}" if isinstance(value, float) else str(value)
        return None if ok else f"{self.flag} {shown}: expected {self.expected}"


SAMPLING_OPTIONS = (
    Option("n", int, 128, "samples per prompt (128)", 1, expected="an integer >= 1"),
    Option(
        "top_p",
        float,
        0.9,
        "nucleus sampling (0.9)",
        maximum=1,
        above=0,
        expected="a number in (0, 1]",
    ),  # fmt: skip
    Option(
        "temperature",
        float,
        1.0,
        "sampling temperature (1.0)",
        0,
        expected="a number >= 0 (0: greedy samples)",
    ),  # fmt: skip
    Option(
        "max_new_tokens",
        int,
        None,
        "tokens per answer (64; MUSE's 32 for knowmem, 128 for verbmem)",
        1,
        expected="an integer >= 1",
    ),  # fmt: skip
    Option(
        "template",
        str,
        "auto",
        "prompt template with {question}; 'chat' = the "
        "model's chat template; 'auto' (default) = chat where the tokenizer has one, "
        "else 'Question: {question}\\nAnswer:'",
    ),  # fmt: skip
    Option(
        "chunk_size", int, 16, "prompts per sampling job (16)", 1, expected="an integer >= 1"
    ),  # fmt: skip
    Option(
        "batch_size", int, 256, "rows per forward pass (256)", 1, expected="an integer >= 1"
    ),  # fmt: skip
)
"""The options of evaluate's sampling group, in the order evaluate.yaml holds them."""


# ---- scoring and bounds -------------------------------------------------------------------------------


@dataclass(frozen=True)
class ScoringSpec:
    """Every value that changes a (model, eval set, setting)'s scores and bounds (rule ``score``):
    the recipe written into its metric rows, the judge of requests, the scorers a benchmark names,
    the bounds' settings and a sequential setting's block."""

    method: str
    split: str
    judge: Mapping | None
    harm_threshold: float | None
    bounds: Mapping[str, Any]
    scorers: Sequence[str] | None = _optional(None)
    sequential: Mapping | None = _optional(None)
    judge_model: str | None = _optional(None)
    judge_identity: str | None = None

    def params(self, keep: Collection[str] = ()) -> dict:
        """The rule's params: the fields with the bounds' settings at the top level; the judge
        classifier's identity (it only decides reruns) where its path is a param and a judge is
        given."""
        out = spec_params(dataclasses.replace(self, judge_identity=None), keep)
        out.pop("judge_identity")
        out.update(out.pop("bounds"))
        if "judge_model" in out and self.judge is not None:
            out["judge_identity"] = self.judge_identity
        return canon(out)


# ---- teacher forcing, TOFU's metrics, DCUE ----------------------------------------------------------


@dataclass(frozen=True)
class TeacherForcingSpec:
    """Rule ``greedy_logprobs``: greedy answers, TOFU's own greedy answers and per-token
    log-probabilities of one model (its sets, TOFU's encoding, lengths and the job's device)."""

    method: str
    split: str
    greedy_sets: Sequence[str]
    tofu_sets: Sequence[str]
    tofu: Mapping[str, Any]
    template: str
    max_new_tokens: int
    batch_size: int
    dtype: str
    device: str
    threads: int | None

    def params(self) -> dict:
        return spec_params(self)


@dataclass(frozen=True)
class DcueSpec:
    """Rule ``dcue``: the recipe and, in the paper's workflow, how core spans are found."""

    method: str
    split: str
    core_model: str | None = _optional(None)
    core_model_revision: str | None = _optional(None)
    core_prompts: Mapping[str, str] | None = _optional(None)

    def params(self, keep: Collection[str] = ()) -> dict:
        return spec_params(self, keep)
