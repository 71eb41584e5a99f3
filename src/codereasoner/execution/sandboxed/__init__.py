"""Modules that run inside the sandbox.

Everything here is copied into the sandbox and imported there as flat top-level modules, so these
files import only the standard library and each other (plus ``values``), never the package.
"""
