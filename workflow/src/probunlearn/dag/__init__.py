"""The workflow's DAG as plain, torch-free Python: which models, samples, tables and figures a config makes.

``naming`` turns an unlearning recipe into a model name and back, ``paths`` holds every artifact's path
pattern (used by the rules and by the tests alike), ``design`` decides from the config what each
experiment needs, ``checks`` holds the cross-checks the schema cannot express, and ``resources`` the
resources of the GPU rules. ``workflow/rules/common.smk`` only binds these to Snakemake.
"""

from probunlearn.dag.checks import check_config
from probunlearn.dag.design import Design, canon
from probunlearn.dag.naming import parse_unlearned, unlearned_name
from probunlearn.dag.paths import Paths

__all__ = ["Design", "Paths", "canon", "check_config", "parse_unlearned", "unlearned_name"]
