"""The report of a ``probunlearn evaluate`` run: its summary tables (:mod:`~.summary`), figures
(:mod:`~.figures`), HTML pages (:mod:`~.html`), open-unlearning's results beside ours
(:mod:`~.openunlearning`) and the configuration that ran (:mod:`~.run`)."""
