"""A tokenizer over the ``tokenizers`` library alone, with the part of transformers' fast-tokenizer
interface the workflow uses, for jobs that must not pay transformers' import (about 1 s per process).

It loads a local directory whose ``tokenizer_config.json`` describes a plain ``tokenizer.json``
(:func:`supports`: no chat template, no options that change encoding or decoding); anything else goes
through transformers. Encoding (special tokens, truncation, padding, offsets) and decoding equal
transformers' on the same files (tests/models/test_native.py).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")
_CLASSES = {"TokenizersBackend", "PreTrainedTokenizerFast"}
_KEYS = {"backend", "bos_token", "eos_token", "pad_token", "unk_token", "is_local"}
_KEYS |= {"local_files_only", "model_max_length", "tokenizer_class", "added_tokens_decoder"}
_KEYS |= {"clean_up_tokenization_spaces", "padding_side", "truncation_side", "extra_special_tokens"}
SPECIAL = ("bos_token", "eos_token", "pad_token", "unk_token")


def _config(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads((path / "tokenizer_config.json").read_text())
    except (OSError, json.JSONDecodeError):
        return None


def supports(path: str | os.PathLike) -> bool:
    """Whether ``path`` holds a tokenizer this module encodes and decodes exactly as transformers."""
    p = Path(path)
    cfg = _config(p) if (p / "tokenizer.json").is_file() else None
    if cfg is None or cfg.get("tokenizer_class") not in _CLASSES or set(cfg) - _KEYS:
        return False
    if cfg.get("clean_up_tokenization_spaces") or cfg.get("extra_special_tokens"):
        return False
    if (p / "chat_template.jinja").exists() or (p / "chat_template.json").exists():
        return False
    return all(isinstance(cfg.get(k), (str, type(None))) for k in SPECIAL)


class Tokenizer:
    """Encode, pad, truncate and decode like transformers' ``PreTrainedTokenizerFast``."""

    is_fast = True
    chat_template = None

    def __init__(self, directory: str | os.PathLike):
        from tokenizers import Tokenizer as Backend

        self.source = Path(directory)
        cfg = _config(self.source) or {}
        self._backend = Backend.from_file(str(self.source / "tokenizer.json"))
        self._backend.no_truncation()
        self._backend.no_padding()
        self.padding_side = cfg.get("padding_side", "right")
        self.truncation_side = cfg.get("truncation_side", "right")
        self.model_max_length = cfg.get("model_max_length", int(1e30))
        for key in SPECIAL:
            setattr(self, key, cfg.get(key))

    # -- special tokens ------------------------------------------------------------------------------
    def _id(self, token: str | None) -> int | None:
        return None if token is None else self._backend.token_to_id(token)

    @property
    def bos_token_id(self) -> int | None:
        return self._id(self.bos_token)

    @property
    def eos_token_id(self) -> int | None:
        return self._id(self.eos_token)

    @property
    def pad_token_id(self) -> int | None:
        return self._id(self.pad_token)

    @property
    def unk_token_id(self) -> int | None:
        return self._id(self.unk_token)

    @property
    def all_special_ids(self) -> list[int]:
        order = ("bos_token", "eos_token", "unk_token", "pad_token")  # transformers' order
        tokens = dict.fromkeys(getattr(self, k) for k in order if getattr(self, k) is not None)
        return [self._id(t) for t in tokens if self._id(t) is not None]

    def convert_tokens_to_ids(self, tokens: str | list[str]) -> int | list[int] | None:
        if isinstance(tokens, str):
            i = self._backend.token_to_id(tokens)
            return self.unk_token_id if i is None else i
        return [self.convert_tokens_to_ids(t) for t in tokens]

    def __len__(self) -> int:
        return self._backend.get_vocab_size(with_added_tokens=True)

    # -- encoding ------------------------------------------------------------------------------------
    def _encode(self, texts: list[str], add_special_tokens: bool, max_length, truncation: bool):
        if truncation and max_length is not None:
            self._backend.enable_truncation(
                int(max_length), stride=0, strategy="longest_first", direction=self.truncation_side
            )
        try:
            return self._backend.encode_batch(texts, add_special_tokens=add_special_tokens)
        finally:
            self._backend.no_truncation()

    def __call__(
        self,
        text: str | list[str],
        add_special_tokens: bool = True,
        max_length: int | None = None,
        truncation: bool = False,
        padding: bool = False,
        return_tensors: str | None = None,
        return_offsets_mapping: bool = False,
    ) -> dict[str, Any]:
        single = isinstance(text, str)
        encs = self._encode(
            [text] if single else list(text), add_special_tokens, max_length, truncation
        )
        ids = [list(e.ids) for e in encs]
        mask = [[1] * len(i) for i in ids]
        offsets = [list(e.offsets) for e in encs]
        if padding:
            width = max(len(i) for i in ids)
            pad = self.pad_token_id
            if pad is None:
                raise ValueError("padding needs a pad token")
            for k in range(len(ids)):
                fill = width - len(ids[k])
                if self.padding_side == "left":
                    ids[k], mask[k] = [pad] * fill + ids[k], [0] * fill + mask[k]
                    offsets[k] = [(0, 0)] * fill + offsets[k]
                else:
                    ids[k], mask[k] = ids[k] + [pad] * fill, mask[k] + [0] * fill
                    offsets[k] = offsets[k] + [(0, 0)] * fill
        out: dict[str, Any] = {"input_ids": ids, "attention_mask": mask}
        if return_offsets_mapping:
            out["offset_mapping"] = offsets
        if return_tensors == "pt":
            import torch

            out = {k: torch.tensor(v, dtype=torch.long) for k, v in out.items()}
        elif return_tensors is not None:
            raise ValueError(f"return_tensors={return_tensors!r}: only 'pt' is supported")
        if single and return_tensors is None:
            out = {k: v[0] for k, v in out.items()}
        return out

    def tokenize(self, text: str, add_special_tokens: bool = False) -> list[str]:
        return list(self._encode([text], add_special_tokens, None, False)[0].tokens)

    # -- decoding ------------------------------------------------------------------------------------
    def decode(self, ids, skip_special_tokens: bool = False) -> str:
        if hasattr(ids, "tolist"):
            ids = ids.tolist()
        if isinstance(ids, int):
            ids = [ids]
        return self._backend.decode(list(ids), skip_special_tokens=skip_special_tokens)

    def batch_decode(self, seqs, skip_special_tokens: bool = False) -> list[str]:
        if hasattr(seqs, "tolist"):
            seqs = seqs.tolist()
        return [self.decode(s, skip_special_tokens=skip_special_tokens) for s in seqs]

    def save_pretrained(self, directory: str | os.PathLike) -> None:
        """The files it was read from, unchanged."""
        d = Path(directory)
        d.mkdir(parents=True, exist_ok=True)
        for name in FILES:
            if (self.source / name).is_file():
                shutil.copyfile(self.source / name, d / name)


def load(directory: str | os.PathLike) -> Tokenizer:
    """The tokenizer in ``directory`` (see :func:`supports`), padding on the left as the workflow does."""
    tok = Tokenizer(directory)
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    tok.padding_side = "left"
    return tok
