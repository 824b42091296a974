"""An argument vector read as text (``cat /proc/PID/cmdline``: words split by NUL) is redacted by its programs' rules.

The independent fourth attack pass (docs/validation/attack-review.md) found ``mysql -pPASS``, ``redis-cli -a PASS``,
``sshpass -p PASS`` and ``--api-key PASS`` redacted in a snapshot's ``cmdline`` file but kept in a command's output,
the audit JSON, the transcript, the model and the share bundle, which see the same words as text.
"""

from __future__ import annotations

import pytest

from rigaudit.tools.redact import redact_argv, redact_output, redact_text

_SECRET = "Qx5e1f0c9aVk"
ARGVS = [
    ["mysql", "-uroot", f"-p{_SECRET}", "-h", "db"],
    ["redis-cli", "-a", _SECRET, "ping"],
    ["sshpass", "-p", _SECRET, "ssh", "gpu02"],
    ["vllm", "serve", "m", "--api-key", _SECRET],
    ["python3", "serve.py", "--hf-token", _SECRET],
]


@pytest.mark.parametrize("argv", ARGVS, ids=lambda a: a[0])
def test_a_nul_separated_argv_as_text_is_redacted_like_the_argv(argv: list[str]) -> None:
    text = "\x00".join(argv) + "\x00"
    assert _SECRET in "".join(argv)
    assert _SECRET not in redact_text(text)
    assert _SECRET not in redact_output(["cat", "/proc/812/cmdline"], text)
    assert redact_text(text) == "\x00".join(redact_argv(argv)) + "\x00"


def test_a_nul_separated_argv_with_no_secret_is_the_same_object() -> None:
    text = "python3\x00-m\x00sglang.launch_server\x00--tp\x008\x00"
    assert redact_text(text) is text
