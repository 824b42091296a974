"""What LLM mode spent: requests and tokens per agent and in total, against the audit's token budget."""

from __future__ import annotations

from dataclasses import dataclass, field

from rigaudit.agents.llm.errors import BudgetExhausted


@dataclass
class Usage:
    requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    prompt_chars: int = 0

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def add(self, prompt_tokens: int, completion_tokens: int, prompt_chars: int) -> None:
        self.requests += 1
        self.prompt_tokens += prompt_tokens
        self.completion_tokens += completion_tokens
        self.prompt_chars += prompt_chars

    def as_dict(self) -> dict[str, int]:
        return {
            "requests": self.requests,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.tokens,
            "prompt_chars": self.prompt_chars,
        }

    def line(self) -> str:
        return f"{self.requests} request(s), {self.prompt_tokens:,} prompt + {self.completion_tokens:,} completion tokens"


@dataclass
class UsageBook:
    """Per-agent and total usage, and the audit's shared token budget (``None``: unlimited)."""

    token_budget: int | None = None
    agents: dict[str, Usage] = field(default_factory=dict)
    total: Usage = field(default_factory=Usage)

    def remaining(self) -> int | None:
        return None if self.token_budget is None else max(0, self.token_budget - self.total.tokens)

    def check(self, agent: str, estimated_prompt_tokens: int) -> None:
        """Refuse a request that the budget cannot pay for."""
        left = self.remaining()
        if left is not None and estimated_prompt_tokens >= left:
            raise BudgetExhausted(
                f"the audit's token budget ({self.token_budget:,}) is spent "
                f"({self.total.tokens:,} used; this request needs about {estimated_prompt_tokens:,})"
            )

    def record(self, agent: str, prompt_tokens: int, completion_tokens: int, prompt_chars: int) -> None:
        self.agents.setdefault(agent, Usage()).add(prompt_tokens, completion_tokens, prompt_chars)
        self.total.add(prompt_tokens, completion_tokens, prompt_chars)

    def lines(self) -> list[str]:
        """``LLM usage: ...`` then one line per agent."""
        out = [f"LLM usage: {self.total.line()}, {self.total.prompt_chars:,} prompt characters"]
        width = max((len(a) for a in self.agents), default=0)
        out += [f"  {agent:<{width}}  {usage.line()}" for agent, usage in sorted(self.agents.items())]
        return out
