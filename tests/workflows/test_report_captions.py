"""Every caption of the workflow's HTML report (`snakemake --report`) is valid reStructuredText.

Snakemake renders a caption as a Jinja template (its own Environment, with the link targets it
appends to every caption) and passes the result to docutils' HTML writer, which reports a bad
caption as a docutils message (`(ERROR/3) Undefined substitution referenced: ...`) inside the report
and on stderr. This test does the same for workflow/report/*.rst and every benchmark's report.rst,
with the link block read from the installed snakemake, and fails on any warning or error; a
finished run is not needed."""

from __future__ import annotations

import inspect
import io
import re
import textwrap
import warnings
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from helpers import ROOT


def _snakemake_links() -> str:
    """The link block snakemake's report appends to every caption (snakemake.report.auto_report)."""
    import snakemake.report

    source = inspect.getsource(snakemake.report.auto_report)
    m = re.search(r'rst_links = textwrap\.dedent\(\s*"""(.*?)"""', source, re.S)
    assert m, "snakemake.report.auto_report no longer defines rst_links: update this test"
    return textwrap.dedent(m.group(1))


def caption_messages(text: str, config: dict | None = None) -> list[str]:
    """The docutils messages (warnings and worse) of one caption, rendered as snakemake renders
    it: Jinja (trim_blocks, lstrip_blocks; ``snakemake``, ``categories``, ``files``), then
    ``publish_parts(..., writer_name="html")``."""
    from docutils.core import publish_parts
    from jinja2 import Environment

    env = Environment(trim_blocks=True, lstrip_blocks=True)
    stub = SimpleNamespace(config=config or {}, input=[], output=[], params={}, wildcards={})
    rendered = env.from_string(text + _snakemake_links()).render(
        snakemake=stub, categories={}, files=[]
    )
    stream = io.StringIO()
    with warnings.catch_warnings():  # snakemake's call: writer_name, which docutils 2 will drop
        warnings.simplefilter("ignore", PendingDeprecationWarning)
        parts = publish_parts(
            rendered,
            writer_name="html",
            settings_overrides={"warning_stream": stream, "report_level": 2, "halt_level": 5},
        )
    messages = [line for line in stream.getvalue().splitlines() if line.strip()]
    if 'class="system-message"' in parts["body"] and not messages:
        messages.append("a system message in the rendered caption")
    return messages


def captions() -> list[Path]:
    """The report's captions: the workflow's and every benchmark's."""
    found = sorted((ROOT / "workflow" / "report").glob("*.rst"))
    found += sorted((ROOT / "workflow" / "src" / "probunlearn" / "benchmarks").glob("*/report.rst"))
    return found


def test_every_report_caption_is_valid_restructuredtext():
    config = yaml.safe_load((ROOT / "config.yaml").read_text())
    paths = captions()
    assert len(paths) >= 20 and any(p.name == "dcue_meta.rst" for p in paths)
    assert any("benchmarks" in p.parts for p in paths), "a benchmark's report.rst"
    bad = {str(p.relative_to(ROOT)): caption_messages(p.read_text(), config) for p in paths}
    assert {k: v for k, v in bad.items() if v} == {}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # dcue_meta.rst as it was (issue 53): |...| is a substitution reference
        (
            "mean_abs_log10_shift: mean |change of log10 p| under that fine-tune",
            "Undefined substitution",
        ),
        ("a *broken emphasis", "Inline emphasis start-string without end-string"),
        ("A longer title\n=====\n\ntext", "Title underline too short"),
    ],
)
def test_the_check_catches_what_docutils_reports(text, expected):
    messages = caption_messages(text)
    assert any(expected in m for m in messages), messages


def test_the_caption_links_snakemake_appends_are_rendered_too():
    """Snakemake's link block is part of what docutils reads (its targets raise no message)."""
    links = _snakemake_links()
    assert ".. _Workflow: javascript:show_panel('workflow')" in links
    assert caption_messages("Plain text.") == []
