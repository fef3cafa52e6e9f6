# Shared helpers: config validation, paths and the recipe behind each model name.
from probunlearn.config import validate_config


validate_config(config, workflow.source_path("../schemas/config.schema.yaml"))

RUN = config["run"]
OUT = f"results/{RUN}"
TEMPLATE = config["template"]
WORLD_SETS = [
    "full", "forget01", "forget05", "forget10", "retain99", "retain95", "retain90", "retain",
    "holdout", "real_authors", "world_facts", "saga", "harmful", "benign",
]
RETAIN_OF = {"forget01": "retain99", "forget05": "retain95", "forget10": "retain90"}


wildcard_constraints:
    model="[A-Za-z0-9_.-]+",
    evalset="[a-z0-9_]+",
    split="forget01|forget05|forget10",


def base_models():
    """The models trained from scratch: pretrained, target and one reference per forget split."""
    return ["pretrained", "target"] + [f"reference_{s}" for s in config["references"]]


def model_recipe(model):
    """(method, split) of a model name, for the rows of metrics.csv."""
    if model in ("pretrained", "target"):
        return model, ""
    if model.startswith("reference_"):
        return "reference", model.split("_", 1)[1]
    raise ValueError(f"unknown model name {model!r}")


def greedy_parts():
    return expand(f"{OUT}/metrics/{{model}}/greedy.csv", model=base_models())


def all_targets():
    return [f"{OUT}/tables/metrics.csv"]
