"""What the workflow's rules call: one function per rule that reads the rule's input files, runs an
algorithm of the library on them and writes the rule's outputs (each atomically, :mod:`probunlearn.storage.atomic`).

The algorithms themselves (sampling, training, unlearning, TOFU's metrics, DCUE) know nothing of files
laid out by the workflow; these functions are the only place that does. The other rules call step
modules that hold nothing else: ``evaluation``, ``sampled_eval``, ``robustness``, ``experiments``,
``claims``, ``metrics_io``, ``data.build_world``, ``benchmarks``, ``downloads``, ``hub.fetch_model``.
"""
