"""The load a chat model may choose for an inference benchmark rerun: bounded numbers, nothing else."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field


class BenchArgs(BaseModel):
    """The load of a rerun; the server and the result file are not the model's to choose."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    concurrency: list[Annotated[int, Field(ge=1, le=256)]] | None = Field(default=None, min_length=1, max_length=8)
    requests: int | None = Field(default=None, ge=1, le=1000)
    prompt_tokens: int | None = Field(default=None, ge=1, le=32_768)
    max_tokens: int | None = Field(default=None, ge=1, le=8192)
    repeat: int | None = Field(default=None, ge=1, le=10)

    def words(self) -> tuple[str, ...]:
        """The ``bench inference`` options these stand for (``--concurrency 1,4 --requests 8``)."""
        out: list[str] = []
        if self.concurrency:
            out += ["--concurrency", ",".join(str(c) for c in dict.fromkeys(self.concurrency))]
        for name in ("requests", "prompt_tokens", "max_tokens", "repeat"):
            value = getattr(self, name)
            if value is not None:
                out += [f"--{name.replace('_', '-')}", str(value)]
        return tuple(out)

    def values(self) -> list[int]:
        return [*(self.concurrency or ()), *(v for v in (self.requests, self.prompt_tokens, self.max_tokens, self.repeat) if v)]
