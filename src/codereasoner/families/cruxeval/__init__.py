"""CRUXEval (Gu et al. 2024): output prediction (CRUXEval-O) and input prediction (CRUXEval-I) on
the same 800 functions.

- ``benchmark``: the two declarations and the loader;
- ``output``, ``input`` (with ``extraction``): the two task kinds, with upstream's
  post-processing;
- ``templates/``: CRUXEval's official prompts, with their sources.

Both are graded by the ``pass@k`` family (:mod:`codereasoner.evaluation.families`), which every
benchmark of single answers shares.
"""

from codereasoner.tasks.base import Templates

TEMPLATES = Templates(__name__)
