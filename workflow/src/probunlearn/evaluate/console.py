"""A quiet console for ``probunlearn evaluate``: Snakemake's output goes to a log, the console shows
the jobs to run, one progress display over them and, where a job fails, its error.

Snakemake prints a block of a dozen lines per job (rule, inputs, outputs, reason, resources); read
line by line, its ``Job stats`` table gives the jobs to run, ``Finished jobid: k (Rule: r)`` and
``i of N steps (p%) done`` the progress. On a terminal the progress is one line rewritten in place;
elsewhere (a log, a CI job) one line per job done.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

STEPS = re.compile(r"^(\d+) of (\d+) steps \((\d+)%\) done")
FINISHED = re.compile(r"^Finished jobid: \d+ \(Rule: (\w+)\)")
STAT = re.compile(r"^(\w+)\s+(\d+)$")
NOTHING = "Nothing to be done"
ERROR = re.compile(r"^(Error in rule|\w*(Error|Exception)\b)")


class Progress:
    """Turns Snakemake's output, line by line, into the quiet console's lines."""

    def __init__(self, stream: TextIO, tty: bool | None = None, width: int = 24):
        self.stream = stream
        self.tty = stream.isatty() if tty is None else tty
        self.width = width
        self.stats: dict[str, int] = {}
        self.in_stats = False
        self.done = 0
        self.total = 0
        self.nothing = False

    def feed(self, line: str) -> None:
        """Read one line of Snakemake's output."""
        text = line.strip()
        if text.startswith("Job stats:"):
            self.in_stats, self.stats = True, {}
            return
        if self.in_stats:
            m = STAT.match(text)
            if m and m[1] == "total":
                self.in_stats, self.total = False, int(m[2])
                jobs = ", ".join(f"{r} {k}" for r, k in self.stats.items() if r != "all")
                self._line(f"{self.total} job(s) to run: {jobs}")
            elif m:
                self.stats[m[1]] = int(m[2])
            return
        if text.startswith(NOTHING):
            self.nothing = True
            self._line("Nothing to be done: every output is up to date.")
            return
        m = FINISHED.match(text)
        if m:
            self.rule = m[1]
            return
        m = STEPS.match(text)
        if m:
            self.done, self.total = int(m[1]), int(m[2])
            self._progress(getattr(self, "rule", ""))

    def _progress(self, rule: str) -> None:
        pct = 100 * self.done // max(self.total, 1)
        if self.tty:
            filled = self.width * self.done // max(self.total, 1)
            bar = "#" * filled + "." * (self.width - filled)
            end = "\n" if self.done == self.total else ""
            rule = "" if rule == "all" else rule
            self.stream.write(f"\r[{bar}] {self.done}/{self.total} jobs ({pct}%) {rule:<14}{end}")
            self.stream.flush()
        else:
            self._line(f"[{self.done}/{self.total}] " + ("done" if rule == "all" else rule))

    def _line(self, text: str) -> None:
        self.stream.write(text + "\n")
        self.stream.flush()


def error_lines(lines: Sequence[str], limit: int = 40) -> list[str]:
    """The lines of a failed run worth showing: from the first error to the end, at most
    ``limit`` (the last ones)."""
    start = next((i for i, line in enumerate(lines) if ERROR.match(line.strip())), None)
    tail = lines[start:] if start is not None else lines[-limit:]
    return [line.rstrip("\n") for line in tail[-limit:]]


def run_quietly(
    cmd: Sequence[str], log: str | os.PathLike, *, dry_run: bool = False, stream: TextIO = None
) -> int:
    """Run Snakemake's command line ``cmd``; its output goes to ``log`` (written under a temporary
    name, renamed when it ends), the console gets the quiet lines. A dry run shows Snakemake's job
    table; a failed run the error and the log's path. Returns Snakemake's exit status."""
    stream = stream or sys.stderr
    log = Path(log)
    log.parent.mkdir(parents=True, exist_ok=True)
    tmp = log.with_name(log.name + ".tmp")
    progress = Progress(stream)
    lines: list[str] = []
    with open(tmp, "w", encoding="utf-8") as f:
        proc = subprocess.Popen(
            list(cmd), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1
        )
        assert proc.stdout is not None
        for line in proc.stdout:
            f.write(line)
            lines.append(line)
            if dry_run:
                continue
            progress.feed(line)
        rc = proc.wait()
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
        stream.write(f"Snakemake's whole output: {log}\n")
    stream.flush()
    return rc
