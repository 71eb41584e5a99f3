"""Synthesized cases as a benchmark family: each case of a ``codereasoner synth`` folder asked
forward (its call's value), backward (a call giving its output) and, with probes from our
traces, about an intermediate state.

- ``benchmark``: the ``cases`` declaration and the items of each direction;
- ``reasoning``, ``probe``: the three task kinds, their prompts (the project's: there is no
  upstream), extraction and grading.

The cases' file format sits below, in :mod:`codereasoner.benchmarks.case_files` (the CoRE-style
builder reads it too). Distillation and training are built on this family: they import it,
the one family folder a module outside ``families`` may import.
"""
