"""The package's shape: no import cycles, no private names used across modules, every documented public
name importable where the docs say, and a common.smk that stays thin."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

PKG = "probunlearn"


def modules(root: Path) -> dict[str, Path]:
    src = root / "workflow" / "src" / PKG
    out = {}
    for path in sorted(src.rglob("*.py")):
        parts = path.relative_to(src.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def imports_of(name: str, path: Path, known: set[str]) -> list[tuple[str, list[str]]]:
    """(module imported, names taken from it) for every import in the file, lazy ones included."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            mod = node.module
            for alias in node.names:
                sub = f"{mod}.{alias.name}"
                found.append((sub, []) if sub in known else (mod, [alias.name]))
        elif isinstance(node, ast.Import):
            found += [(a.name, []) for a in node.names]
    return [(m, names) for m, names in found if m.split(".")[0] == PKG and m != name]


def test_no_import_cycles(root):
    mods = modules(root)
    graph = {m: {i for i, _ in imports_of(m, p, set(mods)) if i in mods} for m, p in mods.items()}
    # a package's __init__ re-exports its submodules; the edge back from them is not a cycle
    for m in graph:
        graph[m] = {i for i in graph[m] if not m.startswith(i + ".")}
    state: dict[str, int] = {}

    def visit(m: str, trail: list[str]) -> None:
        state[m] = 1
        for n in sorted(graph[m]):
            if state.get(n) == 1:
                pytest.fail("import cycle: " + " -> ".join([*trail[trail.index(n) :], n]))
            if n not in state:
                visit(n, [*trail, n])
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])


UP_A_FLOOR_BEFORE = 4
"""Imports up a floor when the layer table was first checked (issue 48): no more may be listed."""


def layer_table(root: Path) -> tuple[dict[str, int], dict[str, set[str]], set[tuple[str, str]]]:
    """From docs/architecture.md: each folder's floor and the folders it says it imports, and the
    (from, to) imports up a floor it lists with their reasons."""
    text = (root / "docs" / "architecture.md").read_text()
    table = text[text.index("| floor | folder |") :].split("\n\n", 1)[0].splitlines()[2:]
    floors, said = {}, {}
    for row in table:
        cells = [c.strip() for c in row.strip().strip("|").split(" | ")]
        folder = cells[1].strip("`").removesuffix("/").removesuffix(".py")
        floors[folder] = int(cells[0])
        listed = re.sub(r"\([^)]*\)", "", cells[3])
        said[folder] = {n.strip() for n in listed.split(",") if n.strip() not in ("", "—")}
    up = text[text.index("| from | to | where | why |") :].split("\n\n", 1)[0].splitlines()[2:]
    exceptions = {
        tuple(
            c.strip().strip("`").removesuffix("/") for c in row.strip().strip("|").split(" | ")[:2]
        )
        for row in up
    }
    return floors, said, exceptions


def folder_imports(root: Path) -> dict[str, dict[str, set[str]]]:
    """Folder -> folder it imports -> the files that do (lazy imports and .smk files included)."""
    mods, src = modules(root), root / "workflow" / "src" / PKG
    out: dict[str, dict[str, set[str]]] = {}
    files = [(m, p) for m, p in mods.items()] + [
        ("", p) for p in [*src.rglob("*.smk"), *src.rglob("Snakefile")]
    ]
    for name, path in files:
        rel = path.relative_to(src)
        folder = rel.parts[0] if len(rel.parts) > 1 else rel.stem
        if folder == "__init__":
            continue
        if path.suffix == ".py":
            targets = [m for m, _ in imports_of(name, path, set(mods))]
        else:
            targets = re.findall(r"^\s*(?:from|import) (probunlearn\.\w+)", path.read_text(), re.M)
        for t in targets:
            to = t.split(".")[1]
            if to != folder:
                out.setdefault(folder, {}).setdefault(to, set()).add(str(rel))
    return out


def test_the_layer_table_is_the_import_graph(root):
    """docs/architecture.md's layer table is the code's: each folder imports exactly the folders it
    lists, and none on a higher floor but the listed exceptions, which are no more than before."""
    floors, said, exceptions = layer_table(root)
    actual = folder_imports(root)
    assert set(floors) >= set(actual), (
        f"folders missing from the table: {set(actual) - set(floors)}"
    )
    for folder, targets in actual.items():
        assert set(targets) == said[folder], (
            f"{folder}/ imports {sorted(targets)}; the table lists {sorted(said[folder])}"
        )
        for to, where in targets.items():
            if floors[to] > floors[folder]:
                assert (folder, to) in exceptions, (
                    f"{folder}/ (floor {floors[folder]}) imports {to}/ (floor {floors[to]}) in "
                    f"{sorted(where)}: up a floor, and not among the listed exceptions"
                )
    for folder, to in exceptions:
        assert to in actual.get(folder, {}), f"the exception {folder} -> {to} is no import"
    assert len(exceptions) <= UP_A_FLOOR_BEFORE


def test_tests_mirror_the_package(root):
    """The test of ``probunlearn/<folder>/<module>.py`` is ``tests/<folder>/test_<module>.py`` (or
    ``test_<module>_<topic>.py``; a folder's ``__init__``: ``test_<folder>[_<topic>].py`` or
    ``test_base.py``); whole-workflow runs are in tests/workflows/, the measurement scripts' tests
    in tests/measurements/ (tests/conftest.py)."""
    src, tests = root / "workflow" / "src" / PKG, root / "tests"
    wrong = []
    for path in sorted(tests.rglob("test_*.py")):
        rel = path.relative_to(tests)
        folder, words = rel.parent, path.stem.removeprefix("test_").split("_")
        if folder.parts[:1] in (("workflows",), ("plugin",), ("slurm",)):
            continue
        if rel.as_posix() in ("test_architecture.py", "test_lint.py"):  # the package's own rules
            continue
        if folder.parts[:1] == ("measurements",):
            base = root / "measurements"
            found = any(
                (base / f"{'_'.join(words[:k])}.py").is_file() for k in range(1, len(words) + 1)
            )
        else:
            base = src / folder
            names = ["_".join(words[:k]) for k in range(1, len(words) + 1)]
            found = any((base / f"{n}.py").is_file() or (base / n).is_dir() for n in names)
            folder_test = path.stem == "test_base" or path.stem.startswith(f"test_{base.name}")
            found = found or (base.is_dir() and folder_test)
        if not found:
            wrong.append(str(rel))
    assert wrong == [], f"test files named for no module of the package: {wrong}"


def test_no_private_names_across_modules(root):
    mods = modules(root)
    bad = []
    for m, path in mods.items():
        tree = ast.parse(path.read_text())
        for mod, names in imports_of(m, path, set(mods)):
            bad += [f"{m}: from {mod} import {n}" for n in names if n.startswith("_")]
        imported = {
            a.asname or a.name
            for n in ast.walk(tree)
            if isinstance(n, ast.ImportFrom) and n.module == PKG
            for a in n.names
        }
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
                if (
                    node.value.id in imported
                    and node.attr.startswith("_")
                    and not node.attr.startswith("__")
                ):
                    bad.append(f"{m}: {node.value.id}.{node.attr}")
    assert not bad, bad


def test_absolute_imports_only(root):
    relative = [
        f"{m}: line {node.lineno}"
        for m, path in modules(root).items()
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.ImportFrom) and node.level > 0
    ]
    assert not relative, relative


# every public name README.md and docs/ tell researchers to import, where they say it lives
DOCUMENTED = {
    "probunlearn.bounds": [
        "summarize", "binary_leakage_bound", "general_leakage_bound", "expectation_bounds",
        "expectation_upper_bound", "std_upper_bound", "ed_score", "samples_needed",
        "set_level_upper_bound", "anytime_set_level_upper_bound", "simultaneous_upper_bounds",
        "simultaneous_level", "leak_at_k", "set_leak_at_k_upper", "binary_confidence_sequence",
        "binary_upper_confidence_sequence", "mean_confidence_sequence", "normal_mixture_rho",
        "betting_upper_bound", "betting_bounds", "betting_confidence_sequence",
        "general_leakage_bound_cp", "paired_difference", "difference_interval",
        "difference_bounds", "DifferenceInterval", "holm", "family_upper_bounds",
        "family_bounds", "family_alpha", "threshold_key", "leak_key",
    ],
    "probunlearn.registry": ["Registry"],
    "probunlearn.storage.atomic": [
        "atomic_write", "atomic_dir", "write_parquet", "write_csv", "write_text", "write_json",
    ],
    "probunlearn.models": ["load_model"],
    "probunlearn.models.hub": [
        "load_causal_lm", "chat_prompt", "chat_template", "convert_gguf_to_safetensors",
        "smollm2_gguf", "fetch_model",
    ],
    "probunlearn.models.native.llama": ["supports", "BufferLayer"],
    "probunlearn.models.native.phi": [],
    "probunlearn.models.native.lora": ["supports", "apply", "merge", "is_lora"],
    "probunlearn.models.native.tokenizer": [],
    "probunlearn.data.rows": ["make_row", "to_frame"],
    "probunlearn.data.qa": ["prompt_ids", "chunk_corpus"],
    "probunlearn.data.synthetic": ["build_world"],
    "probunlearn.data.world": ["IDONTKNOW"],
    "probunlearn.data.downloads": [],
    "probunlearn.scoring": [
        "rouge_l", "keyword_leak", "refusal_judge", "harm_score", "self_bleu", "diversity",
        "Scorer", "SCORERS", "BINARY_METRICS", "CONTINUOUS_METRICS",
    ],
    "probunlearn.scoring.harmbench": ["HarmBenchJudge", "harm_decisions"],
    "probunlearn.metrics.token_scores": [],
    "probunlearn.metrics.tofu": ["tofu_losses", "forget_quality", "model_utility", "truth_ratio"],
    "probunlearn.metrics.dcue": [
        "dcue", "core_confidence", "meta_evaluation", "core_token_mask", "core_span_from_row",
        "heuristic_core_span", "check_disjoint",
    ],
    "probunlearn.metrics.membership": [],
    "probunlearn.metrics.table": ["gather_metrics"],
    "probunlearn.training": ["train_lm"],
    "probunlearn.training.optim": [],
    "probunlearn.sampling": [
        "sample_answers", "sample_sequential", "teacher_forced_logprobs", "decision_bounds",
    ],
    "probunlearn.sampling.sampler": [],
    "probunlearn.sampling.engine": ["attention_kernels"],
    "probunlearn.unlearning": ["unlearn", "losses"],
    "probunlearn.unlearning.loop": ["decoder_layers"],
    "probunlearn.unlearning.losses": ["ga_loss", "idk_loss"],
    "probunlearn.methods": ["Method", "Setting", "Step", "METHODS"],
    "probunlearn.core": ["RULES", "SCRIPTS"],
    "probunlearn.core.planner": ["CorePlanner", "RunSettings", "ModelInfo", "SetInfo", "Setting"],
    "probunlearn.steps.specs": ["SamplingSpec", "ScoringSpec", "TeacherForcingSpec", "DcueSpec"],
    "probunlearn.steps.sample": ["run_sample_shard_rule", "run_sampling_shard"],
    "probunlearn.steps.score": ["run_score"],
    "probunlearn.steps.greedy": ["run_evaluation"],
    "probunlearn.steps.train": ["run_tokenizer", "run_pretrain", "run_finetune"],
    "probunlearn.steps.unlearn": ["run_unlearn"],
    "probunlearn.steps.refusals": ["run_refusals"],
    "probunlearn.steps.tofu": ["run_tofu_metrics"],
    "probunlearn.steps.dcue": ["run_dcue"],
    "probunlearn.steps.postfinetune": ["run_postfinetune"],
    "probunlearn.report.experiments": [
        "make_table1", "make_fig3_tofu", "make_fig3a", "make_fig4", "make_fig5a", "make_fig5b",
        "make_fig5c_table2", "make_fig6", "make_fig_sequential", "make_dcue_vs_fq",
    ],
    "probunlearn.report.claims": ["write_claims", "claims_table", "CLAIMS", "Claim", "point"],
    "probunlearn.report.figures": [],
    "probunlearn.benchmarks": ["BENCHMARKS", "Benchmark", "fetch_dataset", "build_benchmark_sets",
                               "ModelJob", "SummaryInputs", "SummaryTable", "SummarySection"],
    "probunlearn.benchmarks.base": [],
    "probunlearn.benchmarks.tofu.loader": ["load_tofu"],
    "probunlearn.benchmarks.tofu.eval_logs": ["fetch_tofu_eval_log"],
    "probunlearn.benchmarks.hp_qa.loader": ["load_hp_qa"],
    "probunlearn.benchmarks.jbb.loader": ["load_jbb"],
    "probunlearn.benchmarks.muse_news.sets": [],
    "probunlearn.benchmarks.muse_news.corpus": [],
    "probunlearn.benchmarks.muse_news.metrics": [],
    "probunlearn.benchmarks.muse_news.design": ["MuseDesign"],
    "probunlearn.benchmarks.muse_news.steps": ["run_muse_eval", "run_muse_table"],
    "probunlearn.benchmarks.muse_news.books": ["BOOKS", "MuseBooks"],
    "probunlearn.benchmarks.rwku": ["RWKU"],
    "probunlearn.benchmarks.rwku.loader": [
        "listing", "parse_ids", "probe_rows", "mia_rows", "corpus_rows", "utility_records",
    ],
    "probunlearn.benchmarks.rwku.prompts": ["prompt_text", "stop_ids", "prediction"],
    "probunlearn.benchmarks.rwku.metrics": [
        "rouge_l_recall", "level_score", "greedy_scores", "level_table", "families",
        "family_bounds", "text_statistics", "mia_means", "mia_change",
    ],
    "probunlearn.benchmarks.rwku.mia": ["mia_statistics"],
    "probunlearn.benchmarks.rwku.tables": [
        "sample_rouge", "probe_table", "revealed_table", "level_table", "family_table",
        "mia_table", "ROUGE_LEAK", "REVEAL_RATE",
    ],
    "probunlearn.benchmarks.rwku.summary": ["summary_section", "columns", "TABLES"],
    "probunlearn.attacks": [
        "Attack", "ATTACKS", "parse_spec", "check_attack", "apply_attack", "Target", "Inputs",
        "Result", "Spec", "subjects_of", "EXCLUDE",
    ],
    "probunlearn.config": ["dump_config"],
    "probunlearn.config.conformance": [],
    "probunlearn.dag": ["Design", "Paths"],
    "probunlearn.dag.attacks": ["AttackPlan", "AttackDesign"],
    "probunlearn.attacks.naming": ["attack_slug", "parse_attack_slug", "parse_attacked", "parse_family"],
    "probunlearn.report.attacks": ["make_attacks", "attacks_table", "COLUMNS", "family_values",
                                   "plain_values"],
    "probunlearn.attacks.null": ["Null", "null_members"],
    "probunlearn.dag.naming": [],
    "probunlearn.dag.checks": [],
    "probunlearn.evaluate.plan": ["Plan"],
    "probunlearn.steps.evaluation": ["summarize", "benchmark_section"],
    "probunlearn.steps.benchmark_job": ["run_benchmark_job"],
    "probunlearn.models.device": ["check_device", "resolve_device", "cuda_devices", "DeviceError"],
    "probunlearn.models.files": ["has_chat_template", "tokenizer_dir", "context_length"],
    "probunlearn.report.evaluation.run": ["effective_config", "versions", "resolved_template"],
    "probunlearn.report.evaluation.html": ["write_report", "write_questions"],
    "probunlearn.data.userdata": ["read_user_data", "score_kind", "repeated_questions"],
    "probunlearn.storage.outdir": ["Lock", "check_out", "check_names", "unlock", "write_sets"],
    "probunlearn.evaluate.preflight": ["preflight", "check_checkpoints", "check_memory"],
    "probunlearn.report.evaluation.figures": ["report_figures", "legend_overlaps", "ReportFigure"],
    "probunlearn.report.evaluation.summary": [
        "bound_floor", "samples_to_reach", "best_auc_lower", "texts_to_reach",
    ],
    "probunlearn.evaluate.attacks": ["EvaluateAttacks"],
    "probunlearn.steps.attack": ["run_attack", "run_attack_prompts"],
    "probunlearn.evaluate.membership": ["EvaluateMembership"],
    "probunlearn.report.evaluation.openunlearning": ["read_openunlearning", "find_openunlearning_files"],
    "probunlearn.bounds.auc": [],
    "probunlearn.dag.membership": ["MembershipDesign"],
    "probunlearn.steps.membership": ["run_membership", "run_membership_table"],
}  # fmt: skip


@pytest.mark.parametrize("module", sorted(DOCUMENTED))
def test_documented_names_import(module):
    mod = importlib.import_module(module)
    missing = [n for n in DOCUMENTED[module] if not hasattr(mod, n)]
    assert not missing, f"{module} lacks {missing}"


ENTRY_POINT_GROUPS = {f"{PKG}.methods", f"{PKG}.scorers", f"{PKG}.benchmarks", f"{PKG}.attacks",
                      f"{PKG}.membership_statistics"}  # fmt: skip


def test_every_documented_path_resolves_and_is_listed(root):
    """Every ``probunlearn.x.y`` README.md and docs/*.md write is a module, or a module and a name
    in it, and that module is a key of DOCUMENTED (so a rename fails here, not in a reader's hands)."""
    bad = []
    for doc in [root / "README.md", *sorted((root / "docs").glob("*.md"))]:
        for path in sorted(set(re.findall(rf"\b{PKG}(?:\.[A-Za-z_]\w*)+", doc.read_text()))):
            if path in ENTRY_POINT_GROUPS:
                continue
            parts = path.split(".")
            for k in range(len(parts), 0, -1):
                try:
                    obj = importlib.import_module(".".join(parts[:k]))
                    break
                except ImportError:
                    continue
            module = ".".join(parts[:k])
            for name in parts[k:]:
                if not hasattr(obj, name):
                    bad.append(f"{doc.name}: {path} ({module} has no {name})")
                    break
                obj = getattr(obj, name)
            if module not in DOCUMENTED and module != PKG:
                bad.append(f"{doc.name}: {path} ({module} is not in DOCUMENTED)")
    assert bad == []


# the algorithms: no file layout of the workflow, no entry point for a rule
ALGORITHMS = [
    "bounds", "sampling", "training", "unlearning", "metrics", "scoring", "data.world", "data.qa",
    "models",
]  # fmt: skip


def test_algorithms_hold_no_rule_entry_points(root):
    mods = modules(root)
    for name in ALGORITHMS:
        mod = f"{PKG}.{name}"
        paths = [p for m, p in mods.items() if m == mod or m.startswith(mod + ".")]
        assert paths, mod
        for path in paths:
            tree = ast.parse(path.read_text())
            runs = [
                n.name
                for n in tree.body
                if isinstance(n, ast.FunctionDef) and n.name.startswith("run_")
            ]
            assert not runs, f"{mod}: {runs} belong in probunlearn.steps"
            steps = [i for i, _ in imports_of(mod, path, set(mods)) if i.startswith(f"{PKG}.steps")]
            assert not steps, f"{mod} imports {steps}"


def workflow_scripts(root: Path) -> list[Path]:
    """Every rule script of both workflows: the paper's, the evaluation core's (also the attack and
    membership rules' of both), the evaluate command's and the benchmarks' own."""
    src = root / "workflow" / "src" / PKG
    return sorted((root / "workflow" / "scripts").glob("*.py")) + sorted(
        src.glob("**/scripts/*.py")
    )


def test_scripts_call_one_library_function(root):
    for script in workflow_scripts(root):
        tree = ast.parse(script.read_text())
        calls = [
            a.name
            for n in tree.body
            if isinstance(n, ast.ImportFrom)
            and n.module
            and n.module.startswith(PKG)
            and n.module != f"{PKG}.steps.logs"
            for a in n.names
        ]
        assert len(calls) == 1, f"{script.name} imports {calls}"


def test_scripts_take_paths_from_the_rule_not_by_slicing(root):
    """A path a script needs is a param or an input/output of its rule (from probunlearn.dag.Paths),
    never rebuilt from another path by slicing, splitting or changing its suffix. (The folder of a
    rule's own file, ``.parent``, is allowed: fetch_data and benchmark_sets write beside it, and a new
    param there would re-fetch every data set and retrain everything of existing runs.)"""
    pattern = re.compile(r"\[\s*:\s*-|rsplit\(|\.split\(\s*[\"']/|with_suffix\(|removesuffix\(")
    found = [
        f"{script.name}:{i}: {line.strip()}"
        for script in workflow_scripts(root)
        for i, line in enumerate(script.read_text().splitlines(), 1)
        if pattern.search(line)
    ]
    assert found == []


def test_common_smk_stays_thin(root):
    lines = (root / "workflow" / "rules" / "common.smk").read_text().splitlines()
    assert len(lines) <= 150, f"common.smk has {len(lines)} lines: move logic to probunlearn.dag"


def rules_files(root: Path) -> list[Path]:
    """Every rules file of both workflows: the paper's, the evaluation core's, the evaluate
    command's and the benchmarks' own."""
    src = root / "workflow" / "src" / PKG
    files = sorted((root / "workflow" / "rules").glob("*.smk"))
    files += [src / "core" / "rules.smk", src / "evaluate" / "workflow" / "Snakefile"]
    return files + sorted(src.glob("benchmarks/*/rules.smk"))


def _script_modules(root: Path) -> dict[str, tuple[str, bool]]:
    """Each workflow script's library module, and whether its rule runs in the torch environment (a
    model job), read from the rules in order (a rule names its conda env before its script). The
    evaluate command runs every job in one environment: its rules' model jobs are the core's."""
    out: dict[str, tuple[str, bool]] = {}
    for smk in rules_files(root):
        env = None
        for line in smk.read_text().splitlines():
            if m := re.search(r"envs/(\w+)\.yaml|(?:core|conda)_env\(\"(\w+)\"\)", line):
                env = m.group(1) or m.group(2)
            elif m := re.search(r'(?:"(\.\./)*scripts/|f"\{CORE_SCRIPTS\}/)(\w+)\.py"', line):
                script = smk.parent / "scripts" / f"{m.group(2)}.py"
                if "CORE_SCRIPTS" in line:
                    script = (
                        root / "workflow" / "src" / PKG / "core" / "scripts" / f"{m.group(2)}.py"
                    )
                elif not script.exists():
                    script = root / "workflow" / "scripts" / f"{m.group(2)}.py"
                text = script.read_text()
                libs = re.findall(r"^from (probunlearn[\w.]*) import \w+", text, re.M)
                lib = next(m for m in libs if m != f"{PKG}.steps.logs")
                out[f"{smk.name}:{m.group(2)}"] = (lib, env == "torch")
    return out


def test_jobs_import_only_what_they_use(root):
    """A job without a model imports no torch; a model job imports torch but not transformers (the
    native Llama and tokenizer load the workflow's checkpoints; issue 21's per-job cost)."""
    import subprocess
    import sys

    scripts = _script_modules(root)
    cpu = sorted({m for m, model in scripts.values() if not model})
    gpu = sorted({m for m, model in scripts.values() if model})
    assert "probunlearn.steps.sample" in gpu and "probunlearn.steps.score" in cpu
    check = "import importlib, sys\nfor m in sys.argv[1:]: importlib.import_module(m)\n"
    check += "print('torch' in sys.modules, 'transformers' in sys.modules)"
    for modules_, want in ((cpu, "False False"), (gpu, "True False")):
        out = subprocess.run(
            [sys.executable, "-c", check, *modules_], capture_output=True, text=True
        )
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip() == want, modules_


def test_evaluate_checks_and_plans_without_torch():
    """``probunlearn evaluate`` checks its inputs and plans (its Snakefile's planner) without torch:
    importing it cost every call, a dry run too, about 1 s of CPU (2.5 s of wall on 2 cores)."""
    import subprocess
    import sys

    modules = [f"{PKG}.cli.evaluate", f"{PKG}.evaluate.preflight", f"{PKG}.evaluate.plan",
               f"{PKG}.models.files"]  # fmt: skip
    check = "import importlib, sys\nfor m in sys.argv[1:]: importlib.import_module(m)\n"
    check += "print(sorted(m for m in ('torch', 'transformers') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", check, *modules], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]", out.stdout


# ---- the registries: a benchmark is one folder ------------------------------------------------
SHARED_NAMES = {"tofu"}
"""Benchmark names the workflow also uses for something of its own: ``tofu`` is TOFU's metric family
(truth ratio, forget quality, model utility), computed on any author set, the mini world's too."""


def _benchmark_identifiers() -> dict[str, set[str]]:
    """Benchmark folder -> the strings that name its data outside it: its hub repositories, its
    name, local-copy directory, experiment, raw-text corpora and evaluate choices' prefix (except
    :data:`SHARED_NAMES`). A folder may register several benchmarks (MUSE's holds News and
    Books): its modules may name all of them."""
    from probunlearn.benchmarks import benchmarks

    out: dict[str, set[str]] = {}
    for b in benchmarks():
        spec = b.spec.get("dataset", {})
        names = {b.directory, *(c.split for c in b.corpora), f"{b.name}:"}
        if b.experiment:
            names.add(b.experiment)
        names.add(b.name)
        if spec.get("hub"):
            names.add(spec["hub"]["repo"])
        folder = ".".join(type(b).__module__.split(".")[:3])  # probunlearn.benchmarks.<folder>
        out.setdefault(folder, set()).update(names - SHARED_NAMES)
    return out


def _code_strings(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, value) of every string constant that is not a docstring."""
    docs = {
        id(n.body[0].value)
        for n in ast.walk(tree)
        if isinstance(n, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and n.body
        and isinstance(n.body[0], ast.Expr)
        and isinstance(n.body[0].value, ast.Constant)
    }
    return [
        (n.lineno, n.value)
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs
    ]


def test_no_module_outside_a_benchmark_folder_names_or_imports_it(root):
    """Adding a benchmark is one folder: no library module outside it imports it, and none names
    its data (a string equal to one of its identifiers, or starting with its evaluate prefix)."""
    mods = modules(root)
    bad = []
    for folder, names in _benchmark_identifiers().items():
        for m, path in mods.items():
            if m == folder or m.startswith(folder + "."):
                continue
            tree = ast.parse(path.read_text())
            bad += [
                f"{m} imports {i}"
                for i, _ in imports_of(m, path, set(mods))
                if i == folder or i.startswith(folder + ".")
            ]
            for line, value in _code_strings(tree):
                hit = [n for n in names if value == n or (n.endswith(":") and value.startswith(n))]
                hit += [n for n in names if "/" in n and n in value]
                bad += [f"{m}:{line} names {folder} ({value!r})" for _ in hit[:1]]
    assert bad == []


def test_generic_modules_import_no_benchmark(root):
    """The layers below the workflow glue (data, models, sampling, training, unlearning, methods,
    scoring, metrics, bounds, report) import no benchmark folder at all."""
    mods = modules(root)
    generic = ("data", "models", "sampling", "training", "unlearning", "methods", "scoring",
               "metrics", "bounds", "report", "storage", "registry")  # fmt: skip
    bad = [
        f"{m} imports {i}"
        for m, path in mods.items()
        if m.split(".")[1:2] and m.split(".")[1] in generic
        for i, _ in imports_of(m, path, set(mods))
        if i.startswith(f"{PKG}.benchmarks.") and i != f"{PKG}.benchmarks.base"
    ]
    assert bad == []


def test_registries_list_the_built_ins():
    from probunlearn import methods, scoring
    from probunlearn.benchmarks import BENCHMARKS

    assert methods.METHODS.names() == ["dpo", "ga", "gd", "idk", "npo", "npo_eo", "rmu", "simnpo"]
    assert [s.name for s in scoring.scorers()] == [
        "rougeL_recall", "keyword_leak", "harm_prob", "harm",
    ]  # fmt: skip
    assert BENCHMARKS.names() == ["hp_qa", "jbb", "muse", "muse-books", "rwku", "tofu"]
    labels = methods.labels()
    assert len(set(labels.values())) == len(labels)
    assert len(set(methods.colors().values())) == len(labels)
