"""The one redaction module: environments by allow-list, command lines by flag, values by name and shape."""

from __future__ import annotations

import base64
import json

import pytest

from rigaudit.tools.redact import (
    REDACTED,
    Tally,
    is_allowed_variable,
    is_secret_name,
    looks_random,
    redact_argv,
    redact_bytes,
    redact_json,
    redact_json_text,
    redact_output,
    redact_text,
)

R = REDACTED


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("OPENAI_API_KEY", True),
        ("PGPASSWORD", True),
        ("MYSQL_PWD", True),
        ("--auth", True),
        ("--hf-token", True),
        ("apiKey", True),
        ("Authorization", True),
        ("X-Api-Key", True),
        ("client-key-data", True),
        ("SENTRY_DSN", True),
        ("SLACK_WEBHOOK_URL", True),
        ("PWD", False),
        ("KEYMAP", False),
        ("--tokenizer", False),
        ("--max-num-batched-tokens", False),
        ("TOKENIZERS_PARALLELISM", False),
        ("--ssl-keyfile", False),
        ("PASSWORD_FILE", False),
        ("key", False),
        ("max_tokens", False),
    ],
)
def test_secret_names_by_their_words(name: str, secret: bool) -> None:
    assert is_secret_name(name) is secret


def test_the_environment_keeps_what_checks_read_and_only_the_names_of_the_rest() -> None:
    environ = (
        b"NCCL_P2P_DISABLE=1\x00CUDA_VISIBLE_DEVICES=0,1\x00PATH=/usr/bin\x00container=lxc\x00VLLM_WORKER_MULTIPROC_METHOD=spawn\x00"
        b"VLLM_API_KEY=abc\x00HOME=/home/alice\x00DATABASE_URL=postgres://u:p@db/x\x00EMPTY=\x00"
        b"NCCL_SOCKET_IFNAME=eno1\x00PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True\x00"
    )
    tally = Tally()
    out = redact_bytes(environ, "/proc/4242/environ", tally).split(b"\x00")
    assert out[:5] == environ.split(b"\x00")[:5]
    assert out[5:8] == [b"VLLM_API_KEY=" + R.encode(), b"HOME=" + R.encode(), b"DATABASE_URL=" + R.encode()]
    assert out[8:] == [b"EMPTY=", b"NCCL_SOCKET_IFNAME=eno1", b"PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True", b""]
    assert tally == {"credential": 1, "environment": 2}
    assert not is_allowed_variable("NVIDIA_API_KEY") and is_allowed_variable("NVIDIA_VISIBLE_DEVICES")


def test_an_allowed_variable_still_loses_a_secret_shape() -> None:
    out = redact_bytes(b"VLLM_HOST_URL=https://bob:pw@api.corp/v1\x00HF_ENDPOINT=https://hf.corp\x00", "/proc/1/environ")
    assert out == b"VLLM_HOST_URL=https://" + R.encode() + b"@api.corp/v1\x00HF_ENDPOINT=https://hf.corp\x00"


def test_env_output_is_an_environment_and_continuation_lines_go_with_their_variable() -> None:
    pem = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----"
    text = f"NCCL_DEBUG=INFO\nTLS_KEY={pem}\nTERM=xterm\n"
    assert redact_output(["env"], text) == f"NCCL_DEBUG=INFO\nTLS_KEY={R}\nTERM={R}\n"
    assert (
        redact_output(["strings", "/proc/7/environ"], "A_TOKEN=x\nNCCL_P2P_LEVEL=NVL\n") == f"A_TOKEN={R}\nNCCL_P2P_LEVEL=NVL\n"
    )


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["python3", "-m", "sglang.launch_server", "--api-key", "s3", "--tp", "8"], 4),
        (["vllm", "serve", "m", "--api-key=s3"], None),
        (["server", "--auth", "s3", "--port", "30000"], 2),
        (["server", "-k", "s3", "--port", "30000"], 2),
        (["mysql", "-uroot", "-ps3", "db"], None),
        (["sshpass", "-p", "s3", "ssh", "host"], 2),
        (["redis-cli", "-a", "s3", "ping"], 2),
        (["ipmitool", "-U", "admin", "-P", "s3", "sdr"], 4),
        (["docker", "login", "-u", "bob", "-p", "s3", "registry"], 5),
        (["env", "HF_TOKEN=s3", "python", "serve.py"], None),
    ],
)
def test_flags_that_carry_credentials_lose_their_values(argv: list[str], expected: int | None) -> None:
    out = redact_argv(argv)
    assert len(out) == len(argv) and out[0] == argv[0]
    assert "s3" not in " ".join(out) and all(w == a for w, a in zip(out, argv, strict=True) if "s3" not in a)
    if expected is not None:
        assert out[expected] == R


def test_flags_that_only_look_alike_keep_their_values() -> None:
    argv = ["curl", "-k", "https://example.org/x", "-u", "bob:pw", "--max-num-batched-tokens", "8192", "--tokenizer", "/m"]
    assert redact_argv(argv) == ["curl", "-k", "https://example.org/x", "-u", f"bob:{R}", *argv[5:]]
    assert redact_argv(["mysql", "-p", "db"]) == ["mysql", "-p", "db"]  # -p alone prompts: db is the database
    assert redact_argv(["sort", "-k", "2"]) == ["sort", "-k", "2"]


def test_a_ps_line_is_read_word_by_word() -> None:
    line = "root  4242  0.5  python3 -m vllm.entrypoints.openai.api_server --api-key sk-abcdefghijklmnop12 --port 8000\n"
    assert redact_output(["ps", "-eww", "-o", "user,pid,pcpu,args"], line) == line.replace("sk-abcdefghijklmnop12", R)


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJlX2hlcmU", "eyJhbGciOiJIUzI1NiJ9"),
        ("curl -H 'Authorization: Basic dXNlcjpwYXNz' https://x", "dXNlcjpwYXNz"),
        ("DATABASE_URL=mysql://app:Sup3r@db.internal:3306/app", "Sup3r"),
        ("https://3f2a9c1b7d@o123456.ingest.sentry.io/789", "3f2a9c1b7d"),
        ("webhook https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX", "XXXXXXXXXXXX"),
        ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI"),
        ('{"password": "hunter2", "user": "app"}', "hunter2"),
        ("<password>hunter2</password>", "hunter2"),
        ("  client-key-data: LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVktLS0tLQo=", "LS0tLS1CRUdJTi"),
        ("root:$6$rounds=5000$saltsalt$Qk8Yx2bN4d:19000:0:99999:7:::", "Qk8Yx2bN4d"),
        ("log: using session abQ93kLm0ZpX7vT2nR8sW4yU1 now", "abQ93kLm0ZpX7vT2nR8sW4yU1"),
        ("Cookie: session=abc123; theme=dark", "abc123"),
        ("https://acct.blob.core.windows.net/c?sv=2022&sig=K7x%2Fabc&se=2030", "K7x%2Fabc"),
        ("env:\n  - name: OPENAI_API_KEY\n    value: hunter2abc\n  - name: NCCL_DEBUG\n    value: INFO\n", "hunter2abc"),
        ("bind 0.0.0.0\nrequirepass foobared\nport 6379\n", "foobared"),
        ("Server=db;Database=x;User Id=sa;Password=Pwd123x;", "Pwd123x"),
    ],
)
def test_values_that_are_secrets_by_name_or_shape(text: str, secret: str) -> None:
    tally = Tally()
    out = redact_text(text, tally)
    assert secret not in out and R in out
    assert out.count(R) == tally.total()  # one marker for each value counted


def test_private_keys_lose_their_body() -> None:
    pem = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\nQyNTUxOQAAACD\n-----END OPENSSH PRIVATE KEY-----\n"
    assert redact_text(pem) == f"-----BEGIN OPENSSH PRIVATE KEY-----{R}-----END OPENSSH PRIVATE KEY-----\n"
    escaped = json.dumps({"private_key": pem})[1:-1]
    assert "b3BlbnNz" not in redact_text(escaped)


@pytest.mark.parametrize(
    "text",
    [
        "BOOT_IMAGE=/boot/vmlinuz-6.8.12-11-pve root=ZFS=rpool/ROOT/pve-1 ro amd_iommu=on iommu=pt\n",
        "[    0.9] microcode: sig=0x806f8, pf=0x10, revision=0x2b000590\n",
        "Loaded X.509 cert 'Build time autogenerated kernel key: 3a5f7c0b8b2b47d6a4c5e8f9b1d2c3e4f5a6b7c8'\n",
        "NVRM: gpuClearFbhubPoisonIntrForBug2924523_GA100: FBHUB Interrupt detected.\n",
        "GPU UUID : GPU-5a1c0003-7e2d-4c1b-9f0a-3b8e0d6c0003\nBus Id : 00000000:03:00.0\n",
        "python3 -m sglang.launch_server --model-path /models/meta-llama/Llama-3.1-70B-Instruct --tp 8\n",
        "torch/lib/libtorch_cuda.so,sha256=47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU,123456\n",
        "machine-id 8f3a2b1c4d5e6f708192a3b4c5d6e7f8\n",
        "0::/system.slice/docker-4f1c9e0a7b2d4c6e8f0a1b3c5d7e9f1a3b5c7d9e1f3a5b7c9d1e3f5a7b9c1d3e.scope\n",
        '{"max_tokens": 512, "prompt_tokens": 10, "key": "vm.swappiness", "tokenizer": "auto"}',
    ],
)
def test_ordinary_evidence_is_left_alone(text: str) -> None:
    assert redact_text(text) == text


def test_random_strings_are_told_from_names_and_ids() -> None:
    assert looks_random("AKx9mQ2vL7pZr4Tn8Wd1Qe5Ry") and looks_random("Zm9vYmFyYmF6cXV4cXV1eGNvcmdl")
    for value in ("TransformerEngineConfig2024", "meta-llama/Llama-3.1-70B-Instruct", "4f1c9e0a7b2d4c6e8f0a1b3c5d7e9f1a"):
        assert not looks_random(value)


def test_binary_files_keep_their_length() -> None:
    config = bytes(range(256)) + b"API_KEY=abcdef\x00"
    assert redact_bytes(config, "/sys/bus/pci/devices/0000:03:00.0/config") == config
    blob = b"\x7fELF\x00\x01" + b"ghp_" + b"A1b2C3d4" * 5 + b"\x00\xff"
    out = redact_bytes(blob, "/opt/app/libx.so")
    assert len(out) == len(blob) and b"ghp_" not in out and out.startswith(b"\x7fELF")


def test_json_values_by_key_by_command_and_inside_base64() -> None:
    environ = b"HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyz\x00NCCL_P2P_LEVEL=SYS\x00"
    event = {
        "type": "tool_call",
        "op": "read",
        "target": "/proc/1/environ",
        "result": {"data_b64": base64.b64encode(environ).decode()},
    }
    out = redact_json(event)
    assert base64.b64decode(out["result"]["data_b64"]) == b"HF_TOKEN=" + R.encode() + b"\x00NCCL_P2P_LEVEL=SYS\x00"
    run = {"argv": ["env"], "stdout": "HOME=/root\nNCCL_DEBUG=WARN\n", "stderr": ""}
    assert redact_json(run)["stdout"] == f"HOME={R}\nNCCL_DEBUG=WARN\n"
    message = {"role": "assistant", "tool_calls": [{"id": "call_Fk2x9Qm3Lp8Zt7Ww1Rr5Yy6", "function": {"arguments": "{}"}}]}
    assert redact_json(message) is message  # tool-call ids look random and are kept
    assert redact_json({"args": ["--api-key", "x"]}) == {"args": ["--api-key", R]}
    env = [{"name": "HF_TOKEN", "value": "abc"}, {"name": "NCCL_DEBUG", "value": "INFO"}]
    assert redact_json(env) == [{"name": "HF_TOKEN", "value": R}, {"name": "NCCL_DEBUG", "value": "INFO"}]
    same = {"a": [1, {"b": "plain"}]}
    assert redact_json(same) is same


def test_a_json_document_is_rewritten_only_when_it_held_a_secret() -> None:
    text = json.dumps({"observed": "ok"}, indent=2)
    assert redact_json_text(text) is text
    assert json.loads(redact_json_text(json.dumps({"observed": "--api-key sk-abcdefghijklmnopqrst"}))) == {
        "observed": f"--api-key {R}"
    }
