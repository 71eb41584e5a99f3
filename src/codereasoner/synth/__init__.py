"""CodeReasoner-style training cases: catalog, constraints, generators, mutation, filtering,
dedup and decontamination (see ``docs/synth.md``)."""

from codereasoner.synth.case import Candidate, Constraints, Drop

__all__ = ["Candidate", "Constraints", "Drop"]
