"""Benchmark families with a folder of their own: each holds its declarations, loaders, task
kinds, extraction, grading, report and metric family. Nothing below this layer imports them: the
registries name them (``"codereasoner.families.reval.state:KIND"``) and import them on first use,
as they import a plugin's entry points.
"""
