"""An LLM audit recorded whole replays offline: ``replay --rediagnose`` re-runs its agents against the recorded
answers, with no server, and reaches the same findings and suggestions; a changed prompt is named."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rigaudit.agents.llm.testing.server import ScriptedOpenAIServer, call, final
from rigaudit.orchestrator.cli import main
from rigaudit.transcripts.reader import read_transcript
from tests.conftest import SEED

SUGGESTION = {
    "check": "kernel.iommu_passthrough",
    "status": "problem",
    "severity": "low",
    "title": "The IOMMU is in passthrough mode",
    "observed": "iommu=pt",
    "evidence": ["file:/proc/cmdline"],
}
AREAS = "kernel,numa"


def _record(tmp_path: Path) -> Path:
    """An LLM audit of the seed through the real client and a loopback server, recorded; the server then stops."""
    transcript = tmp_path / "llm.jsonl"
    script = {"kernel": [call("read_file", path="/proc/cmdline"), final({"findings": [SUGGESTION]})]}
    with ScriptedOpenAIServer(script, default=final({"findings": []})) as server:
        argv = ["audit", "--snapshot", str(SEED), "--areas", AREAS, "--no-live", "--transcript", str(transcript)]
        status = main([*argv, "--llm", "--base-url", server.base_url, "--model", "scripted", "--json", str(tmp_path / "a.json")])
        server.assert_complete()
    assert status in (0, 1)
    return transcript


def _rediagnose(tmp_path: Path, transcript: Path, name: str) -> dict[str, object]:
    out = tmp_path / name
    assert main(["replay", str(transcript), "--rediagnose", "--json", str(out)]) == 0
    data = json.loads(out.read_text())
    assert isinstance(data, dict)
    return data


def test_a_recorded_llm_audit_replays_offline_to_the_same_findings(tmp_path: Path) -> None:
    transcript = _record(tmp_path)
    exchanges = [e for e in read_transcript(transcript).events if getattr(e, "type", "") == "llm_exchange"]
    kernel = [e for e in exchanges if getattr(e, "agent", "") == "kernel"]
    assert len(kernel) == 2
    sent = kernel[0].request["sent"]  # type: ignore[attr-defined]
    assert [m["role"] for m in sent] == ["system", "user"] and len(sent[1]["content"]) > 400  # whole, not cut
    assert kernel[1].response["content"] and "iommu=pt" in kernel[1].response["content"]  # type: ignore[attr-defined]
    assert {"latency_s", "request_id"} <= set(kernel[0].response)  # type: ignore[attr-defined]

    data = _rediagnose(tmp_path, transcript, "same.json")
    assert data["identical"] is True, data["changes"]
    llm = data["llm"]
    assert isinstance(llm, dict)
    assert llm["exchanges"] == len([e for e in exchanges if getattr(e, "agent", "") not in ("total", "chat")])
    assert (llm["changed"], llm["unanswered"], llm["left"], llm["changes"]) == ([], [], {}, [])
    result = data["result"]
    assert isinstance(result, dict)
    assert [s["check"] for s in result["suggestions"]] == ["kernel.iommu_passthrough"]


def test_a_changed_prompt_is_named_and_its_answers_still_replay(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    transcript = _record(tmp_path)
    import rigaudit.agents.llm.agent as agent

    original = agent.system_prompt
    monkeypatch.setattr(agent, "system_prompt", lambda area, **kw: original(area, **kw) + "\nBe brief.")
    data = _rediagnose(tmp_path, transcript, "changed.json")
    llm = data["llm"]
    assert isinstance(llm, dict)
    assert "kernel step 1: the request differs from the recorded one" in llm["changed"]
    assert llm["changes"] == []  # the same answers, so the same suggestion


def test_a_rules_only_transcript_has_no_model_side(tmp_path: Path) -> None:
    transcript = tmp_path / "rules.jsonl"
    main(["audit", "--snapshot", str(SEED), "--areas", AREAS, "--no-live", "--transcript", str(transcript)])
    assert _rediagnose(tmp_path, transcript, "rules.json")["llm"] is None
