"""LLM mode: investigators as agents over any OpenAI-compatible endpoint (vLLM, SGLang, Ollama, llama.cpp, OpenAI)."""

from rigaudit.agents.llm.brain import LLMBrain
from rigaudit.agents.llm.client import ChatModel, ChatReply, ChatRequest, OpenAIChatModel, ToolCallRequest
from rigaudit.agents.llm.config import LlmConfig
from rigaudit.agents.llm.errors import BudgetExhausted, InvalidAnswer, LlmError, RealModelBlocked, StepBudgetExhausted

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
