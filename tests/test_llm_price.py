"""Cost in money (``--llm-price [MODEL:]in=X,out=Y``, dollars per million tokens): per agent and in total, never invented."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import anyio
import pytest

from rigaudit.agents.llm.cost import Price, usd
from rigaudit.agents.llm.testing.server import ScriptedOpenAIServer, final
from rigaudit.agents.llm.usage import UsageBook
from rigaudit.orchestrator.audit.run import AuditOptions, run_audit
from rigaudit.orchestrator.cli import main
from rigaudit.orchestrator.commands._llm import add_llm_arguments, brain_from_args, llm_config_from_args
from rigaudit.tools.core import record
from rigaudit.tools.core.errors import UsageError
from tests.test_llm_support import SEED, SeedHost

URL = "http://127.0.0.1:1/v1"


def _parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_llm_arguments(parser)
    return parser.parse_args(list(argv))


def test_prices_are_read_for_every_model_or_one() -> None:
    args = _parse("--llm", "--base-url", URL, "--llm-price", "in=0.5,out=1.5", "--llm-price", "qwen3:32b:in=1,out=2")
    config = llm_config_from_args(args, {})
    assert config is not None and config.prices == (Price("", 0.5, 1.5), Price("qwen3:32b", 1.0, 2.0))
    config = llm_config_from_args(_parse("--llm", "--base-url", URL), {})
    assert config is not None and config.prices == ()


@pytest.mark.parametrize(
    "value", ["in=0.5", "out=1", "in=x,out=1", "in=-1,out=1", "in=1,out=2,cache=3", "in=nan,out=1", "", "m:", "in=1;out=2"]
)
def test_a_malformed_price_is_one_line(value: str) -> None:
    with pytest.raises(UsageError, match=re.escape(f"--llm-price {value!r}: expected in=X,out=Y")):
        llm_config_from_args(_parse("--llm", "--base-url", URL, "--llm-price", value), {})


def test_a_malformed_price_exits_2_with_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code = main(
        ["audit", "--snapshot", str(SEED), "--llm", "--base-url", URL, "--llm-price", "in=cheap,out=1",
         "--json", str(tmp_path / "a.json"), "--no-live", "--no-transcript"]
    )  # fmt: skip
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "--llm-price 'in=cheap,out=1'" in err[0]


def _spend(book: UsageBook, agent: str, model: str, prompt: int, completion: int) -> None:
    book.reserve(agent, 100, completion, model=model).settle(prompt, completion)


def test_cost_per_agent_and_in_total_at_each_models_price() -> None:
    book = UsageBook(None, prices=(Price("", 2.0, 10.0), Price("small", 0.1, 0.4)))
    _spend(book, "kernel", "big", 150_000, 10_000)  # 0.30 + 0.10
    _spend(book, "numa", "small", 1_000_000, 500_000)  # 0.10 + 0.20
    lines = book.lines()
    assert lines[0].endswith(", $0.7"), lines
    assert lines[1].split()[:2] == ["kernel", "big"] and lines[1].endswith(", $0.4")
    assert lines[2].split()[:2] == ["numa", "small"] and lines[2].endswith(", $0.3")
    assert book.cost("kernel") == pytest.approx(0.4) and book.total_cost() == pytest.approx(0.7)


@pytest.mark.parametrize(
    ("amount", "shown"),
    [(7.5e-05, "$0.000075"), (1.234567e-06, "$0.000001235"), (0.00052, "$0.00052"), (0.4, "$0.4"), (12.3456, "$12.35"),
     (0.0, "$0"), (1234.5, "$1,234.50")],
)  # fmt: skip
def test_a_cost_is_shown_in_dollars_never_with_an_exponent(amount: float, shown: str) -> None:
    assert usd(amount) == shown


def test_no_price_no_cost_and_an_unpriced_model_is_said() -> None:
    book = UsageBook(None)
    _spend(book, "kernel", "big", 150_000, 10_000)
    assert not any("$" in line for line in book.lines()) and book.total_cost() is None and book.cost("kernel") is None
    book = UsageBook(None, prices=(Price("small", 0.1, 0.4),))
    _spend(book, "kernel", "big", 150_000, 10_000)
    _spend(book, "numa", "small", 1_000_000, 500_000)
    lines = book.lines()
    assert lines[0].endswith(", $0.3 (no price for big)"), lines
    assert "$" not in lines[1] and lines[2].endswith(", $0.3")
    assert book.cost("kernel") is None and book.total_cost() == pytest.approx(0.3)


def test_an_audit_shows_and_records_its_cost_per_agent_and_in_total() -> None:
    answer = record.replace(final({"findings": []}), usage=(5000, 100))
    with ScriptedOpenAIServer({}, default=answer, model="big", models=["small"]) as server:
        args = _parse(
            "--llm", "--base-url", server.base_url, "--llm-model", "big", "--llm-model", "numa=small",
            "--llm-price", "in=1,out=2", "--llm-price", "small:in=0.1,out=0.2",
        )  # fmt: skip
        brain = brain_from_args(args)
        assert brain is not None

        async def audit():  # type: ignore[no-untyped-def]
            try:
                await brain.preflight()
                return await run_audit(SeedHost(), options=AuditOptions(brain=brain, areas=["kernel", "numa"]))
            finally:
                await brain.aclose()

        result = anyio.run(audit)
    assert result.llm is not None
    data = json.loads(result.model_dump_json())["llm"]
    assert data["by_agent"]["kernel"]["cost_usd"] == pytest.approx(0.0052)
    assert data["by_agent"]["numa"]["cost_usd"] == pytest.approx(0.00052)
    assert data["cost_usd"] == pytest.approx(0.0052 * 2 + 0.00052)  # the endpoint check's request is paid too
    lines = brain.usage_lines()
    assert lines[0].endswith(", $0.01092") and any(line.split()[:2] == ["numa", "small"] and "$0.00052" in line for line in lines)


def test_without_a_price_the_json_has_no_cost() -> None:
    with ScriptedOpenAIServer({}, default=final({"findings": []}), model="big") as server:
        brain = brain_from_args(_parse("--llm", "--base-url", server.base_url, "--model", "big", "--llm-no-preflight"))
        assert brain is not None
        result = anyio.run(lambda: run_audit(SeedHost(), options=AuditOptions(brain=brain, areas=["numa"])))
    data = json.loads(result.model_dump_json())["llm"]
    assert data["cost_usd"] is None and data["by_agent"]["numa"]["cost_usd"] is None
    assert not any("$" in line for line in brain.usage_lines())
