"""``rigaudit chat``: the audit conversation (commands, a deterministic intent parser, or an LLM that plans)."""

from orchestrator.chat.conversation import Conversation
from orchestrator.chat.coordinator import ChatSettings, Coordinator, Outcome
from orchestrator.chat.intent import parse_intent
from orchestrator.chat.planner import LlmPlanner
from orchestrator.chat.steps import Step, parse_command

__all__ = ["ChatSettings", "Conversation", "Coordinator", "LlmPlanner", "Outcome", "Step", "parse_command", "parse_intent"]
