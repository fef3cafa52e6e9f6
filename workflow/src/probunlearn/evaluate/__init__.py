"""``probunlearn evaluate``: the probabilistic verdict on anyone's checkpoints.

:mod:`~probunlearn.evaluate.plan` decides what a run makes from its config and checks every input
before any job (with :mod:`~probunlearn.evaluate.preflight`: the checkpoints and the jobs' memory;
:mod:`~probunlearn.evaluate.attacks` and :mod:`~probunlearn.evaluate.membership`: its attacks and
membership inference); :mod:`~probunlearn.evaluate.console` is its quiet console. What it reads and
writes lives in the layers below: the user's questions (:mod:`probunlearn.data.userdata`), the
output directory (:mod:`probunlearn.storage.outdir`), the summary job
(:mod:`probunlearn.steps.evaluation`) and the report (:mod:`probunlearn.report.evaluation`). The
command line is :mod:`probunlearn.cli.evaluate`.
"""
