"""``probunlearn evaluate``: the probabilistic verdict on anyone's checkpoints, through Snakemake.

The command checks every option and input (numbers, device, template, models, adapters, data,
judge) before any job runs, writing nothing to ``<out>`` when one is wrong; then it writes
``<out>/evaluate.yaml`` and runs the packaged workflow (``probunlearn/evaluate/workflow/Snakefile``)
in ``<out>``, so every artifact is cached there: a second call with one more model samples only that
model, a checkpoint changed in place (its content fingerprint) reruns exactly its jobs, and the
summary lists every model evaluated in ``<out>`` so far. The console shows the plan, one line per
job done and the outputs (Snakemake's own output: ``<out>/logs/evaluate.log``, or ``--verbose``).
"""

from __future__ import annotations

import argparse
import errno
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from probunlearn.benchmarks import help_choices
from probunlearn.steps.specs import SAMPLING_OPTIONS
from probunlearn.storage import outdir

SNAKEFILE = Path(__file__).resolve().parent.parent / "evaluate" / "workflow" / "Snakefile"
FINGERPRINTS = ".probunlearn/fingerprints.json"  # relative to --out, as the Snakefile reads it


class UsageError(ValueError):
    """A command-line value that cannot be used; reported as one line, exit status 2."""


MANY = {"action": "append", "default": []}
# every option but the sampling ones (steps.specs.SAMPLING_OPTIONS): (group, flag, argparse keywords)
# fmt: off
OPTIONS: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("models", "--model", {**MANY, "metavar": "NAME=PATH_OR_ID[@REV]", "help": "a model to "
     "evaluate (repeatable): a local directory, a PEFT adapter directory or a hub id at an "
     "optional revision"}),
    ("models", "--base", {**MANY, "metavar": "NAME=PATH_OR_ID", "help": "the base model of "
     "adapter NAME (default: the base the adapter names)"}),
    ("models", "--reference", {"metavar": "NAME=PATH_OR_ID[@REV]", "help": "a retain-only model: "
     "TOFU's forget quality"}),
    ("models", "--original", {"metavar": "NAME=PATH_OR_ID[@REV]", "help": "the model before "
     "unlearning: DCUE (needs a holdout set, but with a benchmark of a job of its own: RWKU's)"}),
    ("data", "--benchmark", {"help": "a built-in or registered benchmark: CHOICES"}),
    ("data", "--data-dir", {"type": Path, "help": "read the benchmark from a local copy laid out "
     "like ../shared/data"}),
    ("data", "--data", {"type": Path, "metavar": "FILE", "help": "your questions (.jsonl, .json, "
     ".csv, .parquet): question and answer, or keywords, or neither with --judge"}),
    ("data", "--holdout", {"type": Path, "metavar": "FILE", "help": "questions the original model "
     "never saw (DCUE's D_v), same format"}),
    ("data", "--judge", {"choices": ["refusal", "harmbench"], "help": "score answers to requests "
     "by a harm judge"}),
    ("data", "--judge-model", {"help": "the HarmBench classifier's directory"}),
    ("data", "--tofu-format", {"default": "phi", "choices": ["phi", "llama2"], "help": "TOFU's "
     "question/answer tags for its forget quality, model utility and the log-probabilities DCUE "
     "reads (phi: 'Question: ', '\\n', 'Answer: '; llama2: '[INST] ', ' [/INST]', '')"}),
    ("attacks, membership inference, open-unlearning", "--attack", {**MANY, "metavar": "SPEC",
     "help": "attack every --model (repeatable): quant:nf4, quant:fp4, quant:int8 (LLM.int8's "
     "weights only), relearn:steps=20,lr=1e-5,examples=8 (the --reference model relearned alike "
     "is its control), paraphrase, prefix, fewshot:3 (a prompt attack is compared with the "
     "original prompt sampled as many times); the bounds before and after go to attacks.csv and "
     "the report (docs/attacks.md)"}),
    ("attacks, membership inference, open-unlearning", "--membership", {"default": "auto",
     "metavar": "STATS", "help": "membership inference of the forget set against the holdout set "
     "(with a holdout set): auto (default: every statistic that needs no reference model, and "
     "reference with --reference), none, or a comma-separated list of loss, zlib, min_k, "
     "min_k_plus_plus, reference, gradnorm (membership.csv; docs/membership.md)"}),
    ("attacks, membership inference, open-unlearning", "--openunlearning", {**MANY,
     "metavar": "NAME=FILE_OR_DIR", "help": "open-unlearning's results of model NAME "
     "(repeatable): a TOFU_SUMMARY.json, TOFU_EVAL.json, MUSE_SUMMARY.json or MUSE_EVAL.json, or "
     "the directory holding them; shown beside ours (openunlearning.csv, the report)"}),
    ("sampling and bounds", "--seed", {"type": int, "default": 0, "help": "base seed of the "
     "samples (0)"}),
    ("sampling and bounds", "--alpha", {"type": float, "default": 0.01, "help": "significance "
     "level (0.01)"}),
    ("sampling and bounds", "--leak-threshold", {"type": float, "metavar": "T", "help": "a leak "
     "is a score >= T: M_bin of continuous scores (ROUGE-L)"}),
    ("sampling and bounds", "--target-width", {"type": float, "default": 0.15, "metavar": "W",
     "help": "warn where n samples cannot bring M_gen below W, with the n that would (0.15)"}),
    ("running", "--device", {"default": "auto", "help": "auto, cpu, cuda, cuda:1, ... (auto)"}),
    ("running", "--dtype", {"default": "float32", "choices": ["float32", "bfloat16", "float16"]}),
    ("running", "--threads", {"type": int, "default": 1, "help": "CPU threads per model job (1)"}),
    ("running", "--out", {"type": Path, "required": True, "help": "output directory (cached "
     "between calls)"}),
    ("running", "--cores", {"type": int, "default": 1, "help": "passed to snakemake (1)"}),
    ("running", "--profile", {"help": "a snakemake profile directory or name, passed through "
     "(e.g. a SLURM profile)"}),
    ("running", "--dry-run", {"action": "store_true", "help": "show the jobs, run nothing"}),
    ("running", "--unlock", {"action": "store_true", "help": "remove the lock a stopped call left "
     "in --out (one whose process is gone) and exit; a lock of a dead process on this host is "
     "taken over without it"}),
    ("running", "--replace", {**MANY, "metavar": "NAME", "help": "let model NAME, bound in --out "
     "to another checkpoint, name this call's one (its results there are replaced; repeatable)"}),
    ("running", "--summary", {"default": "all", "choices": ["all", "this"], "help": "the summary "
     "lists every model evaluated in --out so far (all, default) or only this call's models "
     "(this)"}),
    ("running", "--verbose", {"action": "store_true", "help": "show Snakemake's own output "
     "(default: one line per job done, its output in <out>/logs/evaluate.log)"}),
)
# fmt: on


def add_parser(sub: Any) -> None:
    """Register the ``evaluate`` subcommand: :data:`OPTIONS`, and the sampling options of
    :data:`probunlearn.steps.specs.SAMPLING_OPTIONS` first in their group."""
    p = sub.add_parser(
        "evaluate",
        help="sample, score and bound your own checkpoints on a benchmark or your own questions",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    groups: dict[str, Any] = {}
    choices = ", ".join(help_choices())
    for group, flag, kw in OPTIONS:
        if group not in groups:
            groups[group] = p.add_argument_group(group)
            for o in SAMPLING_OPTIONS if group == "sampling and bounds" else ():
                kind = None if o.type is str else o.type
                groups[group].add_argument(o.flag, type=kind, default=o.default, help=o.help)
        if "help" in kw:
            kw = {**kw, "help": kw["help"].replace("CHOICES", choices)}
        groups[group].add_argument(flag, **kw)
    p.set_defaults(func=run)


def _split(arg: str, flag: str) -> tuple[str, str]:
    name, sep, value = arg.partition("=")
    if not sep or not name or not value:
        raise UsageError(f"{flag} {arg!r}: expected NAME=VALUE")
    return name, value


def model_spec(arg: str, flag: str, role: str) -> tuple[str, dict]:
    """``NAME=PATH_OR_ID[@REVISION]`` → (name, spec). A local path keeps an ``@`` in its name."""
    name, value = _split(arg, flag)
    source, revision = value, None
    if "@" in value and not Path(value).exists():
        source, _, revision = value.rpartition("@")
    if Path(source).exists():
        source = str(Path(source).resolve())
    return name, {"source": source, "revision": revision, "base": None, "role": role}


def named_base(source: str) -> str | None:
    """The base an adapter directory names, as an absolute path where it is a local directory
    (relative to the current directory, or else to the adapter), so the workflow finds it from its
    own working directory; None for a full model."""
    from probunlearn.storage import checkpoints

    if not checkpoints.is_adapter(source):
        return None
    base = checkpoints.adapter_base(source)
    if base is None:
        return None
    for candidate in (Path(base), Path(source) / base):
        if candidate.is_dir():
            return str(candidate.resolve())
    return base


def build_config(args: argparse.Namespace) -> dict:
    """The ``evaluate`` config of the command line (what evaluate.yaml holds)."""
    models: dict[str, dict] = {}
    specs = [(a, "--model", "evaluated") for a in args.model]
    specs += [
        (a, f"--{role}", role)
        for role in ("reference", "original")
        if (a := getattr(args, role)) is not None
    ]
    for arg, flag, role in specs:
        name, spec = model_spec(arg, flag, role)
        if name in models:
            raise UsageError(f"{flag} {arg!r}: the name {name!r} is given twice")
        models[name] = spec
    for arg in args.base:
        name, base = _split(arg, "--base")
        if name not in models:
            raise UsageError(f"--base {arg!r}: no --model named {name!r}")
        models[name]["base"] = str(Path(base).resolve()) if Path(base).exists() else base
    for spec in models.values():
        spec["base"] = spec["base"] or named_base(spec["source"])

    def path(p):
        # absolute but not resolved: a message names the path as typed, not a link's target
        return None if p is None else os.path.abspath(os.path.expanduser(p))

    openunlearning = {}
    for arg in getattr(args, "openunlearning", []):
        name, value = _split(arg, "--openunlearning")
        if name in openunlearning:
            raise UsageError(f"--openunlearning {arg!r}: model {name!r} is given twice")
        openunlearning[name] = path(value)

    return {
        "evaluate": {
            "models": models,
            "data": {
                "benchmark": args.benchmark,
                "data_dir": path(args.data_dir),
                "file": path(args.data),
                "holdout": path(args.holdout),
                "judge": args.judge,
                "judge_model": path(args.judge_model) if args.judge_model else None,
            },
            "sampling": {o.name: getattr(args, o.name) for o in SAMPLING_OPTIONS}
            | {"base_seed": args.seed},
            "bounds": {
                "alpha": args.alpha,
                "leak_threshold": args.leak_threshold,
                "bins": 100,
                "rho": 2.0,
            },
            "attacks": list(getattr(args, "attack", [])),
            "membership": getattr(args, "membership", "auto"),
            "openunlearning": openunlearning,
            "tofu_format": args.tofu_format,
            "dtype": args.dtype,
            "device": args.device,
            "threads": args.threads,
            "profile": args.profile,
            "report": {"target_width": args.target_width, "scope": args.summary},
        }
    }


def snakemake_command(args: argparse.Namespace, configfile: Path) -> list[str]:
    """The snakemake command line that runs the packaged workflow in ``args.out``. Snakemake's own
    lock is off: the call holds the directory's lock (:class:`probunlearn.storage.outdir.Lock`)
    for as long as Snakemake runs, so a killed call leaves no second lock to clear."""
    cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(SNAKEFILE)]
    cmd += ["--directory", str(args.out), "--configfile", str(configfile)]
    cmd += ["--cores", str(args.cores), "--rerun-incomplete", "--nolock"]
    if args.profile:
        cmd += ["--profile", args.profile]
    if args.dry_run:
        cmd += ["--dry-run"]
    return cmd


def previous_models(plan, out: Path) -> tuple[dict[str, dict], list[str]]:
    """(the models of earlier calls whose results this call's summary lists, the names of those it
    cannot list: other data or settings, or files gone)."""
    key, keep, left = plan.results_key(), {}, []
    for name, rec in outdir.read_record(out).items():
        if name in plan.models:
            continue
        files = [out / f for f in plan.result_paths(name)]
        if rec.get("key") == key and all(f.is_file() for f in files):
            keep[name] = {k: rec.get(k) for k in ("role", "source", "revision", "base", "identity")}
        else:
            left.append(name)
    return keep, left


def write_record(plan, out: Path) -> None:
    """Add this call's evaluated models to the record of ``out`` (after a run that succeeded)."""
    key, specs = plan.results_key(), plan.summary_specs()
    outdir.record_models(out, {n: {**specs[n], "key": key} for n in plan.names("evaluated")})


@dataclass
class Prepared:
    """What :func:`prepare` found, before anything is written: the config and plan, the lines to
    show, and the caches to save once the call holds the output directory."""

    config: dict
    plan: Any
    notes: list[str]
    caches: list[Any]


def prepare(args: argparse.Namespace) -> Prepared:
    """Check every option, input and checkpoint, and the output directory, and plan the run,
    writing nothing. Raises :class:`UsageError`, a ``PlanError``, ``DataError`` or
    ``OutDirError``."""
    from probunlearn.evaluate.plan import Plan
    from probunlearn.evaluate.preflight import CHECKS, CheckCache, preflight
    from probunlearn.storage.checkpoints import DigestCache

    if args.cores < 1:
        raise UsageError(f"--cores {args.cores}: expected an integer >= 1")
    outdir.check_out(args.out)
    config = build_config(args)
    # the workflow's own digest cache: a call that changes nothing re-reads no weights
    digests = DigestCache(args.out / FINGERPRINTS)
    plan = Plan(config, fingerprint_cache=digests)
    plan.check(device=True)
    plan.identities  # noqa: B018 - resolve every model now: an unreachable revision fails here
    check_locations(plan, args.out)
    outdir.check_names(args.out, plan.bindings(), args.replace)
    checks = CheckCache(args.out / CHECKS)
    preflight(plan, checks, profile=args.profile)
    notes = [f"warning: {w}" for w in plan.warnings()]
    if args.summary == "all":
        previous, left = previous_models(plan, args.out)
        if previous:
            config["evaluate"]["previous"] = previous
            plan = Plan(config, fingerprint_cache=digests)
        if left:
            notes.append(
                f"note: {len(left)} model(s) evaluated earlier in {args.out} are not in the "
                f"summary (other data or settings): {', '.join(left)}"
            )
    return Prepared(config, plan, notes, [digests, checks])


def check_locations(plan, out: Path) -> None:
    """No input inside ``out`` (evaluate writes there), and ``out`` inside no model directory (its
    files would change the checkpoint's fingerprint)."""

    d = plan.data
    inputs = [(f"--data {d.get('file')}", d.get("file")), ("--holdout", d.get("holdout"))]
    inputs += [("--data-dir", d.get("data_dir")), ("--judge-model", d.get("judge_model"))]
    for name, m in plan.models.items():
        inputs += [(f"model {name!r} ({m['source']})", m["source"])]
        inputs += [(f"the base of model {name!r}", plan.base_of(name))]
    for what, path in inputs:
        if path is None or not Path(str(path)).exists():
            continue
        if outdir.inside(path, out):
            raise UsageError(
                f"{what}: lies inside --out {out}, where evaluate writes its own files; move it "
                "out, or choose another --out"
            )
        if (
            Path(str(path)).is_dir()
            and what.startswith(("model", "the base"))
            and outdir.inside(out, path)
        ):
            raise UsageError(
                f"--out {out}: lies inside {what}; the results would change the checkpoint's "
                "content fingerprint: choose an --out outside it"
            )


def plan_tables(plan) -> list[str]:
    """The attack and membership tables this run writes."""
    out = ["attacks.csv"] if plan.attacks is not None else []
    return out + (["membership.csv"] if plan.membership.on else [])


def os_message(e: OSError, out: Path) -> str:
    """An operating-system error of the call's own writes, in words."""
    if e.errno == errno.ENOSPC:
        return (
            f"no space left on the disk that holds {out} ({e}); free some space and run the "
            "same command again: it resumes where it stopped"
        )
    if e.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return f"--out {out}: cannot write there ({e.strerror}: {e.filename}); choose another --out"
    if e.errno in (errno.ENOTDIR, errno.EEXIST, errno.EISDIR):
        return f"--out {out}: {e.strerror}: {e.filename}; give a directory"
    return f"--out {out}: {type(e).__name__}: {e}"


def error(text: object, status: int = 2) -> int:
    """Print ``text`` as the call's error; return ``status``."""
    print(f"probunlearn evaluate: error: {text}", file=sys.stderr)
    return status


def run(args: argparse.Namespace) -> int:
    """Entry point of ``probunlearn evaluate``; returns the exit status (130 after Ctrl-C)."""
    try:
        return _run(args)
    except KeyboardInterrupt:
        print(
            "probunlearn evaluate: interrupted; run the same command again to resume (finished "
            "jobs are kept)",
            file=sys.stderr,
        )
        return 130


def _run(args: argparse.Namespace) -> int:

    if args.unlock:
        return unlock(args.out)
    try:
        prep = prepare(args)
    except (ValueError, RuntimeError) as e:
        return error(e)
    except OSError as e:
        return error(os_message(e, args.out))
    lock = outdir.Lock(args.out)
    try:
        lock.acquire()
    except (outdir.OutDirError, OSError) as e:
        lock.abandon()
        text = str(e) if isinstance(e, ValueError) else os_message(e, args.out)
        return error(text)
    if lock.stale is not None:
        print(
            f"note: took over the lock of a stopped call ({outdir.describe(lock.stale)})",
            file=sys.stderr,
        )
    try:
        return run_locked(args, prep, lock)
    except OSError as e:
        return error(os_message(e, args.out), 1)
    finally:
        lock.release()


def run_locked(args: argparse.Namespace, prep: Prepared, lock) -> int:
    """The part of a call that holds the lock: check the directory again (another call may have
    written meanwhile), mark it, write the inputs, bind the names, run Snakemake, record."""
    from probunlearn.evaluate.console import run_quietly, stop
    from probunlearn.storage.atomic import write_text

    config, plan, out = prep.config, prep.plan, args.out
    try:
        outdir.check_out(out)
        outdir.check_names(out, plan.bindings(), args.replace)
    except outdir.OutDirError as e:
        lock.abandon()
        return error(e)
    outdir.claim(out)
    for cache in prep.caches:
        cache.save()
    outdir.write_sets(out, plan.sets, {s: plan.paths.data(s) for s in plan.sets})
    # a dry run leaves the run's own evaluate.yaml, and the names, as the last real run left them
    name = ".probunlearn/evaluate.dry-run.yaml" if args.dry_run else "evaluate.yaml"
    if not args.dry_run:
        outdir.bind_names(out, plan.bindings())
    configfile = write_text(yaml.safe_dump(config, sort_keys=False), out / name)
    ev = config["evaluate"]
    rows = plan.sets[plan.sampled_set].height
    earlier = len(plan.previous)
    print(
        f"probunlearn evaluate: {len(plan.names('evaluated'))} model(s)"
        + (f" (+{earlier} evaluated earlier)" if earlier else "")
        + f" x {rows} prompts of {plan.sampled_set!r} x (1 greedy + {ev['sampling']['n']} "
        f"samples), in {len(plan.shards(plan.sampled_set))} shard(s) per model; results in {out}",
        file=sys.stderr,
    )
    for line in prep.notes:
        print(line, file=sys.stderr)
    cmd = snakemake_command(args, configfile)
    if args.verbose:
        proc = subprocess.Popen(cmd)
        try:
            rc = proc.wait()
        except KeyboardInterrupt:
            stop(proc)
            raise
    else:
        log = out / "logs" / "evaluate.log"
        rc = run_quietly(cmd, log, dry_run=args.dry_run, root=out)
    if rc == 0 and not args.dry_run:
        write_record(plan, out)
        print(
            f"summary:   {out / 'summary.csv'}\n"
            f"report:    {out / 'report.html'}\n"
            f"questions: {out / 'questions.html'}\n"
            f"config:    {out / 'config.yaml'} (what ran)"
        )
        for name in ("attacks.csv", "membership.csv"):
            if (out / name).is_file() and name in plan_tables(plan):
                print(f"{name.split('.')[0] + ':':<10} {out / name}")
    return rc


def unlock(out: Path) -> int:
    """``--unlock``: remove a stopped call's lock from ``out``."""

    try:
        lines = outdir.unlock(out)
    except outdir.OutDirError as e:
        return error(e)
    for line in lines:
        print(f"probunlearn evaluate --unlock: {line}", file=sys.stderr)
    return 0
