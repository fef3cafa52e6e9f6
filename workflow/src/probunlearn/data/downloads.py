"""Fetch the real data sets into ``resources/``: atomically, cached, verified, with an offline message.

Each benchmark's data set is a list of files (its ``spec.yaml``, :func:`dataset_from_spec`), each with its origin (a hub data set repository at a
pinned revision, or a pinned URL) and how it is verified: a sha256 checksum (the Harry Potter Q&A CSV) or
a number of rows (TOFU configs, JailbreakBench behaviors). :func:`fetch_files` puts every file at
``<dest_dir>/<name>``:

- cached: a file already there that verifies is kept, and nothing is downloaded;
- from a local copy: with ``source=`` (a directory laid out as ``../shared/data/<dataset>``), files are
  copied from there (``<split>.jsonl`` is accepted for TOFU's ``<split>.json``) and verified;
- otherwise downloaded (:func:`probunlearn.storage.remote.hub_file` for hub files, ``urllib`` for URLs);
- atomically: written under a temporary name beside the target, verified, then renamed; a file that does
  not verify is deleted and :class:`VerificationError` names it with the expected and found values;
- offline (no network, the hub unreachable, ``HF_HUB_OFFLINE=1``): :class:`OfflineError` says exactly
  which files to put into which directory (and where to get them); nothing more is tried after the first
  unreachable file, so an offline run fails fast.

Each benchmark's loader (:mod:`probunlearn.benchmarks`) reads the result with ``source=<dest_dir>``.
"""

from __future__ import annotations

import hashlib
import http.client
import os
import shutil
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from probunlearn.data import readers
from probunlearn.storage.atomic import atomic_write
from probunlearn.storage.remote import OfflineError, hub_file

__all__ = [
    "Dataset",
    "OfflineError",
    "RemoteFile",
    "VerificationError",
    "count_rows",
    "dataset_from_spec",
    "fetch_files",
    "fetch_hub_file",
    "fetch_url",
    "sha256sum",
    "verify",
]


class VerificationError(ValueError):
    """A file does not have the expected checksum or number of rows."""


# --------------------------------------------------------------------------------------------------------
# what is fetched


@dataclass(frozen=True)
class RemoteFile:
    """One file of a data set: where it comes from and how it is verified."""

    name: str  # file name under the data set's directory in resources/
    repo_id: str | None = None  # hub repository (with filename and revision) ...
    filename: str | None = None
    revision: str | None = None
    repo_type: str = "dataset"
    url: str | None = None  # ... or a URL
    sha256: str | None = None
    rows: int | None = None
    local_names: tuple[str, ...] = ()  # names accepted in a local copy, besides ``name``
    # a hub parquet file stored as JSON: these columns as a list of objects (one column ``text``: a
    # list of strings), the format of the local copy (MUSE-News)
    json_columns: tuple[str, ...] = ()

    def origin(self, revision: str | None = None) -> str:
        if self.url is not None:
            return self.url
        return f"hub {self.repo_type} {self.repo_id}, file {self.filename} at revision {revision or self.revision}"


@dataclass(frozen=True)
class Dataset:
    """A data set: its files, the default subset fetched, and where a user gets them by hand."""

    name: str
    files: dict[str, RemoteFile]
    default: tuple[str, ...]
    where: str  # human-readable origin, for the offline message
    local_copy: str = ""  # e.g. ../shared/data/tofu


def dataset_from_spec(name: str, directory: str, spec: Mapping[str, Any]) -> Dataset:
    """A benchmark's :class:`Dataset` from the ``dataset`` entry of its ``spec.yaml``: ``where``,
    ``hub`` (``repo``, ``revision``, ``type``) shared by its files, ``files`` (key: ``name``,
    ``filename`` in the hub repository or ``url``, ``rows`` and/or ``sha256``, ``local_names``,
    ``json_columns``) and ``default`` (the keys fetched unless a run says otherwise)."""
    hub = spec.get("hub") or {}
    files = {}
    for key, f in spec["files"].items():
        files[key] = RemoteFile(
            name=f["name"],
            repo_id=None if "url" in f else hub["repo"],
            filename=f.get("filename"),
            revision=None if "url" in f else hub.get("revision", "main"),
            repo_type=hub.get("type", "dataset"),
            url=f.get("url"),
            sha256=f.get("sha256"),
            rows=f.get("rows"),
            local_names=tuple(f.get("local_names", ())),
            json_columns=tuple(f.get("json_columns", ())),
        )
    unknown = [k for k in spec["default"] if k not in files]
    if unknown:
        raise ValueError(f"benchmark {name}: default files {unknown} are not among its files")
    return Dataset(
        name=name,
        files=files,
        default=tuple(spec["default"]),
        where=spec["where"],
        local_copy=f"../shared/data/{directory}",
    )


def sha256sum(path: str | os.PathLike) -> str:
    """Hex sha256 of a file."""
    h = hashlib.sha256()
    with Path(path).open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def count_rows(path: str | os.PathLike, kind: str | None = None) -> int:
    """Records of a JSON-lines / JSON-array file, or data rows of a CSV file (header excluded).

    ``kind``: ``"json"`` or ``"csv"``; by default taken from the suffix. Malformed input raises ValueError
    naming the file and line.
    """
    path = Path(path)
    kind = kind or ("csv" if path.suffix.lower() == ".csv" else "json")
    if kind == "csv":
        return len(readers.read_csv_rows(path)) - 1
    strings = _json_string_array(path)
    if strings is not None:
        return strings
    return len(readers.read_json_records(path))


def _json_string_array(path: Path) -> int | None:
    """Items of a JSON array of strings (MUSE's raw corpora), or None for any other file."""
    import json

    try:
        with open(path, encoding="utf-8") as f:
            if f.read(64).lstrip()[:2] not in ('["', "[ ", "[\n"):
                return None
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    if isinstance(data, list) and data and all(isinstance(x, str) for x in data):
        return len(data)
    return None


def verify(
    path: str | os.PathLike,
    *,
    sha256: str | None = None,
    rows: int | None = None,
    name: str | None = None,
    label: str | None = None,
) -> None:
    """Raise :class:`VerificationError` unless ``path`` has the sha256 and the number of rows given.

    ``name`` (the final file name) decides how rows are counted when ``path`` is a temporary file;
    ``label`` is how the file is named in the error (default: ``path``).
    """
    path = Path(path)
    label = label or str(path)
    if sha256 is not None:
        got = sha256sum(path)
        if got != sha256.lower():
            raise VerificationError(f"{label}: sha256 {got}, expected {sha256}")
    if rows is not None:
        kind = "csv" if Path(name or path.name).suffix.lower() == ".csv" else "json"
        try:
            got_rows = count_rows(path, kind)
        except ValueError as e:
            detail = str(e).removeprefix(f"{path}: ")  # the label names the file
            raise VerificationError(f"{label}: unreadable: {detail}") from e
        if got_rows != rows:
            raise VerificationError(f"{label}: {got_rows} rows, expected {rows}")


def _verified(path: Path, spec: RemoteFile) -> bool:
    if not path.is_file():
        return False
    try:
        verify(path, sha256=spec.sha256, rows=spec.rows, name=spec.name)
    except VerificationError:
        return False
    return True


def _install(
    dest: Path, write: Callable[[Path], None], sha256: str | None, rows: int | None, label: str
) -> Path:
    """Write ``dest`` atomically (:func:`probunlearn.storage.atomic.atomic_write`), verified before
    it is renamed into place; a file that does not verify is deleted."""

    def check(tmp: Path) -> None:
        verify(tmp, sha256=sha256, rows=rows, name=dest.name, label=label)

    return atomic_write(dest, write, check)


# --------------------------------------------------------------------------------------------------------
# single files


def _offline_url(e: BaseException) -> bool:
    """A network failure (no route, DNS, refused, reset, timeout), not an HTTP status or a local error."""
    if isinstance(e, urllib.error.HTTPError):
        return False
    return isinstance(
        e, urllib.error.URLError | ConnectionError | TimeoutError | http.client.HTTPException
    )


def fetch_url(
    url: str,
    dest: str | os.PathLike,
    *,
    sha256: str | None = None,
    rows: int | None = None,
    timeout: float = 60.0,
) -> Path:
    """Download ``url`` to ``dest`` (temporary name, verified, renamed); kept if already there and valid.

    Raises :class:`OfflineError` when the host cannot be reached, :class:`VerificationError` when the
    download does not verify (it is deleted), and ``urllib.error.HTTPError`` for an HTTP error status.
    """
    dest = Path(dest)
    if dest.is_file():
        try:
            verify(dest, sha256=sha256, rows=rows)
            return dest
        except VerificationError:
            pass  # stale or corrupted: download again

    def download(tmp: Path) -> None:
        try:
            with urllib.request.urlopen(url, timeout=timeout) as resp, tmp.open("wb") as f:
                shutil.copyfileobj(resp, f)
        except Exception as e:
            if _offline_url(e):
                raise OfflineError(
                    f"cannot download {url} ({e}): put the file at {dest} by hand"
                ) from e
            raise

    return _install(dest, download, sha256, rows, f"{dest} (downloaded from {url})")


def fetch_hub_file(
    repo_id: str,
    filename: str,
    dest: str | os.PathLike,
    *,
    revision: str,
    repo_type: str = "dataset",
    sha256: str | None = None,
    rows: int | None = None,
    json_columns: Sequence[str] = (),
) -> Path:
    """One file of a hub repository at ``revision``, copied to ``dest`` (verified; cached).

    The file is downloaded into the huggingface_hub cache, copied under a temporary name beside ``dest``,
    verified and renamed. ``json_columns``: the file is parquet and is stored as JSON (those columns,
    :func:`parquet_to_json`). Raises :class:`OfflineError` when the hub cannot be reached.
    """
    dest = Path(dest)
    if dest.is_file():
        try:
            verify(dest, sha256=sha256, rows=rows)
            return dest
        except VerificationError:
            pass
    try:
        cached = hub_file(repo_id, filename, revision=revision, repo_type=repo_type)
    except OfflineError as e:
        raise OfflineError(f"{e}: put the file at {dest} by hand") from e

    def copy(tmp: Path) -> None:
        if json_columns:
            parquet_to_json(cached, tmp, json_columns)
        else:
            shutil.copyfile(cached, tmp)

    return _install(
        dest, copy, sha256, rows, f"{dest} (from {repo_id}/{filename} at revision {revision})"
    )


def parquet_to_json(
    src: str | os.PathLike, dest: str | os.PathLike, columns: Sequence[str]
) -> None:
    """A parquet file's ``columns`` as a JSON array: of strings for the one column ``text``, else of
    objects; a missing column is named."""
    import json

    import polars as pl

    df = pl.read_parquet(src)
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise VerificationError(f"{src}: no column(s) {missing}; it has {df.columns}")
    data = df["text"].to_list() if list(columns) == ["text"] else df.select(columns).to_dicts()
    Path(dest).write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")


def _copy_local(src: Path, dest: Path, spec: RemoteFile) -> Path:
    return _install(
        dest,
        lambda tmp: shutil.copyfile(src, tmp),
        spec.sha256,
        spec.rows,
        f"{src} (copied to {dest})",
    )


# --------------------------------------------------------------------------------------------------------
# data sets


def _offline_message(ds: Dataset, dest_dir: Path, missing: Sequence[RemoteFile], cause: str) -> str:
    names = ", ".join(f.name for f in missing)
    local = [n for f in missing for n in f.local_names]
    alt = f" (or {', '.join(local)})" if local else ""
    copy = f", e.g. a copy of {ds.local_copy}" if ds.local_copy else ""
    checks = []
    for f in missing:
        c = []
        if f.rows is not None:
            c.append(f"{f.rows} rows")
        if f.sha256 is not None:
            c.append(f"sha256 {f.sha256}")
        if c:
            checks.append(f"{f.name}: {', '.join(c)}")
    return (
        f"{ds.name}: offline, {cause}. Put {names}{alt} into {dest_dir}/ (from {ds.where}{copy}), "
        f"or pass a local directory holding them as the source, then run again. The files are checked: "
        + "; ".join(checks)
    )


def dataset_root(path: str | os.PathLike, dataset: str) -> Path:
    """The folder of data set ``dataset`` (``.../data/<dataset>``, as the workflow lays out its
    downloads) that holds ``path``, a fetched file (whose name may hold folders: RWKU's
    Target/<folder>/<file>); ``path`` itself where it is an existing folder or lies in no such
    folder (a folder given as is)."""
    if Path(path).is_dir():
        return Path(path)
    parts = os.path.normpath(path).split(os.sep)
    for i in range(len(parts) - 2, -1, -1):
        if parts[i : i + 2] == ["data", dataset]:
            return Path(os.sep.join(parts[: i + 2]) or os.sep)
    return Path(path)


def fetch_files(
    ds: Dataset,
    dest_dir: str | os.PathLike,
    *,
    files: Iterable[str] | None = None,
    source: str | os.PathLike | None = None,
    revision: str | None = None,
) -> dict[str, Path]:
    """Fetch the files of data set ``ds`` (a benchmark's, :meth:`probunlearn.benchmarks.Benchmark.dataset`)
    into ``dest_dir``.

    ``files``: keys of ``ds.files``; by default ``ds.default``. ``source``: a local directory to
    copy them from instead of the network. ``revision``: overrides the pinned hub revision. Returns
    {key: path}. See the module docstring for caching, verification and the offline error.
    """
    name = ds.name
    keys = list(ds.default if files is None else files)
    unknown = [k for k in keys if k not in ds.files]
    if unknown:
        raise ValueError(f"{name}: unknown file(s) {unknown}; expected some of {list(ds.files)}")
    dest_dir = Path(dest_dir)
    src = None if source is None else Path(source)
    if src is not None and not src.is_dir():
        raise FileNotFoundError(f"{name}: local source directory {src} does not exist")
    out: dict[str, Path] = {}
    todo: list[str] = []
    for k in keys:
        spec = ds.files[k]
        dest = dest_dir / spec.name
        if _verified(dest, spec):
            out[k] = dest
        else:
            todo.append(k)
    for i, k in enumerate(todo):
        spec = ds.files[k]
        dest = dest_dir / spec.name
        if src is not None:
            cands = [src / n for n in (spec.name, *spec.local_names)]
            found = next((c for c in cands if c.is_file()), None)
            if found is None:
                raise FileNotFoundError(
                    f"{name}: {src} has no {' or '.join(c.name for c in cands)}; it is needed in "
                    f"{dest_dir}/ (from {ds.where})"
                )
            out[k] = _copy_local(found, dest, spec)
            continue
        try:
            if spec.url is not None:
                out[k] = fetch_url(spec.url, dest, sha256=spec.sha256, rows=spec.rows)
            else:
                out[k] = fetch_hub_file(
                    spec.repo_id,
                    spec.filename,
                    dest,
                    revision=revision or spec.revision,
                    repo_type=spec.repo_type,
                    sha256=spec.sha256,
                    rows=spec.rows,
                    json_columns=spec.json_columns,
                )
        except OfflineError as e:
            missing = [ds.files[m] for m in todo[i:]]
            c = e.__cause__ or e
            cause = f"{type(c).__name__}: {(str(c).splitlines() or [''])[0][:200]}"
            raise OfflineError(_offline_message(ds, dest_dir, missing, cause)) from e
    return out
