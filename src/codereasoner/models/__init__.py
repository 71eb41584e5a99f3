"""Model backends behind one interface (see :mod:`codereasoner.models.base`).

:func:`load_backend` turns a spec string into a backend. Every backend is one declaration in
:data:`BACKENDS` (:mod:`codereasoner.models.registry`), which also gives the spec shapes for help
text (:func:`spec_help`, :func:`spec_shapes`); heavy libraries (torch, transformers, vllm) are
imported only by the backend that needs them.
"""

from __future__ import annotations

from codereasoner.models.base import (
    Backend,
    BackendError,
    Completion,
    ModelSpec,
    Request,
    Sampling,
    SpecError,
    prompt_hash,
)
from codereasoner.models.registry import (
    BACKENDS,
    BackendType,
    load_backend,
    parse_spec,
    register,
    spec_help,
    spec_shapes,
    unregister,
)

__all__ = [
    "BACKENDS",
    "Backend",
    "BackendError",
    "BackendType",
    "Completion",
    "ModelSpec",
    "Request",
    "Sampling",
    "SpecError",
    "load_backend",
    "parse_spec",
    "prompt_hash",
    "register",
    "spec_help",
    "spec_shapes",
    "unregister",
]
