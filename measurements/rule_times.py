"""Time per rule of the last run of a results folder, from Snakemake's job metadata.

    python measurements/rule_times.py results/mini

Snakemake records, for every output file, the rule, start and end time of the job that wrote it
(.snakemake/metadata). One job = one (rule, job hash); records of outputs that no longer exist are\nskipped. Prints, per rule, the number of jobs, the
summed job time, the longest job, and the wall time from the first job's start to the last job's end.
"""

from __future__ import annotations

import base64
import json
import sys
from collections import defaultdict
from pathlib import Path


def jobs(
    prefix: str, meta_dir: Path = Path(".snakemake/metadata")
) -> dict[tuple[str, float], float]:
    """(rule, start) → end, for the jobs whose outputs lie under ``prefix``."""
    out: dict[tuple[str, float], float] = {}
    for f in meta_dir.iterdir():
        try:
            path = base64.urlsafe_b64decode(f.name + "=" * (-len(f.name) % 4)).decode()
            meta = json.loads(f.read_text())
        except (ValueError, OSError):
            continue
        if not path.startswith(prefix) or not meta.get("starttime") or not meta.get("endtime"):
            continue
        if not Path(path).exists():  # a record of an output that a later change removed
            continue
        key = (meta["rule"], meta.get("job_hash", meta["starttime"]))
        start, end = out.get(key, (meta["starttime"], meta["endtime"]))
        out[key] = (min(start, meta["starttime"]), max(end, meta["endtime"]))
    return out


def main(prefix: str) -> None:
    js = jobs(prefix.rstrip("/") + "/")
    if not js:
        sys.exit(f"no job metadata for outputs under {prefix!r} (run from the repository root)")
    per: dict[str, list[float]] = defaultdict(list)
    for (rule, _), (start, end) in js.items():
        per[rule].append(end - start)
    start = min(s for s, _ in js.values())
    end = max(e for _, e in js.values())
    print(f"{'rule':<16} {'jobs':>5} {'job-s':>9} {'max s':>7}")
    for rule, ts in sorted(per.items(), key=lambda kv: -sum(kv[1])):
        print(f"{rule:<16} {len(ts):>5} {sum(ts):>9.0f} {max(ts):>7.0f}")
    total = sum(sum(ts) for ts in per.values())
    print(f"{'all':<16} {len(js):>5} {total:>9.0f}")
    wall = end - start
    print(f"wall time, first job start to last job end: {wall:.0f} s ({wall / 60:.1f} min)")
    print(f"mean number of jobs running: {total / wall:.2f}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "results/mini")
