"""REval (DREval data): coverage, state, path and output questions on one run of a program.

- ``benchmark``, ``items``, ``programs``, ``truth``, ``vars``: the declaration and its loaders;
- ``coverage``, ``state``, ``path``, ``output`` (with ``state_answers``, ``state_official``,
  ``extraction``): the four task kinds, their prompts' answers and grading;
- ``metrics``, ``scoring``, ``report``, ``family``: accuracies, Incremental Consistency, the
  report and the metric family that ``eval`` and ``score`` both grade through.
"""
