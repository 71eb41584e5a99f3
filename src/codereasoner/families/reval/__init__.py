"""REval (DREval data): coverage, state, path and output questions on one run of a program.

- ``benchmark``, ``items``, ``programs``, ``truth``, ``vars``: the declaration and its loaders;
- ``coverage``, ``state``, ``path``, ``output`` (with ``kind``, ``state_answers``,
  ``state_official``, ``extraction``): the four task kinds, their prompts' answers and grading;
- ``templates/``: REval's official prompts, with their sources;
- ``metrics``, ``scoring``, ``report``, ``family``: accuracies, Incremental Consistency, the
  report and the metric family that ``eval`` and ``score`` both grade through.
"""

from codereasoner.tasks.base import Templates

TEMPLATES = Templates(__name__)
