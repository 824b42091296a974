"""A corpus of secret shapes, planted in the environments, command lines, files and logs of a copy of the seed.

The values are made here from a seeded generator (the same on every run; no real key is ever written
down), in the formats the services issue. :func:`plant` writes them into a snapshot copy and returns
what was planted; ``tests/test_secrets_outputs.py`` runs every writer over it and greps the bytes, and
``benchmarks/redaction_false_positives.py`` counts what redaction catches (so this module needs no pytest).
"""

from __future__ import annotations

import base64
import gzip
import json
import random
import string
from dataclasses import dataclass, field
from pathlib import Path

from tests.support.mutate import add_process, set_command, set_file

_SEED = 17
_RNG = random.Random(_SEED)
_B62 = string.ascii_letters + string.digits
_URLSAFE = _B62 + "-_"
_B64 = _B62 + "+/"
_HEX = "0123456789abcdef"
_UPPER = string.ascii_uppercase + string.digits


def _r(alphabet: str, n: int) -> str:
    return "".join(_RNG.choice(alphabet) for _ in range(n))


def _jwt() -> str:
    def part(payload: dict[str, object]) -> str:
        return base64.urlsafe_b64encode(json.dumps(payload).encode()).decode().rstrip("=")

    return f"{part({'alg': 'RS256', 'kid': _r(_B62, 8)})}.{part({'sub': _r(_B62, 12), 'iat': 1700000000})}.{_r(_URLSAFE, 43)}"


def _pem(kind: str = "RSA PRIVATE KEY") -> str:
    body = "\n".join(_r(_B64, 64) for _ in range(6))
    return f"-----BEGIN {kind}-----\n{body}\n-----END {kind}-----\n"


@dataclass(frozen=True)
class Secret:
    name: str
    value: str
    """What must never appear in an output (the secret part only: a DSN's password, not its host)."""
    where: str
    """env, cmdline, file, log, share (a credential file only a bundle holds)."""


@dataclass
class Planted:
    secrets: list[Secret] = field(default_factory=list)
    identities: list[str] = field(default_factory=list)
    """Host, domain, container and user names that no bundle may hold."""
    pid: int = 4242

    def add(self, name: str, value: str, where: str) -> str:
        self.secrets.append(Secret(name, value, where))
        return value


DOMAIN = "corp.example.com"
HOSTS = ("gpu-node-2", "tempo", "pgdb-main", "cachebox", "rabbit-main", "gitforge", "gpu-node-1")
USERS = ("alicewong", "bobsmith", "carolyn", "davidkim", "erinmoss")
CONTAINER = "llmprod-ct7"
DOCKER = "vllm-blue-42"


def _server_environment(p: Planted) -> dict[str, str]:
    env = {
        "PATH": "/usr/local/bin:/usr/bin",
        "NCCL_P2P_DISABLE": "1",
        "NCCL_DEBUG": "WARN",
        "CUDA_VISIBLE_DEVICES": "0,1,2,3,4,5,6,7",
        "MASTER_ADDR": f"gpu-node-2.{DOMAIN}",
        "MASTER_PORT": "29500",
        "HOME": f"/home/{USERS[0]}",
        "USER": USERS[0],
        "SGLANG_REMOTE_ENDPOINT": f"https://svc:{p.add('allowed var userinfo', _r(_B62, 14), 'env')}@api.{DOMAIN}/v1",
    }
    named = {
        "OPENAI_API_KEY": "sk-proj-" + _r(_URLSAFE, 48),
        "ANTHROPIC_API_KEY": "sk-ant-api03-" + _r(_URLSAFE, 93) + "AA",
        "HF_TOKEN": "hf_" + _r(_B62, 34),
        "HUGGING_FACE_HUB_TOKEN": "hf_" + _r(_B62, 34),
        "AWS_ACCESS_KEY_ID": "AKIA" + _r(_UPPER, 16),
        "AWS_SECRET_ACCESS_KEY": _r(_B64, 40),
        "AWS_SESSION_TOKEN": "IQoJb3JpZ2luX2VjE" + _r(_B64, 180),
        "GOOGLE_API_KEY": "AIza" + _r(_URLSAFE, 35),
        "AZURE_OPENAI_API_KEY": _r(_HEX, 32),
        "AZURE_CLIENT_SECRET": _r(_B62, 3) + "8Q~" + _r(_URLSAFE, 34),
        "GITHUB_TOKEN": "ghp_" + _r(_B62, 36),
        "GITLAB_TOKEN": "glpat-" + _r(_URLSAFE, 20),
        "SLACK_BOT_TOKEN": f"xoxb-{_r(string.digits, 12)}-{_r(string.digits, 13)}-{_r(_B62, 24)}",
        "STRIPE_SECRET_KEY": "sk_live_" + _r(_B62, 24),
        "NPM_TOKEN": "npm_" + _r(_B62, 36),
        "PYPI_TOKEN": "pypi-AgEIcHlwaS5vcmc" + _r(_URLSAFE, 60),
        "DOCKERHUB_TOKEN": "dckr_pat_" + _r(_URLSAFE, 27),
        "TWILIO_AUTH_TOKEN": _r(_HEX, 32),
        "SENDGRID_API_KEY": f"SG.{_r(_URLSAFE, 22)}.{_r(_URLSAFE, 43)}",
        "MYSQL_PWD": _r(_B62, 12),
        "PGPASSWORD": _r(_B62, 14),
        "SESSION_SECRET": _r(_B62, 32),
        "WANDB_API_KEY": _r(_HEX, 40),
        "NGC_API_KEY": "nvapi-" + _r(_URLSAFE, 64),
        "VAULT_TOKEN": "hvs." + _r(_URLSAFE, 90),
        "STRIPE_WEBHOOK_SECRET": "whsec_" + _r(_B62, 32),
    }
    for name, value in named.items():
        env[name] = p.add(name, value, "env")
    dsns = {
        "DATABASE_URL": ("postgresql://app:{}@pgdb-main." + DOMAIN + ":5432/prod", _r(_B62, 16)),
        "REDIS_URL": ("redis://:{}@cachebox." + DOMAIN + ":6379/0", _r(_B62, 18)),
        "MONGODB_URI": ("mongodb+srv://svc:{}@cluster0.ab1cd.mongodb.net/db", _r(_B62, 15)),
        "AMQP_URL": ("amqp://worker:{}@rabbit-main." + DOMAIN + ":5672/", _r(_B62, 13)),
        "SENTRY_DSN": ("https://{}@o123456.ingest.sentry.io/4505", _r(_HEX, 32)),
        "SLACK_WEBHOOK_URL": ("https://hooks.slack.com/services/T0A1B2C3D/B0E4F5G6H/{}", _r(_B62, 24)),
        "DISCORD_WEBHOOK": ("https://discord.com/api/webhooks/112233445566778899/{}", _r(_URLSAFE, 68)),
    }
    for name, (template, secret) in dsns.items():
        env[name] = template.format(p.add(name, secret, "env"))
    return env


def _server_argv(p: Planted) -> list[str]:
    jwt = _jwt()
    return [
        "python3",
        "-m",
        "sglang.launch_server",
        "--model-path",
        f"/home/{USERS[0]}/models/GLM-5-NVFP4",
        "--tp",
        "8",
        "--api-key",
        p.add("--api-key", "sk-" + _r(_B62, 48), "cmdline"),
        "--hf-token",
        p.add("--hf-token", "hf_" + _r(_B62, 34), "cmdline"),
        "--auth",
        p.add("--auth", _r(_B62, 20), "cmdline"),
        "-k",
        p.add("-k", _r(_B62, 10), "cmdline"),
        "--password",
        p.add("--password", _r(_B62, 11), "cmdline"),
        f"--admin-token={p.add('--admin-token=', _r(_B62, 22), 'cmdline')}",
        "-H",
        f"Authorization: Bearer {p.add('Bearer JWT in a header flag', jwt, 'cmdline')}",
        "--header",
        f"X-Api-Key: {p.add('X-Api-Key header', _r(_B62, 26), 'cmdline')}",
        "--db-url",
        f"mysql://root:{p.add('mysql DSN', _r(_B62, 12), 'cmdline')}@pgdb-main.{DOMAIN}:3306/x",
        "--otlp-traces-endpoint",
        f"http://tempo.{DOMAIN}:4317",
        "--dist-init-addr",
        f"gpu-node-2.{DOMAIN}:5000",
        "--served-model-name",
        "glm",
        "--port",
        "30000",
    ]


def _other_processes(root: Path, p: Planted) -> None:
    mysql, redis = p.add("mysql -p", _r(_B62, 12), "cmdline"), p.add("redis-cli -a", _r(_B62, 16), "cmdline")
    sshpass, curl = p.add("sshpass -p", _r(_B62, 10), "cmdline"), p.add("curl -u", _r(_B62, 14), "cmdline")
    glpat, hf = (
        p.add("git URL userinfo", "glpat-" + _r(_URLSAFE, 20), "cmdline"),
        p.add("docker -e", "hf_" + _r(_B62, 34), "cmdline"),
    )
    others = [
        ["mysql", "-uapp", f"-p{mysql}", "-h", f"pgdb-main.{DOMAIN}", "prod"],
        ["redis-cli", "-a", redis, "-h", f"cachebox.{DOMAIN}", "ping"],
        ["sshpass", "-p", sshpass, "ssh", f"{USERS[1]}@gitforge.{DOMAIN}"],
        ["curl", "-u", f"deploy:{curl}", f"https://gitforge.{DOMAIN}/api"],
        ["git", "clone", f"https://oauth2:{glpat}@gitforge.{DOMAIN}/x.git"],
        ["docker", "run", "--name", DOCKER, "-e", f"HF_TOKEN={hf}", "vllm/vllm"],
    ]
    for i, argv in enumerate(others):
        add_process(root, 5100 + i, argv, cgroup="0::/system.slice/ops.service\n")


def _files(root: Path, p: Planted) -> None:
    pem = _pem()
    basic = base64.b64encode(b"ops:" + _r(_B62, 12).encode()).decode()
    v = {
        "token": p.add("kubeconfig token", _jwt(), "file"),
        "key_data": p.add("kubeconfig client-key-data", _r(_B64, 88), "file"),
        "basic": p.add("Basic header", basic, "file"),
        "refresh": p.add("Google refresh token", "1//0" + _r(_URLSAFE, 60), "file"),
        "teams": p.add("Teams webhook", _r(_URLSAFE, 40), "file"),
        "pem": p.add("PEM private key", pem.splitlines()[3], "file"),
        "nccl": p.add("nccl.conf URL", _r(_B62, 15), "file"),
        "lxc": p.add("lxc.environment", "hf_" + _r(_B62, 34), "file"),
        "pve": p.add("Proxmox API token", f"{_r(_HEX, 8)}-{_r(_HEX, 4)}-{_r(_HEX, 12)}", "file"),
        "pid1": p.add("PID 1 environment", _r(_B62, 13), "env"),
    }
    notes = (
        "GPU tuning notes.\n"
        f"kubeconfig:\n  users:\n  - name: ops\n    user:\n      token: {v['token']}\n"
        f"      client-key-data: {v['key_data']}\n"
        f"Authorization: Basic {v['basic']}\n"
        f"deploy key:\n{pem}"
        f"refresh: {v['refresh']}\n"
        f"teams: https://acme.webhook.office.com/webhookb2/{v['teams']}\n"
    )
    set_file(root, "/etc/modprobe.d/gpu-notes.conf", notes)
    set_file(root, "/etc/nccl.conf", f"NCCL_SOCKET_IFNAME=eno1\n# metrics: https://push:{v['nccl']}@metrics.{DOMAIN}\n")
    conf = (root / "files/etc/pve/lxc/101.conf").read_text().replace("hostname: sglang", f"hostname: {CONTAINER}")
    conf += f"lxc.environment: HF_TOKEN={v['lxc']}\n#PVEAPIToken=root@pam!ci={v['pve']}\n"
    set_file(root, "/etc/pve/lxc/101.conf", conf)
    set_file(root, "/proc/1/environ", f"container=lxc\0DB_PASSWORD={v['pid1']}\0".encode())


def _logs(root: Path, p: Planted) -> None:
    dmesg = (root / "commands.jsonl").read_text()
    kernel = next(json.loads(line)["stdout"] for line in dmesg.splitlines() if json.loads(line)["argv"] == ["dmesg"])
    v = {
        "password": p.add("password= in a log", _r(_B62, 12), "log"),
        "bearer": p.add("Bearer in a log", _r(_URLSAFE, 40), "log"),
        "session": p.add("random session token in a log", _r(_B62, 32), "log"),
        "github": p.add("token assignment in a log", "ghp_" + _r(_B62, 36), "log"),
        "cookie": p.add("Cookie in a log", _r(_B62, 24), "log"),
        "ps": p.add("ps line --api-key", "sk-" + _r(_B62, 48), "log"),
        "strings": p.add("strings output", _r(_B62, 18), "log"),
        "strings_auth": p.add("strings --auth", _r(_B62, 16), "log"),
    }
    lines = [
        "[    1.200000] systemd[1]: Hostname set to <gpu-node-1>.",
        f"[   12.300000] app[999]: connecting with password={v['password']}",
        f"[   13.000000] app[999]: Authorization: Bearer {v['bearer']}",
        f"[   14.000000] app[999]: session {v['session']} resumed",
        f"[   15.000000] app[999]: GITHUB_TOKEN={v['github']}",
        f"[   16.000000] app[999]: Cookie: sessionid={v['cookie']}; theme=dark",
        f"[   17.000000] sshd[1200]: Accepted publickey for {USERS[2]} from 10.1.2.3 port 51000",
        f"[   18.000000] sudo: pam_unix(sudo:session): session opened for user {USERS[3]} by (uid=0)",
        f"[   19.000000] app[999]: mail from {USERS[4]}@acme-gpu.io about gpu-node-2.{DOMAIN}",
    ]
    set_command(root, ["dmesg"], kernel + "\n".join(lines) + "\n")
    server = f"python3 -m sglang.launch_server --api-key {v['ps']} --port 30000"
    ps = f"USER         PID %CPU COMMAND\n{USERS[0]}    4242 99.0 {server}\n"
    set_command(root, ["ps", "-eww", "-o", "user,pid,pcpu,args"], ps)
    argv = ["python3", "--api-key", v["strings"], "--auth", v["strings_auth"]]
    set_command(root, ["strings", f"/proc/{p.pid}/cmdline"], "\n".join(argv) + "\n")


def _credential_files(root: Path, p: Planted) -> None:
    """Files only a share bundle of this folder would hold (no check reads them)."""
    home = f"/home/{USERS[0]}"
    v = {
        "aws_id": p.add("aws credentials id", _r(_UPPER, 16), "share"),
        "aws_secret": p.add("aws credentials secret", _r(_B64, 40), "share"),
        "netrc": p.add(".netrc", _r(_B62, 14), "share"),
        "pgpass": p.add(".pgpass", _r(_B62, 15), "share"),
        "git": p.add(".git-credentials", "ghp_" + _r(_B62, 36), "share"),
        "docker": p.add("docker auth", base64.b64encode(b"ci:" + _r(_B62, 14).encode()).decode(), "share"),
        "npm": p.add(".npmrc", "npm_" + _r(_B62, 36), "share"),
        "pypi": p.add(".pypirc", "pypi-AgEIcHlwaS5vcmc" + _r(_URLSAFE, 60), "share"),
        "mycnf": p.add(".my.cnf", _r(_B62, 12), "share"),
        "hf": p.add("huggingface token file", "hf_" + _r(_B62, 34), "share"),
        "vault": p.add(".vault-token", "hvs." + _r(_URLSAFE, 90), "share"),
        "sa_id": p.add("service account key id", _r(_HEX, 40), "share"),
        "env": p.add(".env", _r(_B62, 40), "share"),
        "shadow": p.add("shadow hash", _r(_B62 + "./", 86), "share"),
        "bcrypt": p.add("htpasswd bcrypt", _r(_B62 + "./", 53), "share"),
        "gh": p.add("gh hosts.yml", "gho_" + _r(_B62, 36), "share"),
        "maven": p.add("maven settings.xml", _r(_B62, 16), "share"),
        "unit": p.add("unit Environment=", _r(_B62, 30), "share"),
    }
    key = _pem("OPENSSH PRIVATE KEY")
    p.add("OpenSSH private key", key.splitlines()[2], "share")
    service_account = {"type": "service_account", "private_key_id": v["sa_id"], "private_key": _pem("PRIVATE KEY")}
    files = {
        f"{home}/.aws/credentials": f"[default]\naws_access_key_id = AKIA{v['aws_id']}\n"
        f"aws_secret_access_key = {v['aws_secret']}\n",
        f"{home}/.netrc": f"machine gitforge.{DOMAIN} login ci password {v['netrc']}\n",
        f"{home}/.pgpass": f"pgdb-main.{DOMAIN}:5432:prod:app:{v['pgpass']}\n",
        f"{home}/.git-credentials": f"https://{USERS[0]}:{v['git']}@github.com\n",
        f"{home}/.docker/config.json": json.dumps({"auths": {"registry.example.com": {"auth": v["docker"]}}}),
        f"{home}/.npmrc": f"//registry.npmjs.org/:_authToken={v['npm']}\n",
        f"{home}/.pypirc": f"[pypi]\nusername = __token__\npassword = {v['pypi']}\n",
        f"{home}/.my.cnf": f"[client]\nuser=app\npassword={v['mycnf']}\n",
        f"{home}/.cache/huggingface/token": v["hf"] + "\n",
        f"{home}/.vault-token": v["vault"],
        f"{home}/.ssh/id_ed25519": key,
        f"{home}/sa.json": json.dumps(service_account),
        f"{home}/.env": f"SECRET_KEY={v['env']}\nDEBUG=false\n",
        "/etc/shadow": f"root:$6${_r(_B62, 8)}${v['shadow']}:19000:0:99999:7:::\n",
        "/etc/nginx/.htpasswd": f"ops:$2y$10${v['bcrypt']}\n",
        f"{home}/.config/gh/hosts.yml": f"github.com:\n    oauth_token: {v['gh']}\n    user: {USERS[0]}\n",
        f"{home}/.m2/settings.xml": f"<settings><server><id>x</id><password>{v['maven']}</password></server></settings>\n",
        "/etc/systemd/system/worker.service": f"[Service]\nUser={USERS[4]}\nEnvironment=API_TOKEN={v['unit']}\n",
        "/etc/passwd": f"root:x:0:0:root:/root:/bin/bash\n{USERS[3]}:x:1001:1001:David Kim,,,:/home/{USERS[3]}:/bin/bash\n",
        "/etc/hosts": f"127.0.0.1 localhost\n127.0.1.1 pve-gpu01.{DOMAIN} pve-gpu01\n10.0.0.12 gitforge.{DOMAIN} gitforge\n",
    }
    for path, text in files.items():
        set_file(root, path, text)


def _encoded_and_packed(root: Path, p: Planted) -> None:
    """Shapes an attacker review added: secrets hidden by an encoding, a container, or a format of their own."""
    jwt = p.add("JWT in a URL path", _jwt(), "log")
    proxy = p.add("proxy URL basic auth", _r(_B62, 12), "log")
    proctitle = p.add("audit PROCTITLE hex", _r(_B62, 20), "log")
    execve = p.add("audit EXECVE hex argument", _r(_B62, 18), "log")
    curl = p.add("curl -u in an audit cmdline", _r(_B62, 12), "log")
    pem = _pem("EC PRIVATE KEY")
    p.add("private key over prefixed log lines", pem.splitlines()[2], "log")
    tokens = {
        "GitHub fine-grained PAT": "github_pat_11A" + _r(_B62, 20) + "_" + _r(_B62, 59),
        "GitHub app token": "ghs_" + _r(_B62, 36),
        "Slack user token": f"xoxp-{_r(string.digits, 12)}-{_r(string.digits, 12)}-{_r(string.digits, 13)}-{_r(_HEX, 32)}",
        "Stripe restricted key": "rk_live_" + _r(_B62, 24),
        "GCP OAuth access token": "ya29." + _r(_URLSAFE, 120),
        "AWS STS key id": "ASIA" + _r(_UPPER, 16),
        "W&B key after wandb login": _r(_HEX, 40),
    }
    for name, value in tokens.items():
        p.add(name, value, "log")
    hexed = ("python3\0--api-key\0" + proctitle).encode().hex().upper()
    lines = [
        f"[   20.000000] app[999]: GET https://auth.{DOMAIN}/v1/callback/{jwt} 302",
        f'[   21.000000] apt[998]: Acquire::http::Proxy "http://proxyuser:{proxy}@proxy.{DOMAIN}:3128";',
        f"[   22.000000] audit: type=1327 audit(1700000000.1:7): proctitle={hexed}",
        f'[   23.000000] audit: type=1309 audit(1.1:8): argc=3 a0="vllm" a1="--hf-token" a2={execve.encode().hex().upper()}',
        f'[   24.000000] audit: type=1400 apparmor="DENIED" comm="curl" cmdline="curl -u admin:{curl} http://x"',
        *(f"[   25.000000] app[999]: {line}" for line in pem.splitlines()),
        f"[   26.000000] ci[997]: cloning with {tokens['GitHub fine-grained PAT']} and {tokens['GitHub app token']}",
        f"[   27.000000] bot[996]: slack {tokens['Slack user token']} stripe {tokens['Stripe restricted key']}",
        f"[   28.000000] gcloud[995]: access {tokens['GCP OAuth access token']} key {tokens['AWS STS key id']}",
        f"[   29.000000] train[994]: ran wandb login {tokens['W&B key after wandb login']}",
    ]
    record = next(
        json.loads(line) for line in (root / "commands.jsonl").read_text().splitlines() if json.loads(line)["argv"] == ["dmesg"]
    )
    set_command(root, ["dmesg"], str(record["stdout"]) + "\n".join(lines) + "\n")
    inspect_key, inspect_env = (
        p.add("docker inspect Args", _r(_B62, 22), "cmdline"),
        p.add("docker inspect Env", _r(_B62, 15), "cmdline"),
    )
    inspect = [
        {
            "Name": f"/{DOCKER}",
            "Args": ["--model", "/models/x", "--api-key", inspect_key],
            "Config": {"Env": [f"DB_PASSWORD={inspect_env}", "NCCL_P2P_DISABLE=1"]},
        }
    ]
    set_command(root, ["docker", "inspect", DOCKER], json.dumps(inspect, indent=4))
    grub = p.add("GRUB PBKDF2 password hash", f"{_r(_HEX, 64).upper()}.{_r(_HEX, 128).upper()}", "file")
    set_file(root, "/boot/grub/grub.cfg", f"set superusers=root\npassword_pbkdf2 root grub.pbkdf2.sha512.10000.{grub}\n")
    utf16 = p.add("password in a UTF-16 file", _r(_B62, 14), "file")
    set_file(root, "/etc/modprobe.d/windows-notes.conf", f"options nvidia NVreg_X=1\r\npassword={utf16}\r\n".encode("utf-16"))
    rotated = p.add("password in a rotated gzip log", _r(_B62, 16), "share")
    set_file(root, "/var/log/syslog.2.gz", gzip.compress(f"Jan 1 host app: login password={rotated}\n".encode(), mtime=0))
    binary = p.add("password in a binary journal", _r(_B62, 17), "share")
    set_file(
        root, "/var/log/journal/abc/system.journal", b"LPKSHHRH\x00\x01" + f"MESSAGE=db password={binary}".encode() + b"\x00\x02"
    )


def _spaced_and_keyed(root: Path, p: Planted) -> None:
    """The fourth attack pass: a credential key, white space, its value (properties, comments, log lines, SQL), entries
    on one line, and ``key`` members holding hex, in the notes the model reads and in the kernel log."""
    v = {
        "properties": p.add("properties line in a comment", _r(_B62, 13), "file"),
        "bang": p.add("properties ! comment", _r(_B62, 12), "file"),
        "yaml_comment": p.add("YAML pair in a comment", _r(_B62, 14), "file"),
        "bare": p.add("password VALUE in a comment", _r(_B62, 11), "file"),
        "sql": p.add("SQL IDENTIFIED BY", _r(_B62, 12), "file"),
        "xml": p.add("XML key/value attributes", _r(_B62, 13), "file"),
        "flow": p.add("YAML flow entry", _r(_B62, 12), "file"),
        "json_key": p.add("JSON key hex", _r(_HEX, 40), "file"),
        "session": p.add("session_key hex line", _r(_HEX, 64), "file"),
        "log": p.add("compound key inside a log line", _r(_B62, 14), "log"),
        "repr": p.add("python repr key hex in a log", _r(_HEX, 40), "log"),
        "flag": p.add("--key hex in a log", _r(_HEX, 40), "log"),
    }
    notes = (root / "files/etc/modprobe.d/gpu-notes.conf").read_text() + (
        f"# db.password {v['properties']}\n"
        f"! ldap.bind.credential {v['bang']}\n"
        f"# spring.datasource.password: {v['yaml_comment']}\n"
        f"# password {v['bare']}\n"
        f"CREATE USER 'app'@'%' IDENTIFIED BY '{v['sql']}';\n"
        f'<add key="ApiKey" value="{v["xml"]}" />\n'
        f"env: [{{name: DB_PASSWORD, value: {v['flow']}}}]\n"
        f'{{"id": 7, "key": "{v["json_key"]}"}}\n'
        f"session_key {v['session']}\n"
    )
    set_file(root, "/etc/modprobe.d/gpu-notes.conf", notes)
    record = next(
        json.loads(line) for line in (root / "commands.jsonl").read_text().splitlines() if json.loads(line)["argv"] == ["dmesg"]
    )
    lines = [
        f"[   30.000000] app[999]: loaded jdbc.password {v['log']} from env",
        f"[   31.000000] app[999]: cfg {{'key': '{v['repr']}', 'ttl': 9}}",
        f"[   32.000000] signer[990]: started /usr/bin/signer --key {v['flag']} --out /tmp/x",
    ]
    set_command(root, ["dmesg"], str(record["stdout"]) + "\n".join(lines) + "\n")


def plant(root: Path) -> Planted:
    """Plant the corpus into ``root`` (a light copy of the seed); return what was planted.

    The generator starts again at its seed: the values are the same whatever was planted before in this process.
    """
    _RNG.seed(_SEED)
    p = Planted()
    env = _server_environment(p)
    add_process(root, p.pid, _server_argv(p), environ=env, cgroup="0::/lxc/101/ns/system.slice/sglang.service\n")
    _other_processes(root, p)
    _files(root, p)
    _logs(root, p)
    _credential_files(root, p)
    _encoded_and_packed(root, p)
    _spaced_and_keyed(root, p)
    p.identities = [*(f"{h}.{DOMAIN}" for h in HOSTS), DOMAIN, "gpu-node-2", "gpu-node-1", "pgdb-main", "rabbit-main"]
    p.identities += ["pve-gpu01", *USERS, CONTAINER, DOCKER, "acme-gpu.io"]
    return p
