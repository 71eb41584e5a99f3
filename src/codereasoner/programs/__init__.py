"""Program transformations: equivalent implementations by AST rewrites, checked by differential
testing in the sandbox, and CoRE's variant filters."""

from codereasoner.programs.equivalence import (
    CC_MIN,
    JACCARD_MAX,
    Equivalence,
    cyclomatic_complexity,
    equivalent,
    jaccard_similarity,
    mutated_calls,
    passes_core_filters,
)
from codereasoner.programs.llm_rewrite import extract_python, llm_candidates, rewrite_prompt
from codereasoner.programs.minimise import coverage_features, minimal_tests
from codereasoner.programs.rewrites import REWRITES, Rewrite, compose
from codereasoner.programs.variants import Disagreement, Variant, VariantSearch, make_variants

__all__ = [
    "CC_MIN",
    "JACCARD_MAX",
    "REWRITES",
    "Disagreement",
    "Equivalence",
    "Rewrite",
    "Variant",
    "VariantSearch",
    "compose",
    "coverage_features",
    "cyclomatic_complexity",
    "equivalent",
    "extract_python",
    "jaccard_similarity",
    "llm_candidates",
    "make_variants",
    "minimal_tests",
    "mutated_calls",
    "passes_core_filters",
    "rewrite_prompt",
]
