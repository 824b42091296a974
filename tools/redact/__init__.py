"""Secrets never leave: the one redaction every writer and every prompt goes through.

What is recorded is what the checks need. Process environments are an allow-list: a variable
some check reads (``NCCL_*``, ``CUDA_*``, ``PYTORCH_*``, ``VLLM_*`` settings, ``PATH``...) keeps
its value; every other keeps its name and ``<redacted>`` as its value, so a rule still sees that
it is set. Everywhere else, a value is replaced when its name says it is a secret (``--api-key``,
``MYSQL_PWD``, ``"password":``, ``Authorization:``) or its shape does (a known token format, a JWT,
a private key, URL userinfo, a ``Bearer`` credential, a long random string).

Redaction works on the raw bytes, before anything is decoded or split: NUL-separated blocks
(``/proc/PID/environ``, ``cmdline``) by their structure, base64-stored file data (``data_b64``)
decoded first. Entry points, by what is being written:

* :func:`redact_bytes` a file's bytes (``path`` says what it is); :func:`redact_output` a command's
  output; :func:`redact_argv` an argument vector; :func:`redact_text` any other text;
* :func:`redact_json` a JSON value (transcript events, model requests), :func:`redact_json_text` a
  JSON document (audit results);
* :func:`scrub_environment` the environment of a command rigaudit runs;
* :func:`digest_ids` (and ``redact_json(..., ids=True)``) what goes to a model or a transcript: the machine ids,
  boot ids, UUIDs, serial numbers and hardware addresses it holds as digests (``machine-id:1a2b...``).

Each takes an optional :class:`Tally` that counts what was redacted, by kind.
"""

from __future__ import annotations

from collections.abc import Mapping

from rigaudit.tools.redact._argv import redact_words
from rigaudit.tools.redact._blocks import (
    PROC_CMDLINE,
    PROC_ENVIRON,
    gunzip,
    lists_environment,
    redact_argv,
    redact_bytes,
    redact_cmdline,
    redact_environ,
    redact_environment_lines,
    redact_output,
    redact_variable,
)
from rigaudit.tools.redact._ids import (
    ANY_UUID,
    DIGEST,
    DMI_SERIALS,
    GPU_UUID,
    GUID,
    IB_ADDRESS,
    JUNK_SERIALS,
    MAC,
    MACHINE_ID,
    SERIAL_PHRASES,
    UUID,
    as_digest,
    digest_ids,
    digest_nvml,
    file_kind,
    learn_config,
)
from rigaudit.tools.redact._json import redact_json, redact_json_text
from rigaudit.tools.redact._names import ALLOWED_NAMES, ALLOWED_PREFIXES, is_allowed_variable, is_secret_name
from rigaudit.tools.redact._shapes import REDACTED, looks_random
from rigaudit.tools.redact._tally import KIND_LABELS, Tally
from rigaudit.tools.redact._text import redact_text

__all__ = [
    "ALLOWED_NAMES",
    "ALLOWED_PREFIXES",
    "ANY_UUID",
    "DIGEST",
    "DMI_SERIALS",
    "GPU_UUID",
    "GUID",
    "IB_ADDRESS",
    "JUNK_SERIALS",
    "KIND_LABELS",
    "MAC",
    "MACHINE_ID",
    "PROC_CMDLINE",
    "PROC_ENVIRON",
    "REDACTED",
    "SERIAL_PHRASES",
    "UUID",
    "Tally",
    "as_digest",
    "digest_ids",
    "digest_nvml",
    "file_kind",
    "gunzip",
    "is_allowed_variable",
    "is_secret_name",
    "learn_config",
    "lists_environment",
    "looks_random",
    "redact_argv",
    "redact_bytes",
    "redact_cmdline",
    "redact_environ",
    "redact_environment_lines",
    "redact_file",
    "redact_json",
    "redact_json_text",
    "redact_output",
    "redact_text",
    "redact_variable",
    "redact_words",
    "scrub_environment",
]


def redact_file(path: str, data: bytes, tally: Tally | None = None) -> bytes:
    """``redact_bytes`` with the path first (the snapshot writer's and the transcript's order)."""
    return redact_bytes(data, path, tally)


def scrub_environment(env: Mapping[str, str]) -> dict[str, str]:
    """The environment of a command rigaudit runs: without secret-named variables."""
    return {k: v for k, v in env.items() if not is_secret_name(k)}
