"""The names of attacked models and prompt families: an attacked model is ``{model}--{attack}``
(``npo-forget10-f0-r0--quant__nf4``), a prompt family ``{evalset}--{attack}``
(``forget10--paraphrase``; with ``--t{hash}`` after it for a model whose template is not the run's).
``{attack}`` is the canonical spec (:attr:`probunlearn.attacks.Spec.canonical`) in file-name
characters: the kind, then the positional setting's value, then ``key-value`` for each other
setting that is not its default, joined by ``__`` (``relearn__10__lr-0p001`` is
``relearn:10,lr=0.001``); in a number, ``.`` is written ``p`` and ``-`` ``m``. :func:`attack_slug`
and :func:`parse_attack_slug` turn one into the other; a name parses back to the base and the spec.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from typing import Any

from probunlearn.attacks import ATTACKS, Spec, parse_spec

SEP = "--"
"""Between a model (or eval set) and its attack in a name."""
PART = "__"
"""Between the parts of an attack's name."""

_KIND = r"[a-z0-9]+(?:_[a-z0-9]+)*"
_VALUE = r"[A-Za-z0-9]+(?:[_-][A-Za-z0-9]+)*"
SLUG_PATTERN = rf"{_KIND}(?:{PART}{_VALUE})*"
"""Regular expression of an attack's name part."""
_BASE = r"[A-Za-z0-9_.]+(?:-[A-Za-z0-9_.]+)*"
ATTACKED_PATTERN = rf"{_BASE}{SEP}{SLUG_PATTERN}"
"""Regular expression of an attacked model's name (rule ``attack``'s wildcard)."""
_TAG = r"t[0-9a-f]{8}"
FAMILY_PATTERN = rf"[a-z0-9_]+{SEP}{SLUG_PATTERN}(?:{SEP}{_TAG})?"
"""Regular expression of a prompt family's name (rule ``attack_prompts``'s wildcard)."""
EVALSET_PATTERN = rf"[a-z0-9_]+(?:{SEP}{SLUG_PATTERN}(?:{SEP}{_TAG})?)?"
"""Regular expression of an eval set's name: a plain set or a prompt family."""


def _is_number(schema: Mapping[str, Any]) -> bool:
    kind = schema.get("type")
    if kind in ("integer", "number"):
        return True
    enum = schema.get("enum") or []
    return bool(enum) and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in enum)


def _encode(value: Any, schema: Mapping[str, Any], spec: str) -> str:
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif _is_number(schema):
        text = str(value).replace("+", "").replace("-", "m").replace(".", "p")
    else:
        text = str(value)
    if not re.fullmatch(_VALUE, text):
        raise ValueError(
            f"attack {spec!r}: the value {value!r} cannot be part of a file name (letters, digits "
            "and single '_' or '-' between them)"
        )
    return text


def _decode(text: str, schema: Mapping[str, Any]) -> str:
    return text.replace("m", "-").replace("p", ".") if _is_number(schema) else text


def attack_slug(spec: str | Spec) -> str:
    """The file-name form of an attack's canonical spec (``quant:nf4`` -> ``quant__nf4``)."""
    s = spec if isinstance(spec, Spec) else parse_spec(spec)
    entry = ATTACKS.get(s.kind)
    if not re.fullmatch(_KIND, s.kind):
        raise ValueError(f"attack kind {s.kind!r} cannot be part of a file name")
    pos = entry.positional
    parts = [s.kind]
    if pos is not None:
        parts.append(_encode(s.settings[pos], entry.settings[pos].schema, s.canonical))
    for key, value in s.settings.items():
        if key != pos and value != entry.settings[key].default:
            if not re.fullmatch(_KIND, key):
                raise ValueError(f"attack {s.canonical!r}: setting {key!r} cannot be in a name")
            parts.append(f"{key}-{_encode(value, entry.settings[key].schema, s.canonical)}")
    return PART.join(parts)


def parse_attack_slug(slug: str) -> Spec:
    """The :class:`~probunlearn.attacks.Spec` of an attack's file-name form (a ValueError naming
    it where it is no canonical attack name)."""
    if not re.fullmatch(SLUG_PATTERN, slug):
        raise ValueError(f"attack name {slug!r}: expected kind[__value][__key-value...]")
    kind, *parts = slug.split(PART)
    if kind not in ATTACKS:
        raise ValueError(f"attack name {slug!r}: unknown attack {kind!r}; known: {ATTACKS.names()}")
    entry = ATTACKS.get(kind)
    given = []
    if entry.positional is not None and parts:
        given.append(_decode(parts.pop(0), entry.settings[entry.positional].schema))
    for part in parts:
        key, _, value = part.partition("-")
        if key not in entry.settings or not value:
            raise ValueError(f"attack name {slug!r}: {part!r} is no key-value of {kind}")
        given.append(f"{key}={_decode(value, entry.settings[key].schema)}")
    spec = parse_spec(kind + (":" + ",".join(given) if given else ""))
    if attack_slug(spec) != slug:
        raise ValueError(
            f"attack name {slug!r} is not canonical: {spec.canonical!r} is named "
            f"{attack_slug(spec)!r}"
        )
    return spec


def attacked_name(model: str, spec: str | Spec) -> str:
    """The name of ``model`` attacked with ``spec`` (a model attack)."""
    if SEP in model:
        raise ValueError(f"model {model!r}: a model to attack has no {SEP!r} in its name")
    return f"{model}{SEP}{attack_slug(spec)}"


def parse_attacked(name: str) -> tuple[str, Spec]:
    """(base model, spec) of an attacked model's name."""
    if not re.fullmatch(ATTACKED_PATTERN, name):
        raise ValueError(f"model name {name!r}: expected {{model}}{SEP}{{attack}}")
    base, _, slug = name.partition(SEP)
    return base, parse_attack_slug(slug)


def is_attacked(name: str) -> bool:
    """Whether ``name`` is an attacked model's."""
    return bool(re.fullmatch(ATTACKED_PATTERN, name))


def template_tag(template: str) -> str:
    """The short tag of a prompt template in a family's name."""
    return "t" + hashlib.sha256(template.encode()).hexdigest()[:8]


def family_name(evalset: str, spec: str | Spec, tag: str | None = None) -> str:
    """The name of the prompt family ``spec`` makes of ``evalset`` (``tag``: of the template, for
    a model whose template is not the run's)."""
    return f"{evalset}{SEP}{attack_slug(spec)}" + (f"{SEP}{tag}" if tag else "")


def parse_family(name: str) -> tuple[str, Spec, str | None]:
    """(eval set, spec, template tag or None) of a prompt family's name."""
    if not re.fullmatch(FAMILY_PATTERN, name):
        raise ValueError(f"eval set {name!r}: expected {{evalset}}{SEP}{{attack}}")
    evalset, slug, *tag = name.split(SEP)
    return evalset, parse_attack_slug(slug), (tag[0] if tag else None)


def plain_evalset(name: str) -> str:
    """The eval set a name is made from: itself, or a prompt family's eval set."""
    return name.split(SEP, 1)[0]
