"""What a local model directory holds, read from its files without loading it: its tokenizer's
directory (an adapter's base where the adapter has none), whether that tokenizer has a chat
template, and the model's context length."""

from __future__ import annotations

import json
from pathlib import Path

# probunlearn.data.qa's template names and default, here without its import of torch (tested equal)
AUTO, CHAT, DEFAULT_TEMPLATE = "auto", "chat", "Question: {question}\nAnswer:"
TOKENIZER_FILES = ("tokenizer.json", "tokenizer.model", "vocab.json", "tokenizer_config.json")
"""A model directory holds at least one of these when its tokenizer is there."""
CONTEXT_KEYS = ("max_position_embeddings", "n_positions", "max_seq_len", "seq_length", "n_ctx")


def tokenizer_dir(source: str, base: str | None) -> Path | None:
    """The local directory a model's tokenizer is read from (an adapter without tokenizer files:
    its base's), or None for a hub model."""
    from probunlearn.storage import checkpoints

    path = Path(source)
    if not path.is_dir():
        return None
    if checkpoints.is_adapter(source) and not any(
        (path / f).is_file() for f in ("tokenizer.json", "tokenizer_config.json")
    ):
        base = base or checkpoints.adapter_base(source)
        return Path(base) if base and Path(base).is_dir() else None
    return path


def has_chat_template(source: str, base: str | None = None) -> bool | None:
    """Whether a model's tokenizer has a chat template (read from its files; None: a hub model,
    unknown before it is loaded)."""
    d = tokenizer_dir(source, base)
    if d is None:
        return None
    if (d / "chat_template.jinja").is_file() or (d / "chat_template.json").is_file():
        return True
    cfg = d / "tokenizer_config.json"
    try:
        return bool(json.loads(cfg.read_text()).get("chat_template")) if cfg.is_file() else False
    except (OSError, ValueError):
        return None


def context_length(directory: str | Path) -> int | None:
    """The model's context (positions) from its config.json, or None where it names none."""
    cfg_path = Path(directory) / "config.json"
    if not cfg_path.is_file():
        return None
    try:
        cfg = json.loads(cfg_path.read_text())
    except (OSError, ValueError):
        return None
    for section in (cfg, cfg.get("text_config") or {}):
        for key in CONTEXT_KEYS:
            if isinstance(section.get(key), int):
                return int(section[key])
    return None
