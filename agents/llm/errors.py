"""The errors of LLM mode. Each ends one agent's refinement (its rule findings stand), never the audit."""

from __future__ import annotations

from rigaudit.tools.core.errors import OperationError, UsageError


class LlmError(OperationError):
    """The model could not be used for this agent; the message is one line a person can act on."""


class RealModelBlocked(UsageError):
    """``RIGAUDIT_BLOCK_REAL_LLM`` is set (tests) and the endpoint is not on this machine."""


class BudgetExhausted(LlmError):
    """The audit's token budget is spent."""


class StepBudgetExhausted(LlmError):
    """The agent used every step it was given without reporting its findings."""


class PromptTooLong(LlmError):
    """The server refused a prompt longer than its context window (the agent retries once, shorter)."""


class InvalidAnswer(LlmError):
    """The model's findings stayed invalid after the bounded retries."""
