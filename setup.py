"""Build settings pyproject.toml cannot state: the tracer's optional C fast path.

``optional=True``: without a compiler the install goes on and the tracer runs in pure Python
(identical traces, slower; ``codereasoner doctor`` says which is in use).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "codereasoner.execution.sandboxed._tracecore",
            sources=["src/codereasoner/execution/sandboxed/_tracecore.c"],
            optional=True,
        )
    ]
)
