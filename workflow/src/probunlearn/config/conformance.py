"""The conformance table (workflow/defaults/conformance.yaml): the paper's settings, a check of a
run's configuration against them, and its Markdown (``python -m probunlearn.config.conformance``).
"""

from __future__ import annotations

import fnmatch
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from probunlearn.config import effective_config, load_yaml, overlay_of
from probunlearn.storage.atomic import write_text

TABLE = Path("workflow/defaults/conformance.yaml")
_ABSENT = object()


@dataclass(frozen=True)
class Entry:
    """One setting of the table."""

    name: str  # the table's key, possibly with an @run suffix
    key: str  # the dotted config key, possibly with `*` for one level
    spec: Mapping[str, Any]

    def applies(self, run: str) -> bool:
        return run in self.spec.get("runs", [run])

    @property
    def wildcard(self) -> bool:
        return "*" in self.key

    def matches(self, path: tuple[str, ...]) -> bool:
        """Whether the leaf at ``path`` lies at or under this entry's key."""
        pat = self.key.split(".")
        return len(path) >= len(pat) and all(
            fnmatch.fnmatchcase(p, q) for p, q in zip(path, pat, strict=False)
        )

    def expected(self, run: str, names: list[str]) -> Any:
        """The value this run should have: the table's, or the run's listed deviation."""
        dev = self.spec.get("deviations", {}).get(run)
        if not self.wildcard:
            return dev["value"] if dev else self.spec["value"]
        value, devs = self.spec["value"], (dev or {}).get("value", {})
        base = {n: value[n] if isinstance(value, Mapping) else value for n in names}
        return {n: devs.get(n, base[n]) for n in names}


def load_table(root: str | Path = ".") -> tuple[dict[str, list[str]], list[Entry], dict[str, str]]:
    """(runs: {run: config files}, entries, other: {key prefix: why it is no paper setting})."""
    raw = load_yaml(Path(root) / TABLE)
    entries = [Entry(name, name.split("@")[0], spec) for name, spec in raw["settings"].items()]
    return raw["runs"], entries, raw["other"]


def run_config(files: list[str], root: str | Path = ".") -> dict[str, Any]:
    """A run's effective configuration, its files merged as ``snakemake --configfile`` does."""
    overlay = overlay_of([Path(root) / f for f in files if f != "config.yaml"])
    return effective_config(overlay, root)


def _wild_actual(key: str, cfg: Mapping[str, Any]) -> dict[str, Any]:
    """{name: value} of every key matching a pattern with one `*` (as the name)."""
    head, tail = key.split(".*.")
    node: Any = cfg
    for part in head.split("."):
        node = node.get(part, {}) if isinstance(node, Mapping) else {}
    out = {}
    for name, sub in (node or {}).items():
        for part in tail.split("."):
            sub = sub.get(part, _ABSENT) if isinstance(sub, Mapping) else _ABSENT
        if sub is not _ABSENT:
            out[name] = sub
    return out


def _leaf_paths(cfg: Mapping[str, Any], prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """The path of every leaf (keys may hold dots: sampling.settings["t0.5"])."""
    out = []
    for key, value in cfg.items():
        if isinstance(value, Mapping) and value:
            out += _leaf_paths(value, (*prefix, key))
        else:
            out.append((*prefix, key))
    return out


def _get(cfg: Mapping[str, Any], dotted: str) -> Any:
    node: Any = cfg
    for part in dotted.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return _ABSENT
        node = node[part]
    return node


def check_run(
    run: str, cfg: Mapping[str, Any], entries: list[Entry], other: Mapping[str, str]
) -> list[str]:
    """Each disagreement of a run's effective configuration with the table, as a message."""
    mine = [e for e in entries if e.applies(run)]
    specific = {e.key for e in mine if not e.wildcard}
    problems = []
    for e in mine:
        devs = e.spec.get("deviations", {})
        if e.wildcard:
            actual = _wild_actual(e.key, cfg)
            # a more specific entry (models.vicuna.template) takes its key from the wildcard's
            head, tail = e.key.split(".*.")
            actual = {n: v for n, v in actual.items() if f"{head}.{n}.{tail}" not in specific}
            if not actual:
                continue
            expected = e.expected(run, sorted(actual))
        else:
            actual = _get(cfg, e.key)
            if actual is _ABSENT:
                problems.append(
                    f"{run}: config key '{e.key}' is not set (table: {e.spec['value']!r})"
                )
                continue
            expected = e.expected(run, [])
        if run in devs and expected == e.expected("", sorted(actual) if e.wildcard else []):
            problems.append(f"{run}: '{e.name}' lists a deviation equal to the table's value")
        if e.spec.get("compare", True) and actual != expected:
            listed = "a listed deviation" if run in devs else "the table"
            problems.append(
                f"{run}: config key '{e.key}' is {actual!r}, {listed} says {expected!r} "
                f"({e.spec.get('source')}); list it under deviations with its reason"
            )
    for path in _leaf_paths(cfg):
        if any(e.matches(path) for e in mine):
            continue
        if any(path[: len(p.split("."))] == tuple(p.split(".")) for p in other):
            continue
        problems.append(f"{run}: config key '{'.'.join(path)}' is in no entry of {TABLE}")
    return problems


def _cell(value: Any) -> str:
    text = (
        "null" if value is None else str(value).lower() if isinstance(value, bool) else str(value)
    )
    return text.replace("|", "\\|").replace("\n", "\\n")


def render_markdown(root: str | Path = ".") -> str:
    """The table as Markdown: one row per setting, then its deviations per run."""
    runs, entries, other = load_table(root)
    out = [
        "# Conformance with the paper",
        "",
        f"Generated from `{TABLE}` by `python -m probunlearn.config.conformance docs/conformance.md`;",
        "`tests/config/test_conformance.py` checks the effective configuration of each run against it.",
        "Runs: " + ", ".join(f"`{r}` ({' + '.join(f)})" for r, f in runs.items()) + ".",
        "",
        "| key | setting | value | in the paper? | source | reading | deviations |",
        "|---|---|---|---|---|---|---|",
    ]
    for e in entries:
        s = e.spec
        devs = "; ".join(
            f"**{r}**: {_cell(d['value'])} ({_cell(d['reason'])})"
            for r, d in s.get("deviations", {}).items()
        )
        scope = f" (runs: {', '.join(s['runs'])})" if "runs" in s else ""
        out.append(
            f"| `{e.key}`{scope} | {_cell(s['what'])} | {_cell(s['value'])} | "
            f"{'yes' if s.get('paper') else 'no'} | {_cell(s.get('source', ''))} | "
            f"{_cell(s.get('reading', ''))} | {devs} |"
        )
    out += ["", "Keys that are no setting of the paper:", ""]
    out += [f"- `{k}`: {why}" for k, why in other.items()]
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Write the rendered table to the path given (default docs/conformance.md)."""
    import argparse

    ap = argparse.ArgumentParser(
        prog="python -m probunlearn.config.conformance",
        description="Render workflow/defaults/conformance.yaml as a markdown table.",
    )
    ap.add_argument("path", nargs="?", default="docs/conformance.md", help="the file to write")
    path = Path(ap.parse_args(sys.argv[1:] if argv is None else argv).path)
    write_text(render_markdown(), path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
