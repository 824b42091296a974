"""The scripted server by hand (``python -m rigaudit.agents.llm.testing SCRIPT.json --family NAME``): a script
written as JSON, answered as a server family does, so that the chat and the audit can be tried against a
server that refuses streaming, stalls or cuts prompts without writing Python."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from rigaudit.agents.llm.testing.server import reply_from_json


def test_a_json_reply_can_stall_count_its_usage_and_think() -> None:
    reply = reply_from_json({"content": "late", "delay_s": 30, "usage": [100, 5], "reasoning": "hmm"})
    assert (reply.content, reply.delay_s, reply.usage, reply.reasoning) == ("late", 30.0, (100, 5), "hmm")
    plain = reply_from_json({"content": "now"})
    assert (plain.delay_s, plain.usage, plain.reasoning) == (0.0, None, "")


def _post(url: str, body: dict[str, Any]) -> tuple[int, str]:
    request = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=20) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_the_server_by_hand_answers_as_the_family_it_is_given(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"scripts": {"chat": [{"content": "whole answer"}]}}))
    argv = [sys.executable, "-m", "rigaudit.agents.llm.testing", str(script), "--family", "no-stream"]
    server = subprocess.Popen(argv, stderr=subprocess.PIPE, text=True)
    try:
        assert server.stderr is not None
        first = server.stderr.readline()
        assert "answering as no-stream" in first, first
        url = first.split(" at ")[1].split(",")[0] + "/chat/completions"
        chat = {"model": "scripted", "messages": [{"role": "system", "content": "# chat coordinator"}]}
        status, said = _post(url, {**chat, "stream": True})
        assert status == 400 and "streaming is not supported" in said
        status, said = _post(url, chat)
        assert status == 200 and json.loads(said)["choices"][0]["message"]["content"] == "whole answer"
        server.send_signal(signal.SIGINT)
        _, rest = server.communicate(timeout=20)
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    assert server.returncode == 0 and "every scripted reply was used" in rest
    assert "RuntimeWarning" not in first + rest  # run as a package: the module is not imported twice
