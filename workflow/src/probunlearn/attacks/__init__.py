"""Attacks on an unlearned model, one module per kind, found through :data:`ATTACKS`.

An attack is an :class:`Attack`: its kind (``quant``, ``relearn``, ``paraphrase``, ``prefix``,
``fewshot``, ``null``), label, settings (defaults and JSON-schema types, as an unlearning
method's), what it transforms (the model, or the eval set's prompts), what it needs
(:meth:`Attack.needs`: a forget or retain set, the eval set) and the function that applies it
(:meth:`Attack.apply`). An attack is named by a spec string, ``kind`` or ``kind:value`` (the
kind's positional setting, ``quant:nf4``) or ``kind:key=value,...``
(``relearn:steps=20,lr=1e-5,examples=8,source=forget``), parsed by :func:`parse_spec`.
:func:`check_attack` says, from the spec and the model's metadata (:class:`Target`) alone, whether
the model can take the attack (a ValueError naming both if not) and what it will note (a LoRA
adapter is quantized merged); it runs before any job.

A model attack returns the attacked model; a prompt attack returns a :class:`Family` of prompts per
question (eval rows the sampler takes), bounded on its worst member by
:func:`probunlearn.bounds.family_upper_bounds`. The ``null`` attack's family is ``m`` copies of the
original prompt: a prompt attack of ``m`` members is compared with it, bounded the same way. A
controlled attack (relearning, :attr:`Attack.controlled`) also runs on a model that never saw the
forget set. What relearning and few-shot contexts keep apart from the questions they are judged
on is a row's subject (:func:`subjects_of`). A new attack is one module of this package that ends
with ``ATTACKS.register(MyAttack())``, or an entry point of the group ``probunlearn.attacks``.
Torch-free: torch is imported where an attack is applied.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import polars as pl

from probunlearn.data.rows import FAMILY_COLUMNS, prompt_column
from probunlearn.registry import Registry, Setting, resolve_settings

__all__ = [
    "ATTACKS",
    "EXCLUDE",
    "Attack",
    "FAMILY_COLUMNS",
    "Family",
    "Inputs",
    "Result",
    "Setting",
    "Spec",
    "Target",
    "apply_attack",
    "attack",
    "check_attack",
    "member_of",
    "parse_spec",
    "prompt_column",
    "subjects_of",
]

#: The data sets an attack may need besides the model: the eval set it attacks, and the splits.
DATA = ("evalset", "forget", "retain", "holdout")
#: Separator of a family member's prompt id: ``<row id>::<member>``.
MEMBER_SEP = "::"


@dataclass(frozen=True)
class Target:
    """What the pre-job checks know of the attacked model: its ``name`` (in messages), the prompt
    ``template`` it is evaluated with (None: the default ``"Question: {question}\\nAnswer:"``;
    ``"chat"``, ``"auto"`` or a ``str.format`` template), whether its tokenizer has a chat template,
    whether it is a LoRA/PEFT ``adapter``, and which data sets are given with it (``forget``,
    ``retain``, ``holdout``)."""

    name: str
    template: str | None = None
    chat_template: bool = False
    adapter: bool = False
    forget: bool = False
    retain: bool = False
    holdout: bool = False

    @property
    def chat(self) -> bool:
        """Whether its prompts are rendered by the tokenizer's chat template."""
        return self.template == "chat" or (self.template == "auto" and self.chat_template)

    def plain_template(self) -> str | None:
        """The ``str.format`` template of its prompts, or None for a chat template (which needs
        the tokenizer to render)."""
        if self.chat:
            return None
        if self.template in (None, "auto"):
            from probunlearn.data.qa import DEFAULT_TEMPLATE

            return DEFAULT_TEMPLATE
        return self.template

    def has(self, data: str) -> bool:
        """Whether the data set ``data`` (forget, retain, holdout) is given with the model."""
        return bool(getattr(self, data))


@dataclass(frozen=True)
class Spec:
    """A parsed attack spec: the ``kind``, every setting (defaults filled in) and the ``text`` it
    was parsed from."""

    kind: str
    settings: Mapping[str, Any]
    text: str

    @property
    def canonical(self) -> str:
        """``kind``, then the positional setting's value (always), then the other settings that
        differ from their defaults as ``key=value``, in declared order (``quant:nf4``,
        ``relearn:50,lr=0.0001``, ``paraphrase``): the same attack always gets the same string."""
        entry = ATTACKS.get(self.kind)
        pos = entry.positional
        given = [_show(self.settings[pos])] if pos is not None else []
        given += [
            f"{k}={_show(v)}"
            for k, v in self.settings.items()
            if k != pos and v != entry.settings[k].default
        ]
        return self.kind + (":" + ",".join(given) if given else "")


@dataclass(frozen=True)
class Family:
    """The prompts a prompt attack makes, one family per attacked question.

    ``rows``: one row per (question, member) in the shared row format of the eval set (its
    columns kept: the scorers read the row's own question, answer and keywords), with ``id`` =
    ``<base_id>::<member>``, ``base_id`` (the question's own id), ``member`` (the member's name;
    ``"original"`` is the unattacked prompt) and ``prompt`` (what the sampler is given as the
    question, with :attr:`template`). ``members``: the member names, in order; ``original``: whether
    the unattacked prompt is one of them."""

    rows: pl.DataFrame
    template: str
    members: tuple[str, ...]
    original: bool

    def sampler_args(self) -> dict[str, Any]:
        """``ids``, ``questions`` and ``template`` for :func:`probunlearn.sampling.sample_answers`."""
        return {
            "ids": self.rows["id"].to_list(),
            "questions": self.rows["prompt"].to_list(),
            "template": self.template,
        }


@dataclass
class Inputs:
    """What an attack is applied to: the model's metadata (``target``), the ``model`` and
    ``tokenizer`` (model attacks), the ``evalset`` rows under attack, and ``data``: the rows of the
    forget, retain or holdout split by name. ``inplace``: a model attack may change ``model`` itself
    (else it works on a copy)."""

    target: Target
    model: Any = None
    tokenizer: Any = None
    evalset: pl.DataFrame | None = None
    data: Mapping[str, pl.DataFrame] = field(default_factory=dict)
    inplace: bool = False


@dataclass
class Result:
    """An applied attack: the ``spec`` (canonical), the attacked ``model`` (model attacks), the
    prompt ``family`` (prompt attacks), ``attacked_ids`` (the eval rows the attack may be judged on;
    None: all of them) and ``info`` (what was done, and ``notes`` a user should read)."""

    spec: str
    model: Any = None
    family: Family | None = None
    attacked_ids: list[str] | None = None
    info: dict[str, Any] = field(default_factory=dict)


class Attack:
    """An attack kind; subclass it, set the class attributes and write :meth:`apply`."""

    name: ClassVar[str]
    label: ClassVar[str]
    #: Its settings (name -> default, JSON-schema type, doc).
    settings: ClassVar[Mapping[str, Setting]] = {}
    #: The setting a bare value sets (``quant:nf4`` is ``quant:type=nf4``), or None.
    positional: ClassVar[str | None] = None
    #: What it transforms: ``"model"`` (returns an attacked model) or ``"prompts"`` (a Family).
    transforms: ClassVar[str]
    #: Whether a model attack also runs on a control model, one that never saw the forget set
    #: (relearning: what it brings back is compared with what it teaches a model that never knew).
    controlled: ClassVar[bool] = False
    #: Raised where the attack's output changes under an unchanged spec (a default changed): its
    #: jobs' params carry it, so that Snakemake reruns what an earlier version made; 0 is left out.
    revision: ClassVar[int] = 0

    def needs(self, settings: Mapping[str, Any]) -> frozenset[str]:
        """What it reads besides the model: a subset of :data:`DATA` (the eval set, the forget,
        retain or holdout rows) and ``"tokenizer"``."""
        return frozenset({"evalset"}) if self.transforms == "prompts" else frozenset()

    def rows_needed(self, settings: Mapping[str, Any]) -> list[str]:
        """The data sets of :meth:`needs` whose rows a run supplies by name: forget, retain,
        holdout (sorted)."""
        return sorted(self.needs(settings) & {"forget", "retain", "holdout"})

    def check(self, settings: Mapping[str, Any], target: Target, spec: str) -> list[str]:
        """Raise ValueError (naming the model and ``spec``) where ``target`` cannot take the attack
        with these settings; return the notes a user should read (e.g. a merged adapter). Pure: it
        reads the spec and the model's metadata only. The default checks the data of
        :meth:`needs`."""
        for data in self.rows_needed(settings):
            if not target.has(data):
                raise ValueError(
                    f"model {target.name!r}: attack {spec!r} needs the {data} set, and none is "
                    f"given with this model"
                )
        return []

    def apply(self, inputs: Inputs, settings: Mapping[str, Any], spec: str) -> Result:
        """Apply the attack (after :meth:`check`)."""
        raise NotImplementedError

    def members(self, settings: Mapping[str, Any]) -> tuple[str, ...]:
        """A prompt attack's family members with these settings, in order (``original`` first
        where it is one), known before it is applied; () for a model attack."""
        return ()

    def family_template(self, settings: Mapping[str, Any], target: Target) -> str:
        """The template a prompt attack's family is sampled with (:attr:`Family.template`) for
        ``target``, known before it is applied."""
        raise NotImplementedError(f"attack {self.name!r} makes no prompt family")

    def resolve(self, given: Mapping[str, Any], spec: str | None = None) -> dict[str, Any]:
        """Its settings: the defaults updated with ``given`` (validated against their schemas);
        errors name ``spec`` and the expected settings."""
        where = f"attack spec {spec!r}" if spec is not None else f"attack {self.name!r}"
        return resolve_settings(
            self.settings,
            given,
            lambda extra: (
                f"{where}: {self.name} has no setting(s) {extra}; expected "
                f"{self.describe_settings()}"
            ),
            lambda key, value, error: (
                f"{where}: setting {key} = {value!r}: {error}; expected {self.describe_settings()}"
            ),
        )

    def describe_settings(self) -> str:
        """Its settings as text: ``name (type, default d)``, comma-separated (``no settings``)."""
        if not self.settings:
            return "no settings"
        return ", ".join(
            f"{k} ({_type_text(s.schema)}, default {_show(s.default)})"
            for k, s in self.settings.items()
        )


ATTACKS: Registry[Attack] = Registry(
    "attacks",
    __name__,
    Attack,
    "attack",
    name_pattern=r"[a-z0-9]+(?:_[a-z0-9]+)*",
    name_rule="lower-case letters and digits in parts joined by single '_': an attack's name is "
    "part of its attacked models' and prompt families' file names",
)
"""Every attack kind, built-in and registered from outside."""


def member_of(prompt_id: str) -> tuple[str, str]:
    """(question id, member) of a family member's prompt id ``<row id>::<member>``."""
    base, sep, member = str(prompt_id).rpartition(MEMBER_SEP)
    if not sep or not base or not member:
        raise ValueError(
            f"prompt id {prompt_id!r} is no family member's id: expected '<id>{MEMBER_SEP}<member>'"
        )
    return base, member


#: What relearning and few-shot contexts keep apart from the questions they are judged on:
#: ``subject`` (no pair about the question's subject: its author, its RWKU target) or ``question``
#: (only the question itself: the same id or the same question text).
EXCLUDE = ("subject", "question")
EXCLUDE_SETTING = Setting(
    "subject",
    {"enum": list(EXCLUDE)},
    "What the pairs exclude: the question's subject (its author) or only the question itself.",
)


def subjects_of(rows: pl.DataFrame) -> list[str]:
    """Each row's subject, in row order: for a row whose id matches a benchmark's
    ``subject_id_pattern`` (``spec.yaml``), its first group; for a row of a kind whose ``group`` is
    its subject (:data:`probunlearn.data.rows.SUBJECT_KINDS`, a benchmark's ``subject_kinds``),
    that group; else (no subject known: a category, a user's row) the row's own id, so that
    excluding its subject excludes the row alone."""
    import re

    from probunlearn.benchmarks import benchmarks
    from probunlearn.data.rows import SUBJECT_KINDS

    kinds = set(SUBJECT_KINDS) | {k for b in benchmarks() for k in b.spec.get("subject_kinds", [])}
    patterns = [
        re.compile(b.spec["subject_id_pattern"])
        for b in benchmarks()
        if b.spec.get("subject_id_pattern")
    ]
    n = rows.height
    ids = [str(i) for i in rows["id"].to_list()]
    groups = rows["group"].to_list() if "group" in rows.columns else [None] * n
    row_kinds = rows["kind"].to_list() if "kind" in rows.columns else [None] * n
    out = []
    for rid, group, kind in zip(ids, groups, row_kinds, strict=True):
        match = next((m for p in patterns if (m := p.match(rid))), None)
        if match is not None:
            out.append(match.group(1))
        elif kind in kinds and group:
            out.append(f"{kind}:{group}")
        else:
            out.append(f"row:{rid}")
    return out


def attack(name: str) -> Attack:
    """The attack kind ``name`` (a ValueError naming the known ones if unknown)."""
    return ATTACKS.get(name)


# --------------------------------------------------------------------------------------------------
# specs


def _show(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _type_text(schema: Mapping[str, Any]) -> str:
    if "enum" in schema:
        return "one of " + "|".join(_show(v) for v in schema["enum"])
    return str(schema.get("type", "any"))


_TRUE, _FALSE = {"true", "yes", "1", "on"}, {"false", "no", "0", "off"}


def _coerce(text: str, schema: Mapping[str, Any]) -> Any:
    """A spec value as the schema's type (ValueError with what was expected otherwise)."""
    kind = schema.get("type")
    if "enum" in schema and kind is None:
        kinds = {type(v) for v in schema["enum"]}
        kind = {int: "integer", float: "number", bool: "boolean"}.get(kinds.pop(), "string")
    if kind == "integer":
        try:
            return int(text)
        except ValueError:
            raise ValueError(f"{text!r} is not an integer") from None
    if kind == "number":
        try:
            return float(text)
        except ValueError:
            raise ValueError(f"{text!r} is not a number") from None
    if kind == "boolean":
        if text.lower() in _TRUE:
            return True
        if text.lower() in _FALSE:
            return False
        raise ValueError(f"{text!r} is not true or false")
    return text


def parse_spec(text: str) -> Spec:
    """``kind``, ``kind:value`` or ``kind:key=value,...`` -> a :class:`Spec` (every setting, defaults
    filled in). A ValueError names the spec and the expected settings where a kind or setting is
    unknown or a value has the wrong type."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError(
            f"an attack spec must be a non-empty string like 'quant:nf4', got {text!r}"
        )
    kind, _, rest = text.strip().partition(":")
    kind = kind.strip()
    if kind not in ATTACKS:
        raise ValueError(
            f"attack spec {text!r}: unknown attack {kind!r}; expected one of {ATTACKS.names()} "
            f"(e.g. 'quant:nf4', 'relearn:steps=20,lr=1e-5', 'paraphrase')"
        )
    entry = ATTACKS.get(kind)
    given: dict[str, Any] = {}
    parts = [p.strip() for p in rest.split(",")] if rest.strip() else []
    for i, part in enumerate(parts):
        if not part:
            raise ValueError(f"attack spec {text!r}: empty setting between commas")
        key, eq, value = part.partition("=")
        key, value = key.strip(), value.strip()
        if not eq:
            if entry.positional is None or i > 0:
                raise ValueError(
                    f"attack spec {text!r}: {part!r} is not key=value; {kind} expects "
                    f"{entry.describe_settings()}"
                )
            key, value = entry.positional, part
        if key not in entry.settings:
            raise ValueError(
                f"attack spec {text!r}: {kind} has no setting {key!r}; expected "
                f"{entry.describe_settings()}"
            )
        if key in given:
            raise ValueError(f"attack spec {text!r}: setting {key!r} is given twice")
        try:
            given[key] = _coerce(value, entry.settings[key].schema)
        except ValueError as e:
            raise ValueError(
                f"attack spec {text!r}: setting {key}: {e}; expected {entry.describe_settings()}"
            ) from None
    return Spec(kind, entry.resolve(given, spec=text), text.strip())


def _as_spec(spec: str | Spec) -> Spec:
    return spec if isinstance(spec, Spec) else parse_spec(spec)


def check_attack(spec: str | Spec, target: Target) -> list[str]:
    """Whether ``target`` can take the attack ``spec``, before any job: a ValueError naming the model
    and the attack where it cannot; else the notes a user should read (may be empty). Pure."""
    s = _as_spec(spec)
    return ATTACKS.get(s.kind).check(s.settings, target, s.canonical)


def check_attacks(specs: Sequence[str | Spec], target: Target) -> dict[str, list[str]]:
    """:func:`check_attack` for every spec: canonical spec -> its notes; a spec given twice (after
    canonicalisation) is an error."""
    out: dict[str, list[str]] = {}
    for spec in specs:
        s = _as_spec(spec)
        if s.canonical in out:
            raise ValueError(f"attack {s.canonical!r} is given twice for model {target.name!r}")
        out[s.canonical] = check_attack(s, target)
    return out


def apply_attack(spec: str | Spec, inputs: Inputs) -> Result:
    """Check, then apply, the attack ``spec`` to ``inputs``; its notes go to ``info["notes"]``."""
    s = _as_spec(spec)
    entry = ATTACKS.get(s.kind)
    notes = entry.check(s.settings, inputs.target, s.canonical)
    result = entry.apply(inputs, s.settings, s.canonical)
    result.info["notes"] = [*notes, *result.info.get("notes", [])]
    return result
