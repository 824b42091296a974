"""Secret forms the fourth attack review planted (docs/validation/attack-review.md, "Fourth pass").

Each form is a line an attacker (or a careless operator) leaves in a file rigaudit reads or a command it runs:
a credential key then white space then its value (properties style, in a comment, inside a log line), and JSON
members whose key is a credential word holding hex or base64, with their near relatives in YAML, INI, TOML,
environment files, command lines, headers and URLs. Each is fed through every output the one redaction
(``rigaudit.tools.redact``) feeds, as that output's writer feeds it: the snapshot (``redact_bytes`` by path), the
audit JSON's evidence (``redact_json_text``), the transcript (``encode_event`` of the file read and of the command),
the model (the opening prompt's evidence value, a ``read_file`` result and the request's messages) and the share
bundle (the rewriter of a tree holding the file and the command). The secret must reach none; the words around it
must reach all (nothing is won by redacting the whole line). The guards below are facts an audit needs: no form of
them may be redacted.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass

import pytest

from rigaudit.agents.llm.prompt import value_of
from rigaudit.tools.redact import REDACTED, digest_ids, redact_argv, redact_bytes, redact_json, redact_json_text, redact_text
from rigaudit.tools.schema.events.audit import ToolCall
from rigaudit.tools.schema.evidence import Evidence
from rigaudit.tools.share._harvest import Harvest
from rigaudit.tools.share._pseudonyms import Pseudonyms
from rigaudit.tools.share._rewrite import Rewriter
from rigaudit.tools.share._scrub import Scrubber
from rigaudit.tools.share._tree import Tree
from rigaudit.transcripts.writer import encode_event


def _hex(seed: str, n: int = 40) -> str:
    """A key's hex, made from the form's name (the same on every run; 40 or 64 digits: not a 32-hex id)."""
    return hashlib.sha256(seed.encode()).hexdigest()[:n]


@dataclass(frozen=True)
class Form:
    name: str
    path: str
    text: str
    secret: str
    kept: str
    """Words beside the secret that every output keeps."""


_B64_KEY = base64.b64encode(hashlib.sha256(b"b64 key").digest()[:24]).decode()
_BASIC = base64.b64encode(b"deploy:fernGull72x").decode()

FORMS = [
    # a credential key, white space, its value (properties, config and log style)
    Form("properties comment", "/opt/app/conf/app.properties", "# db.password mossTern41c\n", "mossTern41c", "db.password"),
    Form("comment, no blank", "/opt/app/conf/app.properties", "#rd.auth_token sleetVole62d\n", "sleetVole62d", "rd.auth_token"),
    Form("INI comment, dashed", "/etc/app/app.ini", "; foo-password quartzMole83e\n", "quartzMole83e", "foo-password"),
    Form("slash comment, glued", "/etc/app/app.conf", "// apitoken brassKoi17f\n", "brassKoi17f", "apitoken"),
    Form(
        "trailing comment", "/opt/app/conf/app.properties", "  db.password    amberLynx28g   # prod\n", "amberLynx28g", "# prod"
    ),
    Form(
        "inside a log line",
        "/var/log/app/server.log",
        "[  12.500000] app[812]: loaded jdbc.password flintCrow39h from env\n",
        "flintCrow39h",
        "from env",
    ),
    Form("bang comment", "/opt/app/conf/ldap.properties", "! ldap.bind.credential ivoryShrew50j\n", "ivoryShrew50j", "ldap.bind"),
    Form("tab separated", "/opt/app/conf/mail.properties", "smtp.auth.pass\tonyxFinch61k\n", "onyxFinch61k", "smtp.auth.pass"),
    Form("bare word in a comment", "/etc/app/app.conf", "# password hazelMink72m\n", "hazelMink72m", "password"),
    Form(
        "YAML key in a comment",
        "/etc/app/application.yml",
        "# spring.datasource.password: cedarSwan83n\n",
        "cedarSwan83n",
        "spring.datasource",
    ),
    Form("INI pair in a comment", "/etc/app/app.ini", "# password = pineHare94p\n", "pineHare94p", "password"),
    Form("env in a comment", "/etc/default/app", "# export FOO_TOKEN=birchOwl05q\n", "birchOwl05q", "FOO_TOKEN"),
    Form("INI quoted with a blank", "/etc/app/client.cnf", '[client]\npassword = "maple Wolf16r"\n', "Wolf16r", "[client]"),
    Form("YAML nested", "/etc/app/config.yaml", "db:\n  user: app\n  password: elmFox27s\n", "elmFox27s", "user: app"),
    Form("TOML table", "/etc/app/config.toml", '[auth]\ntoken = "ashBear38t"\nttl = 60\n', "ashBear38t", "ttl = 60"),
    Form("env export", "/etc/profile.d/app.sh", "export FOO_TOKEN=oakDeer49u\n", "oakDeer49u", "export FOO_TOKEN"),
    Form(
        "unit --opt=",
        "/etc/systemd/system/app.service",
        "ExecStart=/usr/bin/app --password=yewSeal50v\n",
        "yewSeal50v",
        "/usr/bin/app",
    ),
    Form(
        "ps --opt value",
        "/var/log/app/ps.txt",
        "  812 /usr/bin/app --password larchMoth61w --port 80\n",
        "larchMoth61w",
        "--port 80",
    ),
    Form("Basic header", "/var/log/app/access.log", f"Authorization: Basic {_BASIC}\n", _BASIC, "Authorization"),
    Form(
        "URL userinfo",
        "/etc/apt/sources.list.d/app.list",
        "deb https://svc:reedAnt83y@repo.example/x stable main\n",
        "reedAnt83y",
        "stable main",
    ),
    Form("SQL WITH PASSWORD", "/opt/app/init.sql", "ALTER USER app WITH PASSWORD 'sedgeBat94z';\n", "sedgeBat94z", "ALTER USER"),
    Form(
        "SQL IDENTIFIED BY",
        "/opt/app/init.sql",
        "CREATE USER 'app'@'%' IDENTIFIED BY 'tuleCod27c';\n",
        "tuleCod27c",
        "CREATE USER",
    ),
    Form("XML key/value attributes", "/opt/app/web.config", '<add key="ApiKey" value="rushEel05a" />\n', "rushEel05a", "ApiKey"),
    Form(
        "YAML flow entry", "/etc/app/pod.yaml", "env:\n  - {name: DB_PASSWORD, value: kelpRay16b}\n", "kelpRay16b", "DB_PASSWORD"
    ),
    # JSON members (and their relatives) whose key is a credential word, holding hex or base64
    Form("JSON key hex", "/etc/app/config.json", f'{{"key": "{_hex("a")}"}}\n', _hex("a"), '"key"'),
    Form(
        "JSON key nested",
        "/etc/app/hmac.json",
        f'{{\n  "hmac": {{\n    "key": "{_hex("b", 64)}",\n    "alg": "sha256"\n  }}\n}}\n',
        _hex("b", 64),
        "sha256",
    ),
    Form("JSON Key compact", "/etc/app/c.json", f'{{"id":7,"Key":"{_hex("c")}"}}\n', _hex("c"), '"id":7'),
    Form(
        "python repr in a log", "/var/log/app/app.log", f"cfg loaded: {{'key': '{_hex('d')}', 'ttl': 9}}\n", _hex("d"), "'ttl': 9"
    ),
    Form("JSON array one line", "/etc/app/keys.json", f'[{{"id": 1, "key": "{_hex("e", 64)}"}}]\n', _hex("e", 64), '"id": 1'),
    Form("JSON key base64", "/etc/app/k.json", f'{{"key": "{_B64_KEY}", "v": 2}}\n', _B64_KEY, '"v": 2'),
    Form("JSON secret hex", "/etc/app/s.json", f'{{"client": {{"secret": "{_hex("f")}"}}}}\n', _hex("f"), "client"),
    Form("JSON passwd hex", "/etc/app/p.json", f'{{"passwd": "{_hex("g")}"}}\n', _hex("g"), "passwd"),
    Form("JSON credential hex", "/etc/app/cr.json", f'{{"credential": "{_hex("h")}"}}\n', _hex("h"), "credential"),
    Form("JSON auth hex", "/etc/app/au.json", f'{{"auth": "{_hex("i")}"}}\n', _hex("i"), "auth"),
    Form("YAML key hex", "/etc/app/k.yaml", f"signing:\n  key: {_hex('j')}\n", _hex("j"), "signing:"),
    Form("INI key hex", "/etc/app/k.ini", f"[hmac]\nkey = {_hex('k')}\n", _hex("k"), "[hmac]"),
    Form("env key hex", "/etc/app/signer.conf", f"key={_hex('l')}\n", _hex("l"), "key="),
    Form("--key hex", "/var/log/app/ps2.txt", f"  900 /usr/bin/signer --key {_hex('m')} --out /tmp/x\n", _hex("m"), "--out"),
    Form("session_key words line", "/opt/app/conf/s.properties", f"session_key {_hex('n')}\n", _hex("n"), "session_key"),
    Form("private.key properties", "/opt/app/conf/t.properties", "private.key tealPike38d\n", "tealPike38d", "private.key"),
]

_FILES_PROGRAM = "cat"


def _scrubber() -> Scrubber:
    return Scrubber(Pseudonyms(taken=lambda _: False), Harvest())


def _snapshot(form: Form) -> str:
    return redact_bytes(form.text.encode(), form.path).decode()


def _audit_json(form: Form) -> str:
    evidence = {"ref": f"file:{form.path}", "kind": "file", "source": form.path, "ok": True, "raw": form.text}
    return redact_json_text(json.dumps({"evidence": [evidence], "findings": [{"observed": form.text}]}))


def _decoded(line: str) -> str:
    """A transcript line with its file data decoded (what a reader of it gets)."""

    def walk(value: object) -> object:
        if isinstance(value, dict):
            return {k: base64.b64decode(v).decode() if k == "data_b64" else walk(v) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v) for v in value]
        return value

    return json.dumps(walk(json.loads(line)), ensure_ascii=False)


def _transcript(form: Form) -> str:
    read = ToolCall(op="read", target=form.path, result={"data_b64": base64.b64encode(form.text.encode()).decode()})
    argv = [_FILES_PROGRAM, form.path]
    run = ToolCall(op="run", target=" ".join(argv), args=argv, result={"argv": argv, "stdout": form.text, "stderr": ""})
    return "\n".join(_decoded(encode_event(event)) for event in (read, run))


def _model(form: Form) -> str:
    evidence = Evidence(ref=f"file:{form.path}", kind="file", source=form.path, ok=True, raw=form.text)
    opening = value_of(evidence, limit=10_000)
    result = digest_ids(redact_text(form.text), path=form.path, content=True)
    messages = [{"role": "user", "content": form.text}, {"role": "tool", "tool_call_id": "c1", "content": result}]
    return "\n".join([opening, result, json.dumps(redact_json(messages, ids=True), ensure_ascii=False)])


def _bundle(form: Form) -> str:
    argv = [_FILES_PROGRAM, form.path]
    tree = Tree(manifest={}, files={form.path: form.text.encode()}, commands=[{"argv": argv, "stdout": form.text}])
    scrub = _scrubber()
    out = Rewriter(scrub, scrub.ps).tree(tree)
    assert len(out.files) == 1  # not left out as a credential file: the text itself was redacted
    return "\n".join([*(d.decode() for d in out.files.values()), json.dumps(out.commands, ensure_ascii=False)])


OUTPUTS: dict[str, Callable[[Form], str]] = {
    "snapshot": _snapshot,
    "audit JSON": _audit_json,
    "transcript": _transcript,
    "model": _model,
    "share bundle": _bundle,
}


def test_the_corpus_holds_twenty_and_more_forms_each_secret_told_apart() -> None:
    assert len(FORMS) >= 20
    assert len({f.secret for f in FORMS}) == len({f.name for f in FORMS}) == len(FORMS)


@pytest.mark.parametrize("form", FORMS, ids=[f.name for f in FORMS])
def test_a_planted_secret_reaches_no_output(form: Form) -> None:
    seen = {name: output(form) for name, output in OUTPUTS.items()}
    escaped = json.dumps(form.secret)[1:-1]
    assert [name for name, out in seen.items() if form.secret in out or escaped in out] == []
    kept = (form.kept, json.dumps(form.kept)[1:-1])
    assert [name for name, out in seen.items() if not any(k in out for k in kept)] == []
    assert all(REDACTED in out for out in seen.values())


# -- false positives: what an audit reads must survive --------------------------------------------------------

GUARDS = [
    "key_size 2048\n",
    "rsa_key_size: 4096\n",
    "password_auth: no\n",
    "PasswordAuthentication no\n",
    '{"password_required": false, "token_budget": 4096}\n',
    "token_budget 4096\n",
    "max_tokens: 8192\n",
    "kernel.keys.maxkeys = 200\n",
    "kernel.keys.maxbytes 20000\n",
    "kernel.keys.persistent_keyring_expiry = 259200\n",
    '{"key": "0000:3b:00.0"}\n',
    '{"key": "10de:2330"}\n',
    '{"key": "GPU-3f9a1c0d-5e7b-2a4c-6d8e-0f1a2b3c4d5e"}\n',
    '{"key": "0x2b000603", "vbios_version": "96.00.89.00.01"}\n',
    '{"kind": "sysctl", "key": "vm.nr_hugepages", "value": "1024"}\n',
    '{"key": "NCCL_P2P_DISABLE", "value": "1"}\n',
    "key: vm.swappiness\n",
    "[    0.812345] Loaded X.509 cert 'Build time autogenerated kernel key: 3a5f2c9e8d7b6a5f4e3d2c1b0a9f8e7d6c5b4a39'\n",
    "[    0.000000] microcode: sig=0x806f8, pf=0x10, revision=0x2b000603\n",
    "[   31.000000] vllm[812]: HF_TOKEN not set, using anonymous access\n",
    '{"sha256": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"}\n',
    "auth_method password\n",
    "python3 -m sglang.launch_server --tp 8 --max-num-batched-tokens 8192 --tokenizer /models/x\n",
    "Failed password for invalid user admin from 192.0.2.7 port 51000 ssh2\n",
]


@pytest.mark.parametrize("text", GUARDS)
def test_an_ordinary_fact_is_kept_by_every_redaction(text: str) -> None:
    outs = {
        "text": redact_text(text),
        "file": redact_bytes(text.encode(), "/etc/app/facts.conf").decode(),
        "json": json.dumps(redact_json({"stdout": text, "argv": ["cat", "/etc/app/facts.conf"]})),
    }
    if text.startswith("python3"):
        outs["argv"] = " ".join(redact_argv(text.split()))
    assert [name for name, out in outs.items() if REDACTED in out] == []
