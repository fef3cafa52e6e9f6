"""Validation of a run's configuration against workflow/schemas/config.schema.yaml."""

from __future__ import annotations

import os
from typing import Any

import jsonschema
import yaml


class ConfigError(ValueError):
    """A configuration that does not match the schema; the message names every bad key."""


def _where(error: jsonschema.ValidationError) -> str:
    path = ".".join(str(p) for p in error.absolute_path)
    if error.validator == "additionalProperties":
        return path or "<top level>"
    return path or "<top level>"


def validate_config(config: dict[str, Any], schema_path: str | os.PathLike) -> None:
    """Raise ConfigError naming each key that is unknown, mistyped, missing or out of range."""
    with open(schema_path) as fh:
        schema = yaml.safe_load(fh)
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
