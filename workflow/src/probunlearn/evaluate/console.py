"""A quiet console for ``probunlearn evaluate``: Snakemake's output goes to a log, the console shows
the jobs to run, one progress display over them and, where a job fails, its error. On a terminal the
progress is one line rewritten in place; elsewhere one line per job done, and one every
:data:`QUIET_EVERY` seconds while a long job runs.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

STEPS = re.compile(r"^(\d+) of (\d+) steps \((\d+)%\) done")
FINISHED = re.compile(r"^Finished jobid: (\d+) \(Rule: (\w+)\)")
RULE = re.compile(r"^(?:local)?rule (\w+):$")
FIELD = re.compile(r"^\s+(\w+): (.*)$")
STAT = re.compile(r"^(\w+)\s+(\d+)$")
BAR = re.compile(r"(\d+)/(\d+) \[")
NOTHING = "Nothing to be done"
ERROR = re.compile(r"^(Error in rule|\w*(Error|Exception)\b)")
FULL = ("No space left on device", "Errno 28")
QUIET_EVERY = 30.0
"""Seconds between the lines a long job prints off a terminal."""


def label_of(job: dict) -> str:
    """What a job is on: ``sample_shard a/questions shard 0``, ``score a/questions``."""
    wildcards = job["wildcards"]
    parts = [wildcards[k] for k in ("model", "evalset") if k in wildcards]
    label = job["rule"] + (" " + "/".join(parts) if parts else "")
    return label + (f" shard {wildcards['k']}" if "k" in wildcards else "")


def log_progress(path: Path) -> tuple[int, int] | None:
    """The last ``done/total`` of the progress bar in a job's log, or None."""
    try:
        with open(path, "rb") as f:
            f.seek(max(0, os.path.getsize(path) - 4096))
            tail = f.read().decode("utf-8", "replace")
    except OSError:
        return None
    found = BAR.findall(tail)
    return (int(found[-1][0]), int(found[-1][1])) if found else None


class Progress:
    """Turns Snakemake's output, line by line, into the quiet console's lines."""

    def __init__(self, stream: TextIO, tty: bool | None = None, width: int = 24, root: Path = None):
        self.stream = stream
        self.tty = stream.isatty() if tty is None else tty
        self.width = width
        self.root = Path(root) if root is not None else None
        self.stats: dict[str, int] = {}
        self.in_stats = False
        self.done = 0
        self.total = 0
        self.nothing = False
        self.jobs: dict[str, dict] = {}  # jobid -> rule, wildcards, log, started, said
        self.running: list[str] = []
        self.block: dict | None = None
        self.lock = threading.Lock()
        self.last_line = ""

    def feed(self, line: str) -> None:
        """Read one line of Snakemake's output."""
        text = line.rstrip("\n")
        stripped = text.strip()
        if self.block is not None:
            m = FIELD.match(text)
            if m:
                self._field(self.block, m[1], m[2])
                return
            self.block = None
        m = RULE.match(stripped)
        if m:
            now = time.monotonic()
            self.block = {"rule": m[1], "wildcards": {}, "log": None, "started": now, "said": now}
            return
        if stripped.startswith("Job stats:"):
            self.in_stats, self.stats = True, {}
            return
        if self.in_stats:
            m = STAT.match(stripped)
            if m and m[1] == "total":
                self.in_stats, self.total = False, int(m[2])
                jobs = ", ".join(f"{r} {k}" for r, k in self.stats.items() if r != "all")
                self._line(f"{self.total} job(s) to run: {jobs}")
            elif m:
                self.stats[m[1]] = int(m[2])
            return
        if stripped.startswith(NOTHING):
            self.nothing = True
            self._line("Nothing to be done: every output is up to date.")
            return
        m = FINISHED.match(stripped)
        if m:
            job = self.jobs.get(m[1], {"rule": m[2], "wildcards": {}})
            with self.lock:
                if m[1] in self.running:
                    self.running.remove(m[1])
            self.finished = "done" if job["rule"] == "all" else label_of(job)
            return
        m = STEPS.match(stripped)
        if m:
            self.done, self.total = int(m[1]), int(m[2])
            self._progress(getattr(self, "finished", ""))

    def _field(self, job: dict, key: str, value: str) -> None:
        """One line of a job's block: its log, wildcards and id (the job runs from then on: its
        block ends only with the next line Snakemake prints, often once the job is done)."""
        if key == "log":
            job["log"] = value.split(", ")[0]
        elif key == "wildcards":
            job["wildcards"] = dict(kv.split("=", 1) for kv in value.split(", ") if "=" in kv)
        elif key == "jobid":
            self.jobs[value] = job
            with self.lock:
                self.running.append(value)

    def _progress(self, label: str) -> None:
        pct = 100 * self.done // max(self.total, 1)
        if self.tty:
            filled = self.width * self.done // max(self.total, 1)
            bar = "#" * filled + "." * (self.width - filled)
            end = "\n" if self.done == self.total else ""
            label = "" if label == "done" else label
            self._write(f"\r[{bar}] {self.done}/{self.total} jobs ({pct}%) {label:<30}{end}")
        else:
            self._line(f"[{self.done}/{self.total}] {label}")

    def poll(self) -> None:
        """Show how far the running jobs are, from their logs' progress bars."""
        if self.root is None:
            return
        now = time.monotonic()
        with self.lock:
            running = [self.jobs[j] for j in self.running]
        shown = []
        for job in running:
            if job["log"] is None:
                continue
            got = log_progress(self.root / job["log"])
            if got is None or got[1] == 0:
                continue
            text = f"{label_of(job)}: {got[0]}/{got[1]} ({100 * got[0] // got[1]}%)"
            if self.tty:
                shown.append(text)
            elif now - job["said"] >= QUIET_EVERY:
                job["said"] = now
                self._line(f"  ... {text}")
        if self.tty and shown:
            pct = 100 * self.done // max(self.total, 1)
            self._write(f"\r{self.done}/{self.total} jobs ({pct}%) · " + "; ".join(shown)[:100])

    def _write(self, text: str) -> None:
        with self.lock:
            self.stream.write(text)
            self.stream.flush()

    def _line(self, text: str) -> None:
        self._write(text + "\n")


def error_lines(lines: Sequence[str], limit: int = 40) -> list[str]:
    """The lines of a failed run worth showing: from the first error on, the last ``limit``."""
    start = next((i for i, line in enumerate(lines) if ERROR.match(line.strip())), None)
    tail = lines[start:] if start is not None else lines[-limit:]
    return [line.rstrip("\n") for line in tail[-limit:]]


def disk_full(lines: Sequence[str], root: Path | None) -> bool:
    """Whether a failed run ran out of disk space, per Snakemake's output or a failed job's log."""
    if any(mark in line for line in lines for mark in FULL):
        return True
    logs = [m[1] for line in lines if (m := re.match(r"^\s+log: (\S+)", line))]
    for log in logs:
        path = Path(log) if root is None else root / log
        try:
            text = path.read_text(errors="replace")[-20000:]
        except OSError:
            continue
        if any(mark in text for mark in FULL):
            return True
    return False


def stop(proc: subprocess.Popen, grace: float = 30.0) -> None:
    """Let Snakemake end its jobs after an interrupt (it got the signal too), then stop it."""
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()


def run_quietly(
    cmd: Sequence[str],
    log: str | os.PathLike,
    *,
    dry_run: bool = False,
    stream: TextIO = None,
    root: str | os.PathLike | None = None,
) -> int:
    """Run Snakemake's ``cmd`` with its output in ``log`` (renamed into place when it ends) and
    the quiet lines on the console; returns its exit status. ``root``: the directory the jobs' logs
    are relative to. Ctrl-C stops Snakemake and raises ``KeyboardInterrupt``."""
    stream = stream or sys.stderr
    log = Path(log)
    log.parent.mkdir(parents=True, exist_ok=True)
    tmp = log.with_name(log.name + ".tmp")
    root = Path(root) if root is not None else None
    progress = Progress(stream, root=root)
    lines: list[str] = []
    done = threading.Event()

    def watch() -> None:
        while not done.wait(1.0):
            progress.poll()

    watcher = threading.Thread(target=watch, daemon=True)
    with open(tmp, "w", encoding="utf-8") as f:
        proc = subprocess.Popen(
            list(cmd), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1
        )
        assert proc.stdout is not None
        if not dry_run and root is not None:
            watcher.start()
        try:
            for line in proc.stdout:
                f.write(line)
                lines.append(line)
                if dry_run:
                    continue
                progress.feed(line)
            rc = proc.wait()
        except KeyboardInterrupt:
            stop(proc)
            raise
        finally:
            done.set()
            f.flush()
            os.replace(tmp, log)
    if dry_run and rc == 0:
        text = "".join(lines)
        if NOTHING in text:
            stream.write("Nothing to be done: every output is up to date.\n")
        elif "Job stats:" in text:
            table = text.split("Job stats:", 1)[1].split("\n\n", 1)[0]
            stream.write("Job stats:" + table + "\n")
    if rc != 0:
        stream.write(f"probunlearn evaluate: Snakemake failed (exit status {rc}):\n")
        stream.write("\n".join(error_lines(lines)) + "\n")
        if disk_full(lines, root):
            stream.write(
                "The disk filled up (Errno 28, no space left on device): free some space and run "
                "the same command again; it resumes where it stopped.\n"
            )
        stream.write(f"Snakemake's whole output: {log}\n")
    stream.flush()
    return rc
