"""Writing files so that nothing half written is ever left under the final name.

Every artifact is written to a temporary name beside its destination and renamed onto it (an atomic
replace on one file system); a failed write removes its temporary file. One parquet setting for all
tables: zstd at level 3 with column statistics, so the same frame always gives the same bytes.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # polars only in annotations: a GPU job that writes no table need not have it
    import polars as pl

PARQUET = {"compression": "zstd", "compression_level": 3, "statistics": True}


def _temporary(out: Path) -> Path:
    """A fresh name beside ``out`` (created by the writer, so it gets the usual permissions)."""
    return out.with_name(f".{out.name}.{os.getpid()}-{uuid.uuid4().hex[:8]}.tmp")


def atomic_write(
    path: str | os.PathLike,
    write: Callable[[Path], None],
    check: Callable[[Path], None] | None = None,
) -> Path:
    """Call ``write(tmp)`` on a fresh temporary file beside ``path``, then rename it onto ``path``;
    ``check(tmp)`` (a download's verification) runs before the rename, and an error in either
    removes the temporary file and leaves ``path`` as it was."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = _temporary(out)
    try:
        write(tmp)
        if check is not None:
            check(tmp)
        os.replace(tmp, out)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    return out


def atomic_dir(path: str | os.PathLike, write: Callable[[Path], None]) -> Path:
    """Call ``write(tmp)`` on a fresh temporary directory beside ``path``, then put it in place of
    ``path`` (a model or tokenizer directory), replacing an older one."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = _temporary(out)
    try:
        tmp.mkdir()
        write(tmp)
        if out.exists():
            shutil.rmtree(out)
        os.replace(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out


def write_parquet(df: pl.DataFrame, path: str | os.PathLike) -> Path:
    """A frame as parquet (the one setting :data:`PARQUET`), atomically."""
    return atomic_write(path, lambda tmp: df.write_parquet(tmp, **PARQUET))


def write_csv(df: pl.DataFrame, path: str | os.PathLike) -> Path:
    """A frame as CSV, atomically."""
    return atomic_write(path, df.write_csv)


def write_text(text: str, path: str | os.PathLike) -> Path:
    """A text file (UTF-8), atomically."""
    return atomic_write(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def write_json(obj: Any, path: str | os.PathLike) -> Path:
    """JSON with sorted keys and one-space indent, atomically."""
    return write_text(json.dumps(obj, indent=1, sort_keys=True) + "\n", path)
