"""LLM mode: investigators as agents over any OpenAI-compatible endpoint (vLLM, SGLang, Ollama, llama.cpp, OpenAI).

The names below are imported when first used (PEP 562): a command that runs no model (an audit by the rules, the
gate) imports a module of this package (its config, its errors) without the agents and their client."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rigaudit.agents.llm.brain import LLMBrain
    from rigaudit.agents.llm.client import ChatModel, ChatReply, ChatRequest, OpenAIChatModel, ToolCallRequest
    from rigaudit.agents.llm.config import LlmConfig
    from rigaudit.agents.llm.errors import BudgetExhausted, InvalidAnswer, LlmError, RealModelBlocked, StepBudgetExhausted

_WHERE = {
    "LLMBrain": "brain",
    "ChatModel": "client",
    "ChatReply": "client",
    "ChatRequest": "client",
    "OpenAIChatModel": "client",
    "ToolCallRequest": "client",
    "LlmConfig": "config",
    "BudgetExhausted": "errors",
    "InvalidAnswer": "errors",
    "LlmError": "errors",
    "RealModelBlocked": "errors",
    "StepBudgetExhausted": "errors",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)


__all__ = [
    "BudgetExhausted",
    "ChatModel",
    "ChatReply",
    "ChatRequest",
    "InvalidAnswer",
    "LLMBrain",
    "LlmConfig",
    "LlmError",
    "OpenAIChatModel",
    "RealModelBlocked",
    "StepBudgetExhausted",
    "ToolCallRequest",
]
