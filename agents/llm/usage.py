"""What LLM mode spent: requests and tokens per agent and in total, against the audit's token budget.

The budget holds because every request is paid for before it is sent: once a request slot is
granted, :meth:`UsageBook.reserve` books the prompt's estimated tokens plus the completion it allows
(shrunk to what is left; refused when not even a short answer fits), and the reply settles it at
what the server counted. A failed or retried request is a request too: its prompt stays booked.
Tokens are estimated from characters at :data:`CHARS_PER_TOKEN` (plus :data:`TEMPLATE_TOKENS`) until the
server's own counts show a denser tokenizer (the densest ratio seen is used from then on).
"""

from __future__ import annotations

import math
import threading

from rigaudit.agents.llm.cost import Price, price_for, usd
from rigaudit.agents.llm.errors import BudgetExhausted
from rigaudit.tools.core.record import Record, field

CHARS_PER_TOKEN = 3.0
"""A cautious estimate (English and JSON run at about 4 characters per token)."""
MIN_COMPLETION = 64
"""The smallest completion worth sending a request for."""
TEMPLATE_TOKENS = 16
"""Tokens a server adds to any prompt beyond its characters (the chat template's role and tool markers, a count
rounded up): part of every estimate, so a server that counts a little more than the characters hold still fits."""


class Usage(Record, frozen=False):
    requests: int = 0
    failed: int = 0
    """Requests that got no usable answer (errors, timeouts, retries): their prompts are counted too."""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    prompt_chars: int = 0
    model: str = ""
    """The model these requests went to (an agent's requests all go to its area's)."""

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def add(self, prompt_tokens: int, completion_tokens: int, prompt_chars: int, *, failed: bool = False) -> None:
        self.requests += 1
        self.failed += int(failed)
        self.prompt_tokens += prompt_tokens
        self.completion_tokens += completion_tokens
        self.prompt_chars += prompt_chars

    def as_dict(self) -> dict[str, int]:
        return {
            "requests": self.requests,
            "failed_requests": self.failed,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.tokens,
            "prompt_chars": self.prompt_chars,
        }

    def line(self) -> str:
        failed = f" ({self.failed} failed)" if self.failed else ""
        return f"{self.requests} request(s){failed}, {self.prompt_tokens:,} prompt + {self.completion_tokens:,} completion tokens"


class Ticket(Record, frozen=False):
    """One request paid for in advance; :meth:`settle` or :meth:`fail` exactly once."""

    book: UsageBook
    agent: str
    prompt_chars: int
    prompt_estimate: int
    max_tokens: int
    """The completion this request may ask for (at most what the caller wanted, at most what is left)."""
    model: str = ""
    done: bool = False

    @property
    def reserved(self) -> int:
        return self.prompt_estimate + self.max_tokens

    def settle(self, prompt_tokens: int | None, completion_tokens: int) -> None:
        """The server answered: book what it counted (``None``: it counted nothing, the estimate stands)."""
        self.book._settle(self, prompt_tokens, completion_tokens, failed=False)

    def fail(self) -> None:
        """No usable answer: the prompt stays booked (the server may have read it), no completion."""
        self.book._settle(self, None, 0, failed=True)


class UsageBook(Record, frozen=False):
    """Per-agent and total usage, and the audit's shared token budget (``None``: unlimited)."""

    token_budget: int | None = None
    agents: dict[str, Usage] = field(default_factory=dict)
    total: Usage = field(default_factory=Usage)
    reserved: int = 0
    """Tokens of requests in flight, paid for but not settled."""
    chars_per_token: float = CHARS_PER_TOKEN
    prices: tuple[Price, ...] = ()
    """What tokens cost (``--llm-price``); none: no cost is shown."""
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def estimate(self, chars: int) -> int:
        return math.ceil(chars / self.chars_per_token) + TEMPLATE_TOKENS

    def remaining(self) -> int | None:
        """Tokens not spent nor reserved."""
        return None if self.token_budget is None else max(0, self.token_budget - self.total.tokens - self.reserved)

    def affordable(self, chars: int, max_tokens: int) -> bool:
        """Whether a request of ``chars`` with a ``max_tokens`` answer fits in what is left now."""
        left = self.remaining()
        return left is None or self.estimate(chars) + max_tokens <= left

    def reserve(self, agent: str, chars: int, max_tokens: int, *, model: str = "") -> Ticket:
        """Pay for a request before sending it; :class:`BudgetExhausted` when not even a short answer fits."""
        with self._lock:
            estimate = self.estimate(chars)
            left = self.remaining()
            if left is not None:
                if estimate + min(max_tokens, MIN_COMPLETION) > left:
                    raise BudgetExhausted(
                        f"the audit's token budget ({self.token_budget:,}) is spent "
                        f"({self.total.tokens:,} used, {self.reserved:,} in flight; this request needs about {estimate:,})"
                    )
                max_tokens = min(max_tokens, left - estimate)
            ticket = Ticket(self, agent, chars, estimate, max_tokens, model)
            self.reserved += ticket.reserved
            return ticket

    def _settle(self, ticket: Ticket, prompt_tokens: int | None, completion_tokens: int, *, failed: bool) -> None:
        with self._lock:
            if ticket.done:
                return
            ticket.done = True
            self.reserved -= ticket.reserved
            if prompt_tokens is not None and prompt_tokens > 0:
                self.chars_per_token = min(self.chars_per_token, max(1.0, ticket.prompt_chars / prompt_tokens))
            prompt = prompt_tokens if prompt_tokens is not None and prompt_tokens > 0 else ticket.prompt_estimate
            self._add(ticket.agent, prompt, max(0, completion_tokens), ticket.prompt_chars, failed=failed)
            if ticket.model:
                self.agents[ticket.agent].model = ticket.model

    def _add(self, agent: str, prompt: int, completion: int, chars: int, *, failed: bool) -> None:
        self.agents.setdefault(agent, Usage()).add(prompt, completion, chars, failed=failed)
        self.total.add(prompt, completion, chars, failed=failed)

    def cost(self, agent: str) -> float | None:
        """What ``agent``'s tokens cost at its model's price; ``None`` without one."""
        usage = self.agents.get(agent)
        price = price_for(self.prices, usage.model) if usage is not None else None
        return None if usage is None or price is None else price.cost(usage.prompt_tokens, usage.completion_tokens)

    def total_cost(self) -> float | None:
        """What every priced agent's tokens cost together; ``None`` when none is priced."""
        costs = [c for c in (self.cost(agent) for agent in self.agents) if c is not None]
        return sum(costs) if costs else None

    def _cost_text(self) -> str:
        if not self.prices:
            return ""
        unpriced = sorted({u.model or "?" for a, u in self.agents.items() if u.tokens and self.cost(a) is None})
        total = self.total_cost()
        missing = f"no price for {', '.join(unpriced)}" if unpriced else ""
        if total is None:
            return f", {missing}" if missing else ""
        return f", {usd(total)}" + (f" ({missing})" if missing else "")

    def lines(self) -> list[str]:
        """``LLM usage: ...`` then one line per agent, with the model it asked (and the cost, when priced)."""
        budget = f" of {self.token_budget:,} budgeted" if self.token_budget is not None else ""
        out = [f"LLM usage: {self.total.line()}{budget}, {self.total.prompt_chars:,} prompt characters{self._cost_text()}"]
        width = max((len(a) for a in self.agents), default=0)
        model_width = max((len(u.model) for u in self.agents.values()), default=0)
        for agent, usage in sorted(self.agents.items()):
            model = f"{usage.model:<{model_width}}  " if model_width else ""
            cost = self.cost(agent)
            out.append(f"  {agent:<{width}}  {model}{usage.line()}{f', {usd(cost)}' if cost is not None else ''}")
        return out
