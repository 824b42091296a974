"""Which names carry secrets, and which environment variables the checks read.

A name (an environment variable, a command-line flag, a JSON, YAML or INI key, an HTTP header)
is split into words (``OPENAI_API_KEY`` -> openai api key, ``apiKey`` -> api key, ``--hf-token``
-> hf token). It is *secret* when a word is one of :data:`SECRET_WORDS`, or when it contains a
glued credential word (``PGPASSWORD``, ``APIKEY``). Names that hold the *path* of a secret
(``--ssl-keyfile``, ``PASSWORD_FILE``) are not secrets, and neither are ``PWD`` (the working
folder), ``tokens`` (``--max-num-batched-tokens``) or ``tokenizer``.

*Strong* names (passwords, secrets, API keys, any upper-case environment name) have every value
redacted; a weak one (a lower-case ``key``, ``sig``, ``auth`` in a log line) keeps values that
are numbers, hex literals or booleans (``microcode: sig=0x806f8``).
"""

from __future__ import annotations

import functools
import re

SECRET_WORDS = frozenset(
    {
        "key",
        "apikey",
        "token",
        "secret",
        "password",
        "passwd",
        "passphrase",
        "pwd",
        "pass",
        "pw",
        "auth",
        "authorization",
        "credential",
        "credentials",
        "cookie",
        "bearer",
        "dsn",
        "sig",
        "signature",
        "webhook",
        "jwt",
        "pat",
        "otp",
        "sas",
        "privatekey",
        "accesskey",
        "secretkey",
        "authtoken",
        "accesstoken",
        "requirepass",
        "masterauth",
        "psk",
        "sessionid",
        "jsessionid",
        "phpsessid",
    }
)
_GLUED = ("password", "passwd", "passphrase", "secret", "credential", "apikey", "authtoken", "accesstoken", "privatekey")
"""Credential words found even inside a longer word (``PGPASSWORD``, ``MYAPIKEY``)."""
_GLUED_ENDS = ("token", "password", "passwd", "secret")
"""Credential words that end a longer word (``apitoken``, ``bottoken``; never ``tokens`` or ``tokenizer``)."""
_WEAK = frozenset({"key", "sig", "signature", "auth", "token", "cookie", "webhook", "dsn", "pat", "otp", "sas", "pw"})
_PATH_WORDS = frozenset({"file", "path", "dir", "filename", "folder", "location"})
_NOT_SECRET = frozenset({"pwd", "oldpwd", "key", "keys"})
"""Whole names that are not secrets by themselves (``PWD`` is the working folder; a sysctl action's ``key``)."""
_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")

ALLOWED_PREFIXES = (
    "NCCL_",
    "CUDA_",
    "NVIDIA_",
    "NV_",
    "NVTX_",
    "NSYS_",
    "NCU_",
    "CUBLAS_",
    "CUBLASLT_",
    "CUDNN_",
    "NVTE_",
    "NVSHMEM_",
    "UCX_",
    "OMP_",
    "KMP_",
    "GOMP_",
    "MKL_",
    "OPENBLAS_",
    "PYTORCH_",
    "TORCH_",
    "TORCHINDUCTOR_",
    "VLLM_",
    "SGLANG_",
    "TRITON_",
    "TRTLLM_",
    "TLLM_",
    "FLASHINFER_",
    "HF_",
    "TRANSFORMERS_",
    "TOKENIZERS_",
    "GLOO_",
    "TP_",
    "MALLOC_",
    "LD_",
    "PYTHON",
)
"""Environment variables kept with their values: what the checks (and a person reading them) need."""
ALLOWED_NAMES = frozenset(
    {
        "PATH",
        "container",
        "COMPUTE_PROFILE",
        "GLIBC_TUNABLES",
        "WORLD_SIZE",
        "LOCAL_WORLD_SIZE",
        "RANK",
        "LOCAL_RANK",
        "MASTER_ADDR",
        "MASTER_PORT",
        "VIRTUAL_ENV",
        "CONDA_PREFIX",
        "CONDA_DEFAULT_ENV",
        "LANG",
        "LC_ALL",
        "TZ",
    }
)


def words(name: str) -> tuple[str, ...]:
    """``OPENAI_API_KEY`` -> (openai, api, key); ``apiKey`` -> (api, key); ``--hf-token`` -> (hf, token)."""
    return tuple(w.lower() for w in _WORD.findall(name))


@functools.lru_cache(maxsize=8192)
def secret_strength(name: str) -> int:
    """0: not a secret name; 1: weak (numbers and booleans are kept); 2: strong (every value is a secret)."""
    bare = name.strip().lstrip("-").strip()
    lowered = bare.lower()
    if not bare or lowered in _NOT_SECRET or len(bare) > 80:
        return 0
    parts = words(bare)
    if _PATH_WORDS.intersection(parts):
        return 0
    hits = [w for w in parts if w in SECRET_WORDS]
    glued = any(w != end and w.endswith(end) for w in parts for end in _GLUED_ENDS)
    if not hits and not glued and not any(g in lowered.replace("_", "").replace("-", "") for g in _GLUED):
        return 0
    if any(w not in _WEAK for w in hits) or not hits:
        return 2
    if len(parts) > 1 and parts[-2:] in (("api", "key"), ("access", "key"), ("auth", "token"), ("access", "token")):
        return 2
    env_style = bare.isupper() and ("_" in bare or len(bare) > 3)
    return 2 if env_style else 1


def is_secret_name(name: str) -> bool:
    """Whether values of ``name`` are secrets (``OPENAI_API_KEY``, ``--auth``, ``Authorization``, ``MYSQL_PWD``)."""
    return secret_strength(name) > 0


@functools.lru_cache(maxsize=8192)
def is_allowed_variable(name: str) -> bool:
    """Whether an environment variable is kept with its value (a setting some check reads), not only its name."""
    if is_secret_name(name):
        return False
    return name in ALLOWED_NAMES or name.startswith(ALLOWED_PREFIXES)


@functools.lru_cache(maxsize=8192)
def names_credential(name: str) -> bool:
    """Whether a secret name names the credential itself: its last word is a credential word (``db.password``,
    ``auth_token``, ``apitoken``, ``PGPASSWORD``), not a setting about one (``key_size``, ``PasswordAuthentication``)."""
    parts = words(name)
    if not parts:
        return False
    last = parts[-1]
    return last in SECRET_WORDS or any(last.endswith(end) for end in _GLUED_ENDS) or any(g in last for g in _GLUED)
