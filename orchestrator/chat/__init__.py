"""``rigaudit chat``: the audit conversation (commands, a deterministic intent parser, or an LLM that plans)."""

from rigaudit.orchestrator.chat.conversation import Conversation
from rigaudit.orchestrator.chat.coordinator import ChatSettings, Coordinator, Outcome
from rigaudit.orchestrator.chat.intent import parse_intent
from rigaudit.orchestrator.chat.planner import LlmPlanner
from rigaudit.orchestrator.chat.steps import Step, parse_command

__all__ = ["ChatSettings", "Conversation", "Coordinator", "LlmPlanner", "Outcome", "Step", "parse_command", "parse_intent"]
