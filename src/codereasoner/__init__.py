"""codereasoner: measure and improve how language models reason about code execution.

The package reads as the pipeline: execution -> trace -> programs -> synth -> tasks/benchmarks
-> models -> evaluation -> training. Lower layers never import higher ones.
"""

__version__ = "0.1.0"
