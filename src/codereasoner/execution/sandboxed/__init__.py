"""Modules that run inside the sandbox.

Everything here is copied into the sandbox and imported there as flat top-level modules, so these
files import only the standard library and each other (plus ``values``), never the package. For
the type checker, which sees them as modules of this package, each such import has a twin under
``if TYPE_CHECKING:`` naming the same file by its package path.
"""

# The tracer's flat modules, each importing only those before it (and ``values``); ``tracer``
# is the one other code imports. The sandbox stages them all (see ``execution.sandbox``).
TRACER_MODULES = (
    "tracer_accelerator",
    "tracer_analysis",
    "tracer_render",
    "tracer_locals",
    "tracer_loops",
    "tracer_frame",
    "tracer",
)
