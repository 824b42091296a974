"""LLM mode's settings: the endpoint, and the budgets that bound what one audit may spend."""

from __future__ import annotations

from rigaudit.agents.llm.cost import Price
from rigaudit.tools.core.record import Record, field

TOKEN_FIELDS = ("auto", "max_tokens", "max_completion_tokens")
"""How a request's completion limit may be sent (``token_field``): ``auto`` chooses."""


class LlmConfig(Record):
    """Where the model is, and how much each agent and the whole audit may use."""

    base_url: str | None = None
    """An OpenAI-compatible ``.../v1`` URL; ``None`` is OpenAI's own."""
    model: str = ""
    """The model name; empty: the server's only model (``GET /models``)."""
    area_models: tuple[tuple[str, str], ...] = ()
    """A model per agent (an area, or ``chat``) over :attr:`model`: ``--llm-model area=name``."""
    api_key: str | None = field(default=None, repr=False)
    prices: tuple[Price, ...] = ()
    """What tokens cost, per model or for every model (``--llm-price``); none: no cost is shown."""
    max_steps: int = 6
    """Requests per agent (tool rounds plus the final answer)."""
    max_audit_tokens: int = 400_000
    """Prompt plus completion tokens for the whole audit, shared by every agent."""
    agent_time_s: float = 180.0
    """Wall-clock limit for one agent (its waits for a request slot or a person's turn not counted)."""
    deadline_s: float = 300.0
    """Wall-clock limit for all of an audit's agents together, from the first agent's start: agents still
    running then stop and their areas are lost with the reason "deadline" (their rule findings stand)."""
    turn_deadline_s: float = 120.0
    """Time one chat turn may wait on the model, all its requests together (the steps it runs not counted)."""
    ask_timeout_s: float = 60.0
    """How long an agent's ``ask`` command waits for a person at the terminal before it counts as "no"."""
    request_timeout_s: float = 90.0
    retries: int = 3
    """Our own retries of a request after the client's (429, 5xx, timeouts, malformed answers)."""
    client_retries: int = 2
    """The openai client's ``max_retries`` (it honours ``retry-after``)."""
    backoff_s: float = 1.0
    backoff_cap_s: float = 20.0
    answer_retries: int = 2
    """How often an invalid final answer is sent back with its validation error."""
    max_completion_tokens: int = 2048
    """One completion's limit, in tokens (a reasoning model's thinking included)."""
    token_field: str = "auto"
    """How the completion limit is sent: ``max_tokens`` (most servers), ``max_completion_tokens`` (OpenAI's
    reasoning models, proxies that demand it) or ``auto`` (``max_completion_tokens`` for api.openai.com,
    else ``max_tokens``; switched when a server asks for the other)."""
    preflight: bool = True
    """Check the endpoint (its models list, one tiny request) before any agent starts, or the chat's first line."""
    preflight_timeout_s: float = 20.0
    """The endpoint check's deadline (the models list and the tiny request together): a server that accepts
    connections and never answers is one line after it, not a hang."""
    json_schema: bool = True
    """Ask for structured output (``response_format`` json_schema) when the final answer is due."""
    stream: bool | None = None
    """Stream the answers (``--llm-stream``, ``--no-llm-stream``); unset: the chat's requests stream (its text
    shows as it comes), the audit's agents' do not. A server that refuses a streamed request gets it whole."""
    max_parallel: int = 4
    """Requests in flight at once across all agents."""
    temperature: float | None = None
    evidence_chars: int = 360
    """The evidence summary sent to one agent, in characters."""
    findings_chars: int = 1800
    """The rule findings sent to one agent, in characters."""
    tool_output_chars: int = 3000
    """One tool result sent back to the model, in characters."""

    def model_for(self, agent: str) -> str:
        """The model ``agent``'s requests go to (empty: the server's only model)."""
        return dict(self.area_models).get(agent, self.model)
