"""Models per area and prices in the config file (``models``, ``prices``), the command line's winning."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from rigaudit.agents.llm.cost import Price, price_for
from rigaudit.orchestrator.cli import main
from rigaudit.orchestrator.commands._llm import add_llm_arguments, config_path, llm_config_from_args
from rigaudit.tools.core.errors import UsageError
from tests.test_llm_support import SEED

URL = "http://127.0.0.1:1/v1"


def _parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_llm_arguments(parser)
    return parser.parse_args(["--llm", *argv])


def _write(llm: dict[str, object]) -> Path:
    path = config_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"llm": {"base_url": URL, **llm}}))
    return path


def test_the_files_models_and_prices_are_read() -> None:
    _write({"model": "big", "models": ["numa=small", "chat=tiny"], "prices": ["in=1,out=2", "small:in=0.1,out=0.2"]})
    config = llm_config_from_args(_parse())
    assert config is not None and config.model == "big"
    assert (config.model_for("numa"), config.model_for("chat"), config.model_for("kernel")) == ("small", "tiny", "big")
    assert config.prices == (Price("", 1.0, 2.0), Price("small", 0.1, 0.2))
    _write({"models": "numa=small"})  # one string is a list of one
    config = llm_config_from_args(_parse())
    assert config is not None and config.model == "" and config.area_models == (("numa", "small"),)


def test_the_command_line_wins_area_by_area_and_price_by_price() -> None:
    _write({"models": ["big", "numa=small", "chat=tiny"], "prices": ["in=1,out=2", "small:in=0.1,out=0.2"]})
    config = llm_config_from_args(_parse("--model", "cli", "--llm-model", "numa=other", "--llm-price", "small:in=5,out=6"))
    assert config is not None and config.model == "cli"
    assert (config.model_for("numa"), config.model_for("chat")) == ("other", "tiny")
    assert price_for(config.prices, "small") == Price("small", 5.0, 6.0)
    assert price_for(config.prices, "big") == Price("", 1.0, 2.0)


@pytest.mark.parametrize(
    ("llm", "said"),
    [
        ({"models": ["nosuch=small"]}, "models: unknown area(s) nosuch"),
        ({"models": ["numa="]}, "models numa= names no model"),
        ({"models": {"numa": "small"}}, "models must be a list of AREA=NAME strings"),
        ({"models": ["a"], "model": "b"}, "model b and models a name two default models"),
        ({"prices": ["in=cheap,out=1"]}, "prices 'in=cheap,out=1': expected in=X,out=Y"),
        ({"prices": [1, 2]}, "prices must be a list of [MODEL:]in=X,out=Y strings"),
    ],
)
def test_a_bad_entry_is_one_line_naming_the_file(llm: dict[str, object], said: str) -> None:
    path = _write(llm)
    with pytest.raises(UsageError) as caught:
        llm_config_from_args(_parse())
    assert str(caught.value).startswith(f"{path}: ") and said in str(caught.value), caught.value


def test_a_bad_entry_exits_2_with_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    _write({"prices": ["in=1"]})
    code = main(["audit", "--snapshot", str(SEED), "--llm", "--json", str(tmp_path / "a.json"), "--no-live", "--no-transcript"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "prices 'in=1': expected in=X,out=Y" in err[0], err
