"""Model backends behind one interface (see :mod:`codereasoner.models.base`)."""

from codereasoner.models.base import (
    Backend,
    BackendError,
    Completion,
    ModelSpec,
    Request,
    Sampling,
    SpecError,
    parse_spec,
    prompt_hash,
)

__all__ = [
    "Backend",
    "BackendError",
    "Completion",
    "ModelSpec",
    "Request",
    "Sampling",
    "SpecError",
    "parse_spec",
    "prompt_hash",
]
