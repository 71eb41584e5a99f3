"""CoRE (Gao et al., Findings of ACL 2026): output prediction over equivalent implementations
and intermediate-state probes, scored as implementation invariance (I, Is) and process
transparency (W, Ws), with RCS and Cons.

- ``benchmark``: the declarations (``core``, ``core-output``, ``core-probe``, and ``core-gen``,
  a benchmark written by ``codereasoner core build``) and their loader, with the answer key;
- ``output``, ``probe``: the two task kinds, their extraction and gradings;
- ``metrics``, ``report``, ``family``: I, Is, W, Ws, RCS and Cons, the report, and the metric
  family that ``eval`` and ``score`` both grade through;
- ``templates/``: CoRE's output prompts (paper App. B.1) and the probe prompts the project
  wrote (CoRE publishes none), with their sources;
- the builder of CoRE-style benchmarks (``codereasoner core build``, which writes the files
  this folder reads): ``build`` (resumable), ``build_files`` (the files written), ``sources``
  (where the programs come from), ``programs`` (what a CoRE program is), ``api``
  (``build_core``) and ``command`` (the command group, declared in ``family.json``).
"""

from codereasoner.tasks.base import Templates

TEMPLATES = Templates(__name__)
