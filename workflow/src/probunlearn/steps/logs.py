"""Glue for the workflow's scripts: send a job's stdout/stderr (progress bars too) to its log."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def log_to(path: str | os.PathLike) -> Iterator[None]:
    """Redirect stdout and stderr to ``path`` for the duration of the block."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as fh, contextlib.redirect_stdout(fh), contextlib.redirect_stderr(fh):
        try:
            yield
        except BaseException:
            import traceback

            traceback.print_exc(file=fh)
            fh.flush()
            raise
        finally:
            sys.stdout.flush()
