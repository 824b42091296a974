"""A systemd unit's ``Environment=`` is the service's environment: redacted by the allow-list, as
``/proc/PID/environ`` is, in a unit file (what a snapshot and the share bundle keep), in ``systemctl cat`` and
``systemctl show`` output (what a model may run unasked), quoted or not."""

from __future__ import annotations

import pytest

from rigaudit.tools.redact import REDACTED, Tally, redact_bytes, redact_output

UNIT = (
    "[Service]\n"
    "Environment=\"CUSTOM_SETTING=opaque value one\" NCCL_DEBUG=INFO 'OTHER=opaque two' PLAIN=opaque3 EMPTY=\n"
    "  Environment=CUDA_VISIBLE_DEVICES=0,1 DB_CONN=host:5432/app\n"
    "EnvironmentFile=/etc/default/vllm\n"
    "UnsetEnvironment=CUDA_LAUNCH_BLOCKING\n"
    "ExecStart=/usr/bin/vllm serve m --port 8000\n"
)


def test_a_unit_files_environment_keeps_only_what_the_checks_read() -> None:
    tally = Tally()
    out = redact_bytes(UNIT.encode(), "/etc/systemd/system/vllm.service", tally).decode()
    assert "opaque" not in out and "host:5432" not in out
    assert f'"CUSTOM_SETTING={REDACTED}"' in out and f"'OTHER={REDACTED}'" in out and f"PLAIN={REDACTED}" in out
    assert "NCCL_DEBUG=INFO" in out and "CUDA_VISIBLE_DEVICES=0,1" in out and " EMPTY=\n" in out
    assert "EnvironmentFile=/etc/default/vllm" in out and "UnsetEnvironment=CUDA_LAUNCH_BLOCKING" in out
    assert "ExecStart=/usr/bin/vllm serve m --port 8000" in out
    assert tally["environment"] == 4


@pytest.mark.parametrize(
    "argv",
    [("systemctl", "show", "vllm", "-p", "Environment"), ("systemctl", "cat", "vllm"), ("systemctl", "show", "vllm")],
)
def test_systemctl_prints_a_units_environment_redacted(argv: tuple[str, ...]) -> None:
    shown = "Id=vllm.service\nEnvironment=HF_HOME=/models CUSTOM_SETTING=opaquevalue123 NCCL_P2P_LEVEL=NVL\n"
    out = redact_output(argv, shown)
    assert out == f"Id=vllm.service\nEnvironment=HF_HOME=/models CUSTOM_SETTING={REDACTED} NCCL_P2P_LEVEL=NVL\n"
