"""``probunlearn config``: print a run's effective configuration without running anything."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import yaml

from probunlearn.config import config_sources, effective_config, load_yaml, overlay_of


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register the ``config`` command."""
    p = sub.add_parser(
        "config",
        help="print the effective configuration of a run (its files merged as Snakemake does)",
        description=(
            "Print the configuration a run uses: config.yaml, or the base a file names with "
            "`base: paper`, with the --configfile files laid over it in order. The same merge "
            "the workflow makes; the workflow also writes it to results/{run}/config.yaml."
        ),
    )
    p.add_argument("--configfile", nargs="*", default=[], help="config files, as for snakemake")
    p.add_argument("--root", default=".", help="the repository root (default: .)")
    p.add_argument(
        "--sources", action="store_true", help="print, per key, the file its value comes from"
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Print the effective configuration (or each key's source) as YAML."""
    root = Path(args.root)
    if args.sources:
        named = [(str(f), load_yaml(f)) for f in args.configfile]
        out = config_sources(named, root)
    else:
        out = effective_config(overlay_of(args.configfile), root)
    yaml.safe_dump(out, sys.stdout, sort_keys=False, allow_unicode=True, width=100)
    return 0
