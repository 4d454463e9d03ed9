"""orkeon: a headless crew orchestrator for AI coding agents.

The public surface is the command line (`orkeon --help`) and the documents it reads and
writes (`orkeon schema NAME`). The names below are the Python entry points for embedding.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
