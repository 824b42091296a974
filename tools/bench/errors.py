"""The benchmarks' errors (drawn in the tree of :mod:`rigaudit.tools.core.errors`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from rigaudit.tools.core.errors import OperationError, UsageError

_M = TypeVar("_M", bound=BaseModel)


class BenchUnavailable(UsageError):
    """The benchmark cannot run here (torch, GPUs, a tool missing); the message says what is missing."""


class BenchInputError(UsageError):
    """An input (a result file, a config.json, a size list) is unreadable or malformed."""


class BenchFailed(OperationError):
    """The benchmark started and failed (a worker crashed, a command exited non-zero)."""


def validated(model: type[_M], data: dict[str, Any], path: Path, prefix: str = "") -> _M:
    """``data`` as ``model``; its first validation error as one BenchInputError naming the field."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        errors = exc.errors()
        if not errors:
            raise BenchInputError(f"{path}: {exc}") from None
        where = ".".join(str(part) for part in errors[0]["loc"])
        raise BenchInputError(f"{path}: {prefix}{where}: {errors[0]['msg']}") from None
