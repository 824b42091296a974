"""rigaudit: audit a GPU inference server, plan the fixes, apply them safely, and prove the gain.

The repository keeps ``orchestrator/``, ``agents/``, ``tools/``, ``transcripts/`` and ``prompts/`` at its
top level; they are installed (and imported) as ``rigaudit.orchestrator``, ``rigaudit.agents``, ... so that
rigaudit never shadows another distribution's top-level ``agents`` or ``tools``.
"""
