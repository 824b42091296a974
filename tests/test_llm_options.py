"""--llm settings: command line over environment over config file, and clear errors."""

from __future__ import annotations

import argparse
import json
import os
import re
from pathlib import Path

import pytest

from rigaudit.agents.llm import LLMBrain
from rigaudit.orchestrator.commands._llm import add_llm_arguments, brain_from_args, config_path, llm_config_from_args
from rigaudit.tools.core.errors import UsageError


def _parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_llm_arguments(parser)
    return parser.parse_args(list(argv))


def _write_config(data: object) -> Path:
    path = config_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))
    return path


def test_no_llm_flag_means_no_brain_and_no_request() -> None:
    assert llm_config_from_args(_parse()) is None
    assert brain_from_args(_parse()) is None
    with pytest.raises(UsageError, match="--base-url only applies with --llm"):
        llm_config_from_args(_parse("--base-url", "http://127.0.0.1:1/v1"))


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--llm-deadline", "5"], "--llm-deadline only applies with --llm"),
        (["--no-llm-stream"], "--llm-stream/--no-llm-stream only applies with --llm"),
        (["--llm-max-steps", "0", "--llm-no-preflight"], "--llm-max-steps, --llm-no-preflight only apply with --llm"),
        (["--api-key-env", "KEY", "--llm-token-field", "max_tokens"], "--api-key-env, --llm-token-field only apply"),
    ],
)
def test_an_llm_option_without_llm_is_one_line_never_ignored(argv: list[str], said: str) -> None:
    with pytest.raises(UsageError, match=re.escape(said)):
        llm_config_from_args(_parse(*argv))


def test_cli_beats_environment_beats_config_file() -> None:
    assert config_path() == Path(os.environ["XDG_CONFIG_HOME"]) / "rigaudit" / "config.json"
    _write_config({"llm": {"base_url": "http://127.0.0.1:1/v1", "model": "from-file", "max_steps": 3, "agent_time_s": 30}})
    env = {"XDG_CONFIG_HOME": os.environ["XDG_CONFIG_HOME"]}
    config = llm_config_from_args(_parse("--llm"), env)
    assert config is not None and (config.base_url, config.model, config.max_steps, config.agent_time_s) == (
        "http://127.0.0.1:1/v1",
        "from-file",
        3,
        30,
    )
    env["OPENAI_BASE_URL"] = "http://127.0.0.1:2/v1"
    config = llm_config_from_args(_parse("--llm"), env)
    assert config is not None and config.base_url == "http://127.0.0.1:2/v1"
    config = llm_config_from_args(
        _parse("--llm", "--base-url", "http://127.0.0.1:3/v1", "--model", "cli", "--llm-max-steps", "9"), env
    )
    assert config is not None and (config.base_url, config.model, config.max_steps) == ("http://127.0.0.1:3/v1", "cli", 9)


def test_the_key_comes_from_the_named_variable() -> None:
    env = {"XDG_CONFIG_HOME": os.environ["XDG_CONFIG_HOME"], "OPENAI_API_KEY": "sk-default", "MY_KEY": "sk-mine"}
    config = llm_config_from_args(_parse("--llm"), env)
    assert config is not None and config.api_key == "sk-default"
    config = llm_config_from_args(_parse("--llm", "--api-key-env", "MY_KEY"), env)
    assert config is not None and config.api_key == "sk-mine"
    _write_config({"api_key_env": "MISSING", "base_url": "http://127.0.0.1:8000/v1"})
    config = llm_config_from_args(_parse("--llm"), env)
    assert config is not None and config.api_key is None


def test_flat_config_files_work_and_bad_ones_are_one_clear_line() -> None:
    _write_config({"model": "flat", "stream": True, "json_schema": False, "base_url": "http://127.0.0.1:8000/v1"})
    config = llm_config_from_args(_parse("--llm"))
    assert config is not None and (config.model, config.stream, config.json_schema) == ("flat", True, False)
    _write_config({"llm": {"max_step": 3}})
    with pytest.raises(UsageError, match=r"unknown llm setting.*max_step"):
        llm_config_from_args(_parse("--llm"))
    _write_config({"llm": {"max_steps": "many"}})
    with pytest.raises(UsageError, match="max_steps must be of type int"):
        llm_config_from_args(_parse("--llm"))
    config_path().write_text("{not json")
    with pytest.raises(UsageError, match="not JSON"):
        llm_config_from_args(_parse("--llm"))


def test_bad_budgets_are_usage_errors() -> None:
    with pytest.raises(UsageError, match="max steps must be at least 1"):
        llm_config_from_args(_parse("--llm", "--llm-max-steps", "0"))
    with pytest.raises(SystemExit):  # refused as it is parsed: tests/test_number_options.py
        _parse("--llm", "--llm-timeout", "0")
    for value in (0, -1, float("nan")):
        _write_config({"llm": {"agent_time_s": value, "base_url": "http://127.0.0.1:8000/v1"}})
        with pytest.raises(UsageError, match="--llm-timeout must be a positive number of seconds"):
            llm_config_from_args(_parse("--llm"))


def test_a_real_endpoint_is_a_usage_error_in_tests() -> None:
    with pytest.raises(UsageError, match="RIGAUDIT_BLOCK_REAL_LLM is set"):
        brain_from_args(_parse("--llm", "--base-url", "https://api.openai.com/v1"))
    brain = brain_from_args(_parse("--llm", "--base-url", "http://127.0.0.1:9/v1", "--llm-no-json-schema", "--llm-stream"))
    assert isinstance(brain, LLMBrain) and brain.config.json_schema is False and brain.config.stream is True
    assert brain.approver is None  # no terminal in tests: commands the policy would ask about are refused


def test_llm_without_a_server_is_one_clear_usage_error() -> None:
    import argparse

    import pytest

    from rigaudit.orchestrator.commands._llm import add_llm_arguments, llm_config_from_args
    from rigaudit.tools.core.errors import UsageError

    parser = argparse.ArgumentParser()
    add_llm_arguments(parser)
    with pytest.raises(UsageError, match="--llm needs a model server"):
        llm_config_from_args(parser.parse_args(["--llm", "--model", "m"]), env={})
    assert llm_config_from_args(parser.parse_args(["--llm"]), env={"OPENAI_API_KEY": "sk-test"}) is not None


def test_the_completion_limit_field_is_a_setting() -> None:
    url = "http://127.0.0.1:1/v1"
    auto = llm_config_from_args(_parse("--llm", "--base-url", url))
    assert auto is not None and auto.token_field == "auto" and auto.preflight
    cli = llm_config_from_args(_parse("--llm", "--base-url", url, "--llm-token-field", "max_completion_tokens"))
    assert cli is not None and cli.token_field == "max_completion_tokens"
    _write_config({"llm": {"token_field": "max_tokens", "preflight": False}})
    filed = llm_config_from_args(_parse("--llm", "--base-url", url))
    assert filed is not None and filed.token_field == "max_tokens" and not filed.preflight
    _write_config({"llm": {"token_field": "max_new_tokens"}})
    with pytest.raises(UsageError, match="token_field must be one of auto, max_tokens, max_completion_tokens"):
        llm_config_from_args(_parse("--llm", "--base-url", url))
