"""Secret shapes an attack review probed that the planted corpus does not hold, each through the one redaction."""

from __future__ import annotations

import base64
import gzip
import json

import pytest

from rigaudit.tools.redact import REDACTED, Tally, redact_argv, redact_bytes, redact_output, redact_text

SECRET = "Qm9vVz3kLr8TnXa1"


def _kubeconfig() -> str:
    text = f"apiVersion: v1\nkind: Config\nusers:\n- name: x\n  user:\n    token: {SECRET}{SECRET}\n"
    return base64.b64encode(text.encode()).decode()


@pytest.mark.parametrize(
    "text",
    [
        f"KUBECONFIG_DATA={_kubeconfig()}",
        "config:\n" + "\n".join(_kubeconfig()[i : i + 76] for i in range(0, len(_kubeconfig()), 76)),
        f"data:\n  password: {base64.b64encode(SECRET.encode()).decode()}\n",
        f'CONTAINER ID  IMAGE  COMMAND  NAMES\nabc  vllm  "python3 --api-key {SECRET}"  x',
        f"Proxy-Authorization: Basic {base64.b64encode(f'u:{SECRET}'.encode()).decode()}",
        f"postgres://app:{SECRET}%40x@db/x",
        f"Server=db;User Id=sa;Password={SECRET};",
        f"https://x/login?user=a&password={SECRET}",
    ],
)
def test_a_probed_shape_in_text_is_redacted(text: str) -> None:
    out = redact_text(text)
    assert SECRET not in out and base64.b64encode(SECRET.encode()).decode()[:16] not in out
    assert _kubeconfig()[20:60] not in out


@pytest.mark.parametrize(
    "argv",
    [
        ["docker", "run", f"--env=API_SECRET={SECRET}", "x"],
        ["docker", "build", "--build-arg", f"NPM_TOKEN={SECRET}", "."],
        ["python3", "--api_key", SECRET],
        ["python3", "--client-secret", SECRET],
        ["wandb", "login", SECRET],
    ],
)
def test_a_probed_flag_is_redacted(argv: list[str]) -> None:
    assert SECRET not in " ".join(redact_argv(argv))


@pytest.mark.parametrize("path", ["/proc/77/task/78/environ", "/proc/self/environ", "/proc/thread-self/environ"])
def test_an_environment_under_any_process_path_is_an_allow_list(path: str) -> None:
    out = redact_bytes(f"NCCL_P2P_DISABLE=1\0MY_THING={SECRET}\0".encode(), path)
    assert SECRET.encode() not in out and b"NCCL_P2P_DISABLE=1" in out


def test_a_command_line_under_a_task_path_is_an_argv() -> None:
    assert SECRET.encode() not in redact_bytes(f"vllm\0--token\0{SECRET}\0".encode(), "/proc/77/task/77/cmdline")


def test_audit_records_are_decoded_only_when_they_hold_a_secret() -> None:
    hexed = f"python3\0--api-key\0{SECRET}".encode().hex().upper()
    tally = Tally()
    out = redact_text(f"type=PROCTITLE msg=audit(1.0:1): proctitle={hexed}", tally)
    assert out.endswith(f"proctitle=python3 --api-key {REDACTED}") and tally.total() == 1
    plain = "proctitle=" + b"nvidia-smi\0-q".hex().upper()
    assert redact_text(plain) is plain  # nothing secret: the record is left as it was
    execve = f'argc=3 a0="curl" a1="-u" a2={f"admin:{SECRET}".encode().hex()}'
    assert SECRET not in redact_text(execve) and 'a0="curl"' in redact_text(execve)


def test_json_argv_arrays_in_command_output_lose_their_values() -> None:
    inspect = json.dumps([{"Args": ["--model", "/m", "--api-key", SECRET], "Env": [f"DB_PASSWORD={SECRET}"]}], indent=4)
    out = redact_output(["docker", "inspect", "x"], inspect)
    assert SECRET not in out and '"/m"' in out and '"--model"' in out


def test_packed_and_encoded_files_are_redacted_inside_and_counted_apart() -> None:
    tally = Tally()
    packed = redact_bytes(gzip.compress(f"x password={SECRET}\n".encode()), "/var/log/syslog.2.gz", tally)
    assert SECRET.encode() not in gzip.decompress(packed) and tally["binary"] == 1
    utf16 = redact_bytes(f"password={SECRET}\r\n".encode("utf-16"), "/etc/modprobe.d/x.conf")
    assert SECRET not in utf16.decode("utf-16") and REDACTED in utf16.decode("utf-16")
    binary = redact_bytes(b"\x00\x01LPKS" + f"MESSAGE=password={SECRET}".encode() + b"\x00", "/var/log/journal/x.journal")
    assert SECRET.encode() not in binary and len(binary) == len(f"MESSAGE=password={SECRET}") + 7
    bomb = b"\x1f\x8b" + b"\x00" * 20  # not gzip after all: judged as the binary it is, never a crash
    assert redact_bytes(bomb, "/x.gz") == bomb


def test_ordinary_evidence_is_left_alone() -> None:
    for text in ("proctitle=6E76696469612D736D69", "NVRM: Xid (PCI:0000:01:00): 79", 'a0="nvidia-smi" a1="-q"'):
        assert redact_text(text) is text


@pytest.mark.parametrize(
    ("line", "kept"),
    [
        ("apitoken=s3cr3tVALUEabc123", "apitoken="),
        ("rd.auth_token=s3cr3tVALUEabc123", "rd.auth_token="),
        ("db.password=hunter2hunter", "db.password="),
        ("foo-password=hunter2hunter", "foo-password="),
        ("GET /x?X-Amz-Algorithm=AWS4&X-Amz-Signature=" + "9f8e7d6c5b4a3928" * 4 + " HTTP/1.1", "X-Amz-Algorithm=AWS4"),
    ],
)
def test_a_credential_word_anywhere_in_a_key_redacts_its_value(line: str, kept: str) -> None:
    """By structure (#35 item 4): a key glued, dotted or dashed around a credential word, a URL's signature."""
    out = redact_text(line)
    assert "s3cr3tVALUE" not in out and "hunter2" not in out and "9f8e7d6c" not in out and kept in out


@pytest.mark.parametrize("line", ["max_num_batched_tokens=8192", "tokenizer=llama", "pretrained.tokenizer=x"])
def test_token_counts_and_tokenizers_are_not_credentials(line: str) -> None:
    assert redact_text(line) == line


@pytest.mark.parametrize(
    "argv",
    [["curl", "-b", "session=ab12cd34ef56ab12cd34", "https://x"], ["curl", "-bsession=ab12cd34ef56ab12cd34", "https://x"]],
)
def test_a_cookie_given_to_curl_is_redacted(argv: list[str]) -> None:
    assert "ab12cd34" not in " ".join(redact_argv(argv))
    assert "ab12cd34" not in redact_text(" ".join(argv))


def test_a_netrc_line_inside_a_log_is_redacted() -> None:
    line = "Dec 2 12:00:01 gpu7 job[42]: read ~/.netrc: machine api.example.com login alice password hunter2hunter2\n"
    out = redact_text(line)
    assert "hunter2" not in out and "machine api.example.com login alice password" in out


def test_the_values_of_a_kubernetes_secret_are_redacted_and_a_configmap_s_kept() -> None:
    secret = (
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\n"
        "stringData:\n  anything: hunter2hunter\ndata:\n  other: aHVudGVyMmh1bnRlcg==\n"
    )
    out = redact_text(secret)
    assert "hunter2" not in out and "aHVudGVy" not in out and "anything:" in out and "name: db" in out
    config = "apiVersion: v1\nkind: ConfigMap\ndata:\n  mode: fast\n"
    assert redact_text(config) == config
