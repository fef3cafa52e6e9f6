"""The output directory of ``probunlearn evaluate``: what makes a directory an evaluation's, the one
lock of a call, and the names it binds to checkpoints.

- **Ownership.** ``evaluate`` writes only into a directory that does not exist yet, an empty one, or
  one it made: ``.probunlearn/evaluation.json`` (the marker, with a format version) or, from before
  the marker, ``.probunlearn/evaluated.json``. Anything else is refused before a byte is written,
  naming what was found (:func:`check_out`).
- **The lock.** ``.probunlearn/lock`` is created exclusively (``O_EXCL``) before anything else is
  written and removed when the call ends; it holds the process id, the host, the boot, the
  process's start time and since when. Another call on the directory is refused with who holds it.
  A lock whose process is gone (same host: no such process, another boot, or another process under
  the same id) is stale and taken over; one of another host cannot be checked here:
  ``probunlearn evaluate --out DIR --unlock`` removes it (:func:`unlock`).
- **Names.** ``.probunlearn/names.json`` binds each model name to its checkpoint (source, revision,
  base): the same checkpoint with new content reruns its jobs, another one under a used name is
  refused unless ``--replace NAME`` is given (:func:`check_names`).
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import os
import shutil
import socket
from collections.abc import Iterable, Mapping
from pathlib import Path

from probunlearn.storage.atomic import write_text

FORMAT = 1
"""The layout version of an evaluation directory this code writes (the marker's ``format``)."""
STATE = ".probunlearn"
MARKER = f"{STATE}/evaluation.json"
LEGACY = f"{STATE}/evaluated.json"
"""The record of the evaluated models (a directory with it and no marker is an older version's)."""
LOCK = f"{STATE}/lock"
NAMES = f"{STATE}/names.json"
BOUND = ("source", "revision", "base")
"""What binds a name: a name given again with these equal is the same checkpoint."""


class OutDirError(ValueError):
    """An output directory that ``evaluate`` may not write into, or cannot; the message says why."""


class LockedError(OutDirError):
    """Another call holds the output directory's lock."""


# ---- ownership ---------------------------------------------------------------------------------


def _entries(out: Path) -> list[str]:
    """The directory's entries, ``.probunlearn`` counted only when it holds more than a lock."""
    names = sorted(os.listdir(out))
    state = out / STATE
    if STATE in names and state.is_dir() and set(os.listdir(state)) <= {"lock"}:
        names.remove(STATE)  # a call that took the lock and stopped before the marker
    return names


def check_out(out: str | os.PathLike) -> str:
    """Whether ``evaluate`` may write into ``out``: ``"new"`` (it does not exist; its parent is a
    directory), ``"empty"`` or ``"ours"``; else :class:`OutDirError` saying what is there."""
    out = Path(out)
    if out.is_symlink() and not out.exists():
        raise OutDirError(f"--out {out}: a broken symbolic link; expected a directory")
    if not out.exists():
        parent = next((p for p in out.absolute().parents if p.exists()), None)
        if parent is not None and not parent.is_dir():
            raise OutDirError(f"--out {out}: {parent} is a file, not a directory")
        return "new"
    if not out.is_dir():
        raise OutDirError(
            f"--out {out}: a file, not a directory; give a new or empty directory (or one an "
            "earlier probunlearn evaluate made)"
        )
    marker = out / MARKER
    if marker.is_file():
        try:
            fmt = int(json.loads(marker.read_text()).get("format", 0))
        except (OSError, ValueError, TypeError, AttributeError) as e:
            raise OutDirError(f"--out {out}: {marker} is damaged ({e}); expected JSON") from e
        if fmt > FORMAT:
            raise OutDirError(
                f"--out {out}: an evaluation of format {fmt}, written by a newer probunlearn "
                f"(this one writes format {FORMAT}); upgrade probunlearn or use another --out"
            )
        return "ours"
    if (out / LEGACY).is_file():
        return "ours"
    found = _entries(out)
    if not found:
        return "empty"
    shown = ", ".join(found[:6]) + (f", ... ({len(found)} entries)" if len(found) > 6 else "")
    raise OutDirError(
        f"--out {out}: not empty and not an evaluation directory (it holds {shown}); "
        "probunlearn evaluate writes only into a new or empty directory, or one it made "
        f"({MARKER}): give another --out"
    )


def claim(out: str | os.PathLike) -> None:
    """Mark ``out`` as an evaluation directory (the marker), if it is not marked yet."""
    marker = Path(out) / MARKER
    if marker.is_file():
        return
    record = {"format": FORMAT, "tool": "probunlearn evaluate", "created": _now()}
    write_text(json.dumps(record, indent=1) + "\n", marker)


def inside(path: str | os.PathLike, directory: str | os.PathLike) -> bool:
    """Whether ``path`` is ``directory`` or lies below it (both resolved)."""
    p, d = Path(path).resolve(), Path(directory).resolve()
    return p == d or d in p.parents


# ---- the lock -----------------------------------------------------------------------------------


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def _boot_id() -> str | None:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return None


def _start_time(pid: int) -> str | None:
    """A process's start time (clock ticks after boot, Linux), which a reused process id lacks."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rpartition(")")[2].split()[19]


def _holder() -> dict:
    pid = os.getpid()
    return {
        "pid": pid,
        "host": socket.gethostname(),
        "boot": _boot_id(),
        "start": _start_time(pid),
        "since": _now(),
    }


def _read_lock(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        return {}  # written only in part: its process died while writing it


def lock_state(holder: Mapping) -> str:
    """``"alive"``, ``"gone"`` (a stale lock) or ``"unknown"`` (another host's process)."""
    if holder.get("host") != socket.gethostname():
        return "unknown"
    if holder.get("boot") and _boot_id() and holder["boot"] != _boot_id():
        return "gone"  # the machine rebooted since
    try:
        pid = int(holder["pid"])
        os.kill(pid, 0)
    except (KeyError, TypeError, ValueError, ProcessLookupError):
        return "gone"
    except PermissionError:
        pass  # another user's process: it exists
    start = _start_time(pid)
    if holder.get("start") and start and start != holder["start"]:
        return "gone"  # the id now names another process
    return "alive"


def describe(holder: Mapping) -> str:
    """Who holds a lock, in words."""
    if not holder:
        return "a call whose lock file is unreadable"
    return f"process {holder.get('pid')} on host {holder.get('host')}, since {holder.get('since')}"


class Lock:
    """The lock of one call on an output directory (a context manager); :meth:`acquire` raises
    :class:`LockedError` while another live call holds it, and takes over a stale one."""

    def __init__(self, out: str | os.PathLike):
        self.out = Path(out)
        self.path = self.out / LOCK
        self.held = False
        self.stale: dict | None = None
        self.created: list[Path] = []

    def acquire(self) -> Lock:
        for p in (self.out, self.out / STATE):
            if not p.exists():
                self.created.append(p)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        for _ in range(3):
            try:
                fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            except FileExistsError:
                holder = _read_lock(self.path)
                if holder is None:
                    continue  # released meanwhile
                state = lock_state(holder) if holder else "gone"
                if state == "gone":
                    self.stale = holder
                    with contextlib.suppress(FileNotFoundError):
                        self.path.unlink()
                    continue
                where = "" if state == "alive" else " (on another host: not checked from here)"
                raise LockedError(
                    f"--out {self.out}: another probunlearn evaluate is running there "
                    f"({describe(holder)}){where}; wait for it to finish, or if that process is "
                    f"gone, run: probunlearn evaluate --out {self.out} --unlock"
                ) from None
            with os.fdopen(fd, "w") as f:
                f.write(json.dumps(_holder()) + "\n")
            self.held = True
            return self
        raise LockedError(f"--out {self.out}: could not take the lock {self.path}")

    def release(self) -> None:
        if self.held:
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()
            self.held = False

    def abandon(self) -> None:
        """Release, and remove what :meth:`acquire` created where nothing else was written."""
        self.release()
        for p in reversed(self.created):
            with contextlib.suppress(OSError):
                p.rmdir()

    def __enter__(self) -> Lock:
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()


def unlock(out: str | os.PathLike) -> list[str]:
    """``--unlock``: remove a stale lock of ``out`` (ours and Snakemake's own); the lines to show.
    Refuses while the lock's process is alive on this host."""
    out = Path(out)
    if check_out(out) != "ours":
        raise OutDirError(f"--out {out}: not an evaluation directory; nothing to unlock")
    said = []
    holder = _read_lock(out / LOCK)
    if holder is not None:
        if holder and lock_state(holder) == "alive":
            raise LockedError(
                f"--out {out}: the lock is held by a running call ({describe(holder)}); stop "
                "that process first"
            )
        (out / LOCK).unlink(missing_ok=True)
        said.append(f"removed the lock of {describe(holder)}")
    snake = out / ".snakemake" / "locks"
    if snake.is_dir() and any(snake.iterdir()):
        shutil.rmtree(snake)
        said.append("removed Snakemake's lock (.snakemake/locks)")
    return said or ["no lock to remove"]


# ---- inputs ---------------------------------------------------------------------------------------


def write_sets(out: str | os.PathLike, sets: Mapping, paths: Mapping[str, str]) -> list[str]:
    """Write each data set (a polars frame) to its path under ``out`` where its bytes differ from
    the file there; the names of those written. A set whose content is unchanged keeps its file
    and its modification time, so adding a set (``--holdout``) reruns only what reads it."""
    import io

    from probunlearn.storage.atomic import PARQUET, atomic_write

    written = []
    for name, path in paths.items():
        buf = io.BytesIO()
        sets[name].write_parquet(buf, **PARQUET)
        data, target = buf.getvalue(), Path(out) / path
        if target.is_file() and target.read_bytes() == data:
            continue
        atomic_write(target, lambda tmp, data=data: tmp.write_bytes(data))
        written.append(name)
    return written


# ---- names ----------------------------------------------------------------------------------------


def read_record(out: str | os.PathLike) -> dict[str, dict]:
    """The models evaluated in ``out`` so far (name -> role, source, revision, base, identity and
    the key of their results' data and settings), in order."""
    try:
        return dict(json.loads((Path(out) / LEGACY).read_text()))
    except (OSError, ValueError):
        return {}


def record_models(out: str | os.PathLike, models: Mapping[str, Mapping]) -> None:
    """Add models to the record of ``out`` (after a run that made their results)."""
    record = read_record(out) | {n: dict(m) for n, m in models.items()}
    write_text(json.dumps(record, indent=1) + "\n", Path(out) / LEGACY)


def read_names(out: str | os.PathLike) -> dict[str, dict]:
    """Name -> the checkpoint it is bound to in ``out`` (from the names file, else from the record
    of evaluated models an older version wrote)."""
    out = Path(out)
    for path in (out / NAMES, out / LEGACY):
        if path.is_file():
            try:
                data = json.loads(path.read_text())
            except ValueError:
                continue
            return {n: {k: (m or {}).get(k) for k in BOUND} for n, m in data.items()}
    return {}


def _show(spec: Mapping) -> str:
    text = str(spec.get("source"))
    if spec.get("revision"):
        text += f"@{spec['revision']}"
    if spec.get("base"):
        text += f" on {spec['base']}"
    return text


def check_names(
    out: str | os.PathLike, specs: Mapping[str, Mapping], replace: Iterable[str] = ()
) -> None:
    """Refuse a name that ``out`` binds to another checkpoint, naming both (unless replaced)."""
    bound, replace = read_names(out), set(replace)
    for name, spec in specs.items():
        old = bound.get(name)
        if old is None or name in replace:
            continue
        if any(str(old.get(k) or "") != str(spec.get(k) or "") for k in BOUND):
            raise OutDirError(
                f"model name {name!r} is bound in {out} to {_show(old)}, and this call gives "
                f"{_show(spec)}: use another name, or --replace {name} to replace its results"
            )


def bind_names(out: str | os.PathLike, specs: Mapping[str, Mapping]) -> None:
    """Bind this call's names to their checkpoints (kept with every earlier binding)."""
    names = read_names(out)
    names.update({n: {k: s.get(k) for k in BOUND} for n, s in specs.items()})
    write_text(json.dumps(names, indent=1, sort_keys=True) + "\n", Path(out) / NAMES)
