"""The typed actions a chat model may ask for: one pydantic model of arguments per tool, nothing free-form.

A model never passes argv: ``bench_inference`` takes bounded numbers (the server is the person's
``--bench-base-url``/``--bench-model``, the result file is rigaudit's), ``write_report`` takes a
file name under the work directory, ``compare`` two result files there, ``rollback`` nothing (or a
journal this conversation wrote). Arguments that do not validate go back to the model as one
error line; the tool schemas sent to the model are these models' own JSON schemas.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import PurePosixPath
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from rigaudit.agents.llm.answer import CHECK_ID
from rigaudit.agents.llm.client import ToolCallRequest
from rigaudit.orchestrator.chat.load import BenchArgs
from rigaudit.orchestrator.chat.steps import Step, StepKind
from rigaudit.tools.files.bounded import loads

_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}$")


def _relative_name(value: str, suffix: str) -> str:
    """A plain relative file name (folders allowed), never absolute, ``~``, ``..`` or hidden parts."""
    path = PurePosixPath(value)
    if value != value.strip() or not value or path.is_absolute() or len(path.parts) > 4:
        raise ValueError("a relative file name in the work directory (no leading /, at most 3 folders)")
    if any(not _NAME.match(part) or part in (".", "..") for part in path.parts):
        raise ValueError("each part: letters, digits, '_', '.', '-' (no '..', no hidden names)")
    if path.suffix.lower() != suffix:
        raise ValueError(f"a {suffix} file")
    return value


def _markdown(value: str) -> str:
    return _relative_name(value, ".md")


def _json_file(value: str) -> str:
    return _relative_name(value, ".json")


MarkdownName = Annotated[str, Field(max_length=200), AfterValidator(_markdown)]
JsonName = Annotated[str, Field(max_length=200), AfterValidator(_json_file)]


class _Args(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class NoArgs(_Args):
    """A tool that takes nothing."""


class ExplainArgs(_Args):
    check: str = Field(pattern=CHECK_ID, max_length=80, description="a check id, e.g. numa.balancing")


class ReportArgs(_Args):
    path: MarkdownName | None = Field(default=None, description="a .md file in the work directory (default system-improve.md)")


class CompareArgs(_Args):
    base: JsonName
    new: JsonName


ARGUMENTS: dict[str, tuple[type[BaseModel], StepKind, str]] = {
    "audit": (NoArgs, "audit", "Audit the host (read-only); returns the problems and the plan."),
    "explain": (ExplainArgs, "explain", "Why a check came out as it did: evidence, explanation, fix."),
    "write_report": (ReportArgs, "report", "Write the report (a .md file in the work directory; default system-improve.md)."),
    "apply_runtime": (NoArgs, "apply_runtime", "Apply the plan's runtime steps (each approved; a snapshot only as a copy)."),
    "bench_p2p": (NoArgs, "bench_p2p", "Run the P2P micro-benchmark on this machine's GPUs."),
    "bench_inference": (
        BenchArgs,
        "bench_inference",
        "Rerun the inference benchmark against the person's server; optional load settings only.",
    ),
    "compare": (CompareArgs, "compare", "Compare two inference results (.json files in the work directory)."),
    "rollback": (NoArgs, "rollback", "Undo this conversation's last apply."),
}


def _schema(model: type[BaseModel]) -> dict[str, Any]:
    schema = model.model_json_schema()
    schema.pop("title", None)
    schema.pop("description", None)
    for prop in schema.get("properties", {}).values():
        prop.pop("title", None)
    schema["additionalProperties"] = False
    schema.setdefault("properties", {})
    return schema


TOOLS: tuple[dict[str, Any], ...] = tuple(
    {"type": "function", "function": {"name": name, "description": text, "parameters": _schema(model)}}
    for name, (model, _, text) in ARGUMENTS.items()
)


def _errors(exc: ValidationError) -> str:
    return "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}" for e in exc.errors()[:4])


def step_for(call: ToolCallRequest) -> Step | str:
    """The step a model's tool call asks for (``origin="model"``), or one error line for the model."""
    entry = ARGUMENTS.get(call.name)
    if entry is None:
        return f"error: there is no tool named {call.name!r}; the tools are: {', '.join(ARGUMENTS)}"
    model, kind, _ = entry
    try:
        raw = loads(call.arguments or "{}")
        args = model.model_validate(raw if raw is not None else {})
    except ValidationError as exc:
        return f"error: {call.name}: {_errors(exc)}"
    except ValueError as exc:
        return f"error: the arguments of {call.name} are not valid JSON ({exc})"
    words: Sequence[str] = ()
    if isinstance(args, ExplainArgs):
        words = (args.check,)
    elif isinstance(args, ReportArgs):
        words = (args.path,) if args.path else ()
    elif isinstance(args, CompareArgs):
        words = (args.base, args.new)
    bench = args if isinstance(args, BenchArgs) else None
    return Step(kind, tuple(words), origin="model", bench=bench)
