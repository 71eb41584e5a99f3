"""LiveCodeBench: code execution (``lcb-execution``) and test output prediction
(``lcb-test-output``).

- ``benchmark``: the two declarations, their loaders and upstream's imports;
- ``execution``, ``test_output`` (with ``extraction``): the two task kinds, with upstream's
  post-processing and grading;
- ``templates/``: LiveCodeBench's official prompts and system messages, with their sources.

Both are graded by the ``pass@k`` family (:mod:`codereasoner.evaluation.families`), which every
benchmark of single answers shares.
"""

from codereasoner.tasks.base import Templates

TEMPLATES = Templates(__name__)
