"""``--llm`` and its settings, for any command that audits: CLI over environment over config file.

The endpoint: ``--base-url`` > ``OPENAI_BASE_URL`` > ``base_url`` in the config file > OpenAI's.
The model: ``--model`` (or a bare ``--llm-model NAME``) > ``model`` in the config file > the server's only
model; ``--llm-model AREA=NAME`` gives one area's agent its own. The key: the
variable named by ``--api-key-env`` (default ``OPENAI_API_KEY``). The config file is
``$XDG_CONFIG_HOME/rigaudit/config.json`` (``~/.config/...``): ``{"llm": {"base_url": ...,
"model": ..., "max_steps": 6, "max_audit_tokens": 400000, "agent_time_s": 180, "deadline_s": 300, "token_field": "auto",
"models": ["numa=NAME", "chat=NAME"], "prices": ["in=0.2,out=0.6"], ...}}``: ``models`` and ``prices`` hold what
``--llm-model`` and ``--llm-price`` take, and the command line's win (an area's model, a model's price).
Nothing is sent to a model unless ``--llm`` is given.
"""

from __future__ import annotations

import argparse
import math
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from rigaudit.agents.llm.config import TOKEN_FIELDS, LlmConfig
from rigaudit.orchestrator.change.timed_prompt import DEFAULT_TIMEOUT_S, Pause
from rigaudit.orchestrator.commands._arguments import normalize_url, positive_seconds, url
from rigaudit.orchestrator.commands._llm_models import area_models, model_settings, prices
from rigaudit.tools.core.errors import UsageError
from rigaudit.tools.core.record import field_types
from rigaudit.tools.files.bounded import JsonError, loads, read_regular
from rigaudit.tools.policy import Verdict
from rigaudit.tools.policy.shell import Approver

if TYPE_CHECKING:
    from rigaudit.agents.llm.brain import LLMBrain
    from rigaudit.tools.schema.events.union import Event

DEFAULT_KEY_ENV = "OPENAI_API_KEY"
Models = tuple[tuple[str, str], ...]
_FILE_KEYS = {name: kind for name, kind in field_types(LlmConfig).items() if name not in ("api_key", "area_models", "prices")}
_FILE_LISTS = {"models": "AREA=NAME", "prices": "[MODEL:]in=X,out=Y"}
"""The config file's lists of what ``--llm-model`` and ``--llm-price`` take (a single string works too)."""
_FILE_OTHERS = ("api_key_env", *_FILE_LISTS)


def config_path(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    base = env.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "rigaudit" / "config.json"


def load_config_file(path: Path) -> dict[str, Any]:
    """The ``llm`` settings of the config file (a flat object works too); ``{}`` when there is no file."""
    if not (path.exists() or path.is_symlink()):
        return {}
    text = read_regular(path, limit=1024 * 1024, what=f"{path} (the config file)")
    try:
        data = loads(text)
    except JsonError as exc:
        raise UsageError(f"{path}: not JSON ({exc.msg}, line {exc.lineno})") from None
    if not isinstance(data, dict):
        raise UsageError(f"{path}: expected a JSON object")
    section = data.get("llm", data)
    if not isinstance(section, dict):
        raise UsageError(f'{path}: "llm" must be an object')
    unknown = sorted(set(section) - set(_FILE_KEYS) - set(_FILE_OTHERS))
    if unknown:
        known = ", ".join(sorted([*_FILE_KEYS, *_FILE_OTHERS]))
        raise UsageError(f"{path}: unknown llm setting(s) {', '.join(unknown)}; known: {known}")
    return dict(section)


def _file_list(from_file: Mapping[str, Any], name: str, path: Path) -> list[str]:
    """The config file's ``models`` or ``prices``: strings as ``--llm-model`` / ``--llm-price`` take them."""
    value = from_file.get(name, [])
    values = [value] if isinstance(value, str) else value
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise UsageError(f"{path}: {name} must be a list of {_FILE_LISTS[name]} strings, not {value!r}")
    return values


def _models_and_prices(settings: dict[str, Any], from_file: Mapping[str, Any], path: Path, args: argparse.Namespace) -> None:
    """``model``, ``area_models`` and ``prices``: the command line's over the config file's."""
    file_default, file_models = area_models(_file_list(from_file, "models", path), f"{path}: models")
    if file_default is not None:
        if settings.get("model", file_default) != file_default:
            raise UsageError(f"{path}: model {settings['model']} and models {file_default} name two default models: give one")
        settings["model"] = file_default
    cli_model = getattr(args, "model", None)
    if cli_model is not None:
        settings["model"] = cli_model
    given = model_settings(cli_model, getattr(args, "llm_model", None) or ())
    cli_models = given.pop("area_models")
    settings.update(given)
    settings["area_models"] = tuple(sorted({**dict(file_models), **dict(cast(Models, cli_models))}.items()))
    file_prices = prices(_file_list(from_file, "prices", path), f"{path}: prices")
    settings["prices"] = file_prices + prices(getattr(args, "llm_price", None) or ())  # a later price wins


def add_llm_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("LLM mode (any OpenAI-compatible endpoint: vLLM, SGLang, Ollama, llama.cpp, OpenAI)")
    group.add_argument(
        "--llm", action="store_true", help="each investigator also becomes an LLM agent (rule findings always stand)"
    )
    group.add_argument(
        "--base-url",
        type=url,
        metavar="URL",
        help="the endpoint, e.g. http://127.0.0.1:8000/v1 (http:// if no scheme; default: $OPENAI_BASE_URL)",
    )
    group.add_argument("--model", metavar="NAME", help="the model (default: config file, else the server's only model)")
    group.add_argument(
        "--llm-model",
        action="append",
        default=[],
        metavar="[AREA=]NAME",
        help="the model for every agent (as --model), or for one area's agent (AREA=NAME, or chat=NAME for the "
        "chat's own requests), e.g. a cheaper model for triage areas; repeatable",
    )
    group.add_argument(
        "--llm-price",
        action="append",
        default=[],
        metavar="[MODEL:]in=X,out=Y",
        help="dollars per million prompt (in) and completion (out) tokens, for every model or one; repeatable: "
        "the usage lines and --json then show the cost per agent and in total (never without a price)",
    )
    group.add_argument("--api-key-env", metavar="NAME", help=f"the variable holding the API key (default {DEFAULT_KEY_ENV})")
    group.add_argument("--llm-max-steps", type=int, metavar="N", help="requests per agent (default 6)")
    group.add_argument("--llm-max-tokens", type=int, metavar="N", help="tokens for the whole audit (default 400000)")
    group.add_argument("--llm-timeout", type=positive_seconds, metavar="S", help="time limit per agent, seconds (default 180)")
    group.add_argument(
        "--llm-deadline",
        type=positive_seconds,
        metavar="S",
        help="time limit for all agents of an audit together (default 300) and for each chat turn's model requests "
        "(default 120), seconds: agents still running then stop, their areas lost, their rule findings kept",
    )
    group.add_argument(
        "--llm-ask-timeout",
        type=positive_seconds,
        metavar="S",
        help="how long an agent's command that the policy rates 'ask' waits for your answer before it is no (default 60)",
    )
    group.add_argument("--llm-stream", action=argparse.BooleanOptionalAction, help="stream answers (default: the chat's only)")
    group.add_argument(
        "--llm-no-json-schema", action="store_true", help="never send response_format json_schema (json_object, else plain)"
    )
    group.add_argument(
        "--llm-token-field",
        choices=TOKEN_FIELDS,
        help="how the completion limit is sent: max_completion_tokens for OpenAI reasoning models and proxies that "
        "demand it (default auto: that for api.openai.com, else max_tokens, switched when a server asks)",
    )
    group.add_argument(
        "--llm-no-preflight",
        action="store_true",
        help="skip the endpoint check (models list, one tiny request) before the audit or the chat",
    )


def _typed(name: str, value: Any, source: str) -> Any:
    kind = str(_FILE_KEYS[name])
    ok = (
        (kind in ("int",) and isinstance(value, int) and not isinstance(value, bool))
        or (kind.startswith("float") and isinstance(value, (int, float)) and not isinstance(value, bool))
        or (kind.startswith("bool") and isinstance(value, bool))
        or (kind.startswith("str") and isinstance(value, str))
        or (kind.endswith("None") and value is None)
    )
    if not ok:
        raise UsageError(f"{source}: {name} must be of type {kind}, not {value!r}")
    return value


_SECONDS = {
    "agent_time_s": "--llm-timeout",
    "ask_timeout_s": "--llm-ask-timeout",
    "deadline_s": "--llm-deadline",
    "turn_deadline_s": "--llm-deadline",
    "request_timeout_s": "request_timeout_s",
    "preflight_timeout_s": "preflight_timeout_s",
}


_LLM_ONLY: tuple[tuple[str, str, object], ...] = (
    ("--base-url", "base_url", None),
    ("--model", "model", None),
    ("--llm-model", "llm_model", []),
    ("--llm-price", "llm_price", []),
    ("--api-key-env", "api_key_env", None),
    ("--llm-max-steps", "llm_max_steps", None),
    ("--llm-max-tokens", "llm_max_tokens", None),
    ("--llm-timeout", "llm_timeout", None),
    ("--llm-deadline", "llm_deadline", None),
    ("--llm-ask-timeout", "llm_ask_timeout", None),
    ("--llm-stream/--no-llm-stream", "llm_stream", None),
    ("--llm-no-json-schema", "llm_no_json_schema", False),
    ("--llm-token-field", "llm_token_field", None),
    ("--llm-no-preflight", "llm_no_preflight", False),
)
"""The options that only mean something with ``--llm``, and their defaults: given without it, one line (never
ignored)."""


def llm_config_from_args(args: argparse.Namespace, env: Mapping[str, str] | None = None) -> LlmConfig | None:
    """The settings ``--llm`` asks for, or ``None`` without ``--llm``."""
    env = os.environ if env is None else env
    if not getattr(args, "llm", False):
        stray = [flag for flag, name, default in _LLM_ONLY if getattr(args, name, default) != default]
        if stray:
            raise UsageError(f"{', '.join(stray)} only appl{'y' if len(stray) > 1 else 'ies'} with --llm")
        return None
    path = config_path(env)
    from_file = load_config_file(path)
    settings: dict[str, Any] = {}
    for name, value in from_file.items():
        if name not in _FILE_OTHERS:
            settings[name] = _typed(name, value, str(path))
    if env.get("OPENAI_BASE_URL"):
        settings["base_url"] = normalize_url(env["OPENAI_BASE_URL"], "OPENAI_BASE_URL")
    cli = {
        "base_url": getattr(args, "base_url", None),
        "max_steps": getattr(args, "llm_max_steps", None),
        "max_audit_tokens": getattr(args, "llm_max_tokens", None),
        "agent_time_s": getattr(args, "llm_timeout", None),
        "ask_timeout_s": getattr(args, "llm_ask_timeout", None),
    }
    settings.update({k: v for k, v in cli.items() if v is not None})
    _models_and_prices(settings, from_file, path, args)
    if getattr(args, "llm_deadline", None) is not None:
        settings["deadline_s"] = settings["turn_deadline_s"] = args.llm_deadline
    if getattr(args, "llm_stream", None) is not None:
        settings["stream"] = args.llm_stream
    if getattr(args, "llm_no_json_schema", False):
        settings["json_schema"] = False
    if getattr(args, "llm_token_field", None):
        settings["token_field"] = args.llm_token_field
    if getattr(args, "llm_no_preflight", False):
        settings["preflight"] = False
    if settings.get("token_field", "auto") not in TOKEN_FIELDS:
        raise UsageError(f"token_field must be one of {', '.join(TOKEN_FIELDS)}, not {settings['token_field']!r}")
    for name in ("max_steps", "max_audit_tokens", "max_parallel", "max_completion_tokens"):
        if name in settings and settings[name] < 1:
            raise UsageError(f"{name.replace('_', ' ')} must be at least 1")
    for name, what in _SECONDS.items():
        if name in settings and not 0 < settings[name] < math.inf:  # nan too (a config file's NaN)
            raise UsageError(f"{what} must be a positive number of seconds, not {settings[name]}")
    key_env = getattr(args, "api_key_env", None) or from_file.get("api_key_env") or DEFAULT_KEY_ENV
    settings["api_key"] = env.get(str(key_env)) or None
    if not settings.get("base_url") and settings["api_key"] is None:
        raise UsageError(
            f"--llm needs a model server: --base-url URL (or OPENAI_BASE_URL) for an OpenAI-compatible server, "
            f"or {key_env} for OpenAI's own"
        )
    return LlmConfig(**settings)


def terminal_approver(pause: Pause | None = None, *, timeout_s: float = DEFAULT_TIMEOUT_S) -> Approver | None:
    """Asks the person at the terminal about a command the policy rates ``ask``; ``None`` (refuse) without one.

    With the live board paused (``pause``) so it shows where the board was; every question has a
    deadline (``timeout_s``, then it is no) and ends when the agent's own time limit ends the agent, so
    an unanswered question never hangs the audit. The brain asks one question at a time, in order
    (:class:`~rigaudit.agents.llm.ask_queue.AskQueue`).
    """
    from rigaudit.orchestrator.change.approval import is_interactive

    if not is_interactive():
        return None
    from rigaudit.orchestrator.audit.run import current_area
    from rigaudit.orchestrator.change.timed_prompt import ask_yes_no

    async def ask(verdict: Verdict) -> bool:
        who = f" ({current_area()})" if current_area() else ""
        text = f"An LLM agent{who} wants to run: {' '.join(verdict.argv)}\n  policy: ask ({verdict.reason})"
        return await ask_yes_no(text, "Run this command?", timeout_s=timeout_s, pause=pause)

    return ask


def brain_from_args(
    args: argparse.Namespace,
    emit: Callable[[Event], None] | None = None,
    *,
    approver: Approver | None = None,
    pause: Pause | None = None,
) -> LLMBrain | None:
    """The LLM brain ``--llm`` asks for (``None`` without it); a bad setting is one clear line (exit 2).
    ``pause`` stops the live board while an agent's question is asked."""
    config = llm_config_from_args(args)
    if config is None:
        return None
    from rigaudit.agents.llm.brain import LLMBrain  # the agents and their client: only for --llm

    asks = approver if approver is not None else terminal_approver(pause, timeout_s=config.ask_timeout_s)
    return LLMBrain(config, emit=emit, approver=asks)
