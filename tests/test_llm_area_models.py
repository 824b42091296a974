"""A model per area (``--llm-model area=name``): each agent's requests go to its area's model, and say so."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import anyio
import pytest

from rigaudit.agents.llm.testing.server import ScriptedOpenAIServer, call, final
from rigaudit.orchestrator.audit.run import AuditOptions, run_audit
from rigaudit.orchestrator.cli import main
from rigaudit.orchestrator.commands._llm import add_llm_arguments, brain_from_args, llm_config_from_args
from rigaudit.tools.core.errors import UsageError
from rigaudit.tools.schema.events.chat import LlmExchange
from rigaudit.tools.schema.events.union import Event
from tests.test_llm_support import SEED, SeedHost

AREAS = ["kernel", "numa", "pcie"]


def _parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_llm_arguments(parser)
    return parser.parse_args(list(argv))


def test_llm_model_names_the_default_and_each_areas_model() -> None:
    args = _parse("--llm", "--base-url", "http://127.0.0.1:1/v1", "--llm-model", "numa=small", "--llm-model", "big")
    config = llm_config_from_args(args, {})
    assert config is not None and config.model == "big"
    assert config.model_for("numa") == "small" and config.model_for("kernel") == "big"
    config = llm_config_from_args(_parse("--llm", "--base-url", "http://127.0.0.1:1/v1", "--llm-model", "pcie=t"), {})
    assert config is not None and config.model == "" and config.model_for("pcie") == "t"


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ("warp=small", "unknown area(s) warp"),
        ("numa=", "--llm-model numa= names no model"),
        ("=small", "--llm-model =small names no area"),
    ],
)
def test_a_bad_llm_model_is_one_line(value: str, said: str) -> None:
    with pytest.raises(UsageError, match=re.escape(said)):
        llm_config_from_args(_parse("--llm", "--base-url", "http://127.0.0.1:1/v1", "--llm-model", value), {})


def test_two_default_models_are_one_line() -> None:
    with pytest.raises(UsageError, match="--model a and --llm-model b name two default models"):
        llm_config_from_args(_parse("--llm", "--base-url", "http://127.0.0.1:1/v1", "--model", "a", "--llm-model", "b"), {})


def test_an_unknown_area_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code = main(
        ["audit", "--snapshot", str(SEED), "--llm", "--base-url", "http://127.0.0.1:1/v1", "--llm-model", "warp=small",
         "--json", str(tmp_path / "a.json"), "--no-live", "--no-transcript"]
    )  # fmt: skip
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "unknown area(s) warp" in err[0] and "numa" in err[0]
    assert not (tmp_path / "a.json").exists()


def test_each_agent_asks_its_areas_model_and_the_record_and_usage_name_it() -> None:
    events: list[Event] = []
    script = {"numa": [call("read_file", path="/proc/cmdline"), final({"findings": []})]}
    with ScriptedOpenAIServer(script, default=final({"findings": []}), model="big", models=["small"]) as server:
        args = _parse("--llm", "--base-url", server.base_url, "--llm-model", "big", "--llm-model", "numa=small")
        brain = brain_from_args(args, events.append)
        assert brain is not None

        async def audit():  # type: ignore[no-untyped-def]
            try:
                await brain.preflight()
                return await run_audit(SeedHost(), options=AuditOptions(brain=brain, areas=AREAS), emit=events.append)
            finally:
                await brain.aclose()

        result = anyio.run(audit)
        server.assert_complete()
        asked = {(r.key, r.body["model"]) for r in server.requests}
    assert asked == {("preflight", "big"), ("kernel", "big"), ("numa", "small"), ("pcie", "big")}
    recorded = [(e.agent, e.request["model"]) for e in events if isinstance(e, LlmExchange) and e.agent != "total"]
    assert sorted(set(recorded)) == [("kernel", "big"), ("numa", "small"), ("pcie", "big")]
    assert recorded.count(("numa", "small")) == 2
    lines = brain.usage_lines()
    assert any(line.split()[:2] == ["numa", "small"] for line in lines), lines
    assert any(line.split()[:2] == ["kernel", "big"] for line in lines), lines
    assert result.llm is not None and "numa: small" in result.llm.endpoint
    assert result.llm.by_agent["numa"].model == "small" and result.llm.by_agent["pcie"].model == "big"


def test_preflight_refuses_an_areas_model_the_server_does_not_serve() -> None:
    with ScriptedOpenAIServer({}, default=final({"findings": []}), model="big") as server:
        args = _parse("--llm", "--base-url", server.base_url, "--llm-model", "big", "--llm-model", "numa=tiny")
        brain = brain_from_args(args)
        assert brain is not None

        async def check() -> str:
            try:
                await brain.preflight()
            except Exception as exc:
                return str(exc)
            finally:
                await brain.aclose()
            return ""

        said = anyio.run(check)
    assert "does not serve 'tiny'" in said and "big" in said
