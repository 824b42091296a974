"""What a conversation holds: the person's and rigaudit's messages, and each exchange with the model."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field

from rigaudit.tools.schema.events.base import BaseEvent


class Message(BaseEvent):
    """Free text for the conversation: what the person typed, what rigaudit answered."""

    type: Literal["message"] = "message"
    role: Literal["user", "assistant", "system"]
    text: str


class ReplyStreamed(BaseEvent):
    """The model's answer so far as it streams, each in place of the last (``""``: nothing to show, the answer is
    whole or a try starts again). What may be shown of it (:mod:`~rigaudit.agents.llm.streamed`); not recorded:
    the whole answer's :class:`Message` follows it."""

    display_only: ClassVar[bool] = True
    type: Literal["reply_streamed"] = "reply_streamed"
    text: str


class LlmExchange(BaseEvent):
    """One request to the model and its reply; agent ``total``: what the session's requests spent together."""

    type: Literal["llm_exchange"] = "llm_exchange"
    agent: str
    request: dict[str, Any] = Field(default_factory=dict)
    response: dict[str, Any] = Field(default_factory=dict)
    usage: dict[str, int] = Field(default_factory=dict)
    cost_usd: float | None = None
    """Of the ``total``: what every priced agent's tokens cost at the user's prices (``--llm-price``); ``None``: none."""
