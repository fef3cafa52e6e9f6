"""Command-line entry point: ``probunlearn <command> ...``."""

from __future__ import annotations

import argparse
import sys


def main(argv: list[str] | None = None) -> int:
    """Run the ``probunlearn`` console script."""
    parser = argparse.ArgumentParser(prog="probunlearn", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    from probunlearn.cli import bounds, config, evaluate

    bounds.add_parser(sub)
    config.add_parser(sub)
    evaluate.add_parser(sub)
    args = parser.parse_args(argv)
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
