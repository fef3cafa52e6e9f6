"""A run's configuration: its layers, their merge as Snakemake does it, and validation against
workflow/schemas/config.schema.yaml.

``--configfile`` files are laid key by key over ``config.yaml`` (the mini run), or, for a preset
that says ``base: paper``, over ``workflow/defaults/paper.yaml`` (the paper's appendix A), so that
no value of the mini run reaches it.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from probunlearn.storage.atomic import write_text

# the bases a config file may name with its top-level key `base`, relative to the repository root
BASES = {"paper": Path("workflow/defaults/paper.yaml")}
MINI_CONFIG = Path("config.yaml")


class ConfigError(ValueError):
    """A configuration that does not match the schema; the message names every bad key."""


def _where(error: jsonschema.ValidationError) -> str:
    path = ".".join(str(p) for p in error.absolute_path)
    return path or "<top level>"


def _registry_choices(kind: str, where: str | None) -> list[str]:
    """A registry's names; with ``where``, those whose attribute is true (``not ATTR``: false)."""
    from probunlearn import attacks, methods, scoring
    from probunlearn.metrics.membership.base import STATISTICS

    registries = {
        "methods": methods.METHODS,
        "scorers": scoring.SCORERS,
        "attacks": attacks.ATTACKS,
        "membership_statistics": STATISTICS,
    }
    if kind not in registries:
        raise ValueError(f"schema: unknown registry {kind!r} in x-registry")
    negate = where is not None and where.startswith("not ")
    attr = where[4:] if negate else where
    return [e.name for e in registries[kind] if attr is None or bool(getattr(e, attr)) != negate]


def _benchmark_experiments() -> list[str]:
    from probunlearn.benchmarks import benchmarks

    return [b.experiment for b in benchmarks() if b.experiment]


def complete_schema(node: Any) -> Any:
    """The config schema with the registries' choices filled in: ``x-registry: KIND`` (filtered by
    ``x-where``) as an enum, or with ``x-spec`` a pattern of spec strings; ``x-experiments``,
    ``x-benchmark-blocks``/``-sections``, ``x-method-settings`` and ``x-method-overrides`` add the
    benchmarks' experiments, blocks and sections and the methods' settings and overrides."""
    if isinstance(node, list):
        return [complete_schema(v) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: complete_schema(v) for k, v in node.items()}
    if "x-registry" in out:
        choices = _registry_choices(out["x-registry"], out.get("x-where"))
        if out.get("x-spec"):  # a spec string, `name` or `name:settings` (attacks.parse_spec)
            out["pattern"] = "^(" + "|".join(choices) + ")(:.*)?$"
        else:
            out["enum"] = choices
    if "x-experiments" in out:  # the workflow's experiments and those the benchmarks bring
        out["enum"] = [*out["x-experiments"], *_benchmark_experiments()]
    if out.get("x-benchmark-blocks") or out.get("x-benchmark-sections"):
        from probunlearn.benchmarks import benchmarks

        key = "x-benchmark-blocks" if out.get("x-benchmark-blocks") else "x-benchmark-sections"
        own = {}
        for b in benchmarks():
            own.update(
                {b.name: b.config_schema()} if key == "x-benchmark-blocks" else b.section_schemas()
            )
        out["properties"] = {**out.get("properties", {}), **complete_schema(own)}
    if out.get("x-method-settings"):
        from probunlearn import methods

        out["properties"] = {**out.get("properties", {}), **methods.settings_schema()}
    props = out.get("properties")
    if isinstance(props, dict):
        for key, child in props.items():
            if isinstance(child, dict) and "x-method-overrides" in child:
                props[key] = _method_overrides(child, props[child["x-method-overrides-of"]])
    return out


def _method_overrides(node: dict, hparams: dict) -> dict:
    """``unlearning.overrides``: per method, the keys ``x-method-overrides`` names (typed as in
    ``hparams``, the node ``x-method-overrides-of`` names) and the method's own settings."""
    from probunlearn import methods

    schemas = hparams["properties"]
    shared = {k: schemas[k] for k in node["x-method-overrides"]}
    return {
        **node,
        "properties": {
            m.name: {
                "type": "object",
                "additionalProperties": False,
                "properties": {**shared, **{k: schemas[k] for k in m.settings}},
            }
            for m in methods.METHODS
        },
    }


def load_schema(schema_path: str | os.PathLike) -> dict[str, Any]:
    """The config schema file, completed with the registries' choices (:func:`complete_schema`)."""
    with open(schema_path) as fh:
        return complete_schema(yaml.safe_load(fh))


def validate_config(config: dict[str, Any], schema_path: str | os.PathLike) -> None:
    """Raise ConfigError naming each key that is unknown, mistyped, missing or out of range."""
    schema = load_schema(schema_path)
    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(config), key=lambda e: list(map(str, e.absolute_path)))
    if not errors:
        return
    lines = []
    for e in errors:
        msg = e.message
        if e.validator == "additionalProperties":
            msg = f"unknown key(s): {msg.split('(')[-1].rstrip(')')}"
        lines.append(f"  config key '{_where(e)}': {msg}")
    raise ConfigError("invalid configuration:\n" + "\n".join(lines))


# --------------------------------------------------------------------------------------------------
# layers


def merge_config(config: dict[str, Any], overlay: Mapping[str, Any]) -> dict[str, Any]:
    """Lay ``overlay`` over ``config`` in place, key by key, as ``snakemake.utils.update_config``
    does: a mapping merges into a mapping (an empty one clears nothing), anything else replaces."""
    for key, value in overlay.items():
        if isinstance(value, Mapping):
            sub = config.get(key)
            config[key] = merge_config(sub if isinstance(sub, dict) else {}, value)
        else:
            config[key] = copy.deepcopy(value)
    return config


def load_yaml(path: str | os.PathLike) -> dict[str, Any]:
    """A YAML config file as a dict; a clear error for a file that is not a mapping."""
    with open(path) as fh:
        data = yaml.safe_load(fh)
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: a config file must hold a mapping of keys at its top level")
    return data


def base_path(name: str, root: str | os.PathLike) -> Path:
    """The file of base ``name`` under the repository ``root``."""
    if name not in BASES:
        raise ConfigError(
            f"config key 'base': unknown base {name!r}; expected one of {sorted(BASES)}"
        )
    return Path(root) / BASES[name]


def layers(overlay: Mapping[str, Any], root: str | os.PathLike) -> list[tuple[str, dict[str, Any]]]:
    """(name, content) of each layer under ``overlay``: config.yaml, or the base it names."""
    name = overlay.get("base")
    if name is None:
        return [(str(MINI_CONFIG), load_yaml(Path(root) / MINI_CONFIG))]
    path = base_path(name, root)
    return [(str(BASES[name]), load_yaml(path))]


def effective_config(
    overlay: Mapping[str, Any],
    root: str | os.PathLike,
    workflow_config: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A run's configuration: ``overlay`` (the merged ``--configfile`` and ``--config`` values) laid
    over its base; without a ``base`` key, ``workflow_config`` (Snakemake's own merge) if given."""
    if overlay.get("base") is None and workflow_config is not None:
        return dict(workflow_config)
    cfg: dict[str, Any] = {}
    for _, content in layers(overlay, root):
        merge_config(cfg, content)
    return merge_config(cfg, overlay)


def overlay_of(paths: Sequence[str | os.PathLike]) -> dict[str, Any]:
    """The overlay of several config files, merged in order (as ``--configfile a b`` does)."""
    out: dict[str, Any] = {}
    for p in paths:
        merge_config(out, load_yaml(p))
    return out


def leaves(config: Mapping[str, Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    """(dotted key, value) of every leaf; an empty mapping is a leaf of its own."""
    for key, value in config.items():
        path = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            yield from leaves(value, path + ".")
        else:
            yield path, value


def config_sources(
    overlays: Sequence[tuple[str, Mapping[str, Any]]], root: str | os.PathLike
) -> dict[str, str]:
    """{dotted key: layer name} of each leaf of the effective configuration; ``overlays``: (name,
    content) of the files laid over the base, in order."""
    merged: dict[str, Any] = {}
    for _, content in overlays:
        merge_config(merged, content)
    named = layers(merged, root) + list(overlays)
    cfg: dict[str, Any] = {}
    for _, content in named:
        merge_config(cfg, content)
    origin: dict[str, str] = {}
    for name, content in named:
        for key, _ in leaves(content):
            # a later layer's leaf replaces an earlier one and everything below it
            for k in [k for k in origin if k == key or k.startswith(key + ".")]:
                del origin[k]
            origin[key] = name
    return {key: origin[key] for key, _ in leaves(cfg)}


def get_key(config: Mapping[str, Any], dotted: str) -> Any:
    """The value at a dotted key; KeyError naming the key if it is absent."""
    node: Any = config
    for part in dotted.split("."):
        if not isinstance(node, Mapping) or part not in node:
            raise KeyError(f"config key '{dotted}' is not set")
        node = node[part]
    return node


def dump_config(config: Mapping[str, Any], path: str | os.PathLike) -> Path:
    """Write ``config`` as YAML (keys in their order) to ``path`` atomically."""
    text = yaml.safe_dump(dict(config), sort_keys=False, allow_unicode=True, width=100)
    return write_text(text, path)
