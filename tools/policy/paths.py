"""Judging the paths a command names: normalized first, so ``/proc/../etc/shadow`` is ``/etc/shadow``.

Symlinks cannot be resolved here (the policy never touches the host); the readable roots are trees
whose links stay inside them (``/sys``) or lead nowhere secret, and the ``/proc`` links that do escape
(``/proc/PID/root``, ``cwd``, ``fd``, ``map_files``) are refused or asked about explicitly.
"""

from __future__ import annotations

import fnmatch
import posixpath
import re

STANDARD_BIN_DIRS = frozenset({"/bin", "/sbin", "/usr/bin", "/usr/sbin", "/usr/local/bin", "/usr/local/sbin"})

READ_ROOTS = (
    "/proc",
    "/sys",
    "/etc",
    "/var/log",
    "/boot",
    "/lib/modules",
    "/usr/lib/modules",
    "/lib/modprobe.d",
    "/usr/lib/modprobe.d",
    "/lib/sysctl.d",
    "/usr/lib/sysctl.d",
    "/lib/udev/rules.d",
    "/usr/lib/udev/rules.d",
    "/lib/systemd/system",
    "/usr/lib/systemd/system",
    "/run/nvidia-persistenced",
)
"""Trees whose files a diagnostic may read (secrets inside them are refused separately)."""

RECURSIVE_ROOTS = (
    "/etc/modprobe.d",
    "/etc/modules-load.d",
    "/etc/sysctl.d",
    "/etc/default",
    "/etc/kernel",
    "/etc/systemd",
    "/etc/udev",
    "/etc/apt",
    "/etc/nvidia",
    "/etc/pve/lxc",
    "/etc/pve/qemu-server",
    "/var/log",
    "/proc/sys",
    "/proc/driver",
    "/sys/module",
    "/lib/modules",
    "/usr/lib/modules",
    "/lib/modprobe.d",
    "/usr/lib/modprobe.d",
    "/lib/sysctl.d",
    "/usr/lib/sysctl.d",
    "/lib/udev/rules.d",
    "/usr/lib/udev/rules.d",
    "/lib/systemd/system",
    "/usr/lib/systemd/system",
)
"""Trees a diagnostic may read whole (``grep -r``): no secrets, no device registers, no debug files."""

SECRET_TREES = (
    "/etc/shadow",
    "/etc/shadow-",
    "/etc/gshadow",
    "/etc/gshadow-",
    "/etc/security/opasswd",
    "/etc/ssl/private",
    "/etc/pve/priv",
    "/etc/corosync/authkey",
    "/etc/krb5.keytab",
    "/etc/ipsec.secrets",
    "/etc/wireguard",
    "/etc/NetworkManager/system-connections",
    "/etc/kubernetes/admin.conf",
    "/etc/kubernetes/pki",
    "/etc/rancher/k3s/k3s.yaml",
    "/var/lib/kubelet/pki",
    "/var/lib/pve-cluster",
    "/run/secrets",
    "/var/run/secrets",
    "/root",
)
"""Files and trees that hold credentials: never read, never listed."""

SECRET_COMPONENTS = frozenset(
    {
        ".ssh",
        ".aws",
        ".azure",
        ".gnupg",
        ".kube",
        ".docker",
        ".password-store",
        ".vault-token",
        ".netrc",
        ".pgpass",
        ".git-credentials",
        ".pypirc",
        ".npmrc",
        ".env",
        ".bash_history",
        ".zsh_history",
        ".python_history",
        ".psql_history",
        ".mysql_history",
    }
)
"""Path components that mark credentials wherever they are (home directories, containers)."""

SECRET_NAMES = (
    "id_rsa*",
    "id_dsa*",
    "id_ecdsa*",
    "id_ed25519*",
    "ssh_host_*_key",
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    "*.jks",
    "*.keystore",
    "*.keytab",
    "*.kdbx",
    "*kubeconfig*",
    "*.keyring",
    "shadow*",
    "gshadow*",
)

_SECRET_NAME = re.compile("|".join(fnmatch.translate(pattern) for pattern in SECRET_NAMES))

_PROC_PID = r"/proc/(?:\d+|self|thread-self)(?:/task/(?:\d+|self))?"
PROC_ESCAPE = re.compile(_PROC_PID + r"/(?:root|cwd)/.+")
"""Paths through a process's root or cwd link: they reach the whole file system."""
PROC_FOLLOW = re.compile(_PROC_PID + r"/(?:fd/.+|map_files/.+|exe)")
PROC_ENVIRON = re.compile(_PROC_PID + r"/environ")
PROC_TREE = re.compile(r"/proc|" + _PROC_PID)
RAW_MEMORY = re.compile(r"/dev/(?:k?mem|port|crash|watchdog\d*)|/proc/(?:kcore|kmsg)|" + _PROC_PID + r"/(?:mem|pagemap)")
"""Opening these reads raw memory or I/O ports, consumes the kernel log (kmsg) or arms the watchdog."""
DEVICE_REGISTERS = re.compile(r"/sys/(?:kernel/(?:debug|tracing)(?:/.*)?|.*/(?:resource\d+(?:_wc)?|rom|legacy_io|legacy_mem))")
"""Reads that reach device registers or debug/trace files, where reading can have side effects or block."""
UNEXPANDED = re.compile(r"[*?\[\]{}$]")


def normalize(path: str) -> str:
    """Collapse ``.``, ``..`` and repeated slashes (``//etc`` too), without touching the host."""
    norm = posixpath.normpath(path)
    if norm.startswith("//"):
        norm = "/" + norm.lstrip("/")
    return norm


def looks_like_path(arg: str) -> bool:
    return arg.startswith(("/", "~", "./", "../")) or arg in (".", "..")


def path_candidates(arg: str) -> list[str]:
    """The places an argument may name a file: itself, after ``=`` (``--file=/x``), from its first ``/`` (``-f/x``)."""
    found = [arg]
    if "=" in arg:
        found.append(arg.split("=", 1)[1])
    if "/" in arg:
        found.append(arg[arg.index("/") :])
    return found


def as_absolute(path: str) -> str:
    """An absolute, normalized form; a relative path is judged as if the working directory were ``/``."""
    if path.startswith("~"):
        path = "/root" + path[1:] if path in ("~",) or path.startswith("~/") else "/home/" + path[1:]
    return normalize(path if path.startswith("/") else "/" + path)


def _under(path: str, root: str) -> bool:
    return root in ("/", path) or path.startswith(root + "/")


def is_secret(arg: str) -> bool:
    """Whether ``arg`` names credentials: a secret tree, a secret component, or a key-like file name."""
    path = as_absolute(arg)
    bare = "/" not in arg and not arg.startswith("~")
    if not bare and any(_under(path, tree) for tree in SECRET_TREES):
        return True
    parts = [p for p in path.split("/") if p]
    if any(p in SECRET_COMPONENTS for p in parts):
        return True
    if "/.config/gcloud" in path + "/":
        return True
    return bool(parts) and _SECRET_NAME.fullmatch(parts[-1]) is not None


def holds_secrets(path: str) -> bool:
    """Whether the tree at absolute ``path`` contains secrets (so it must not be read recursively)."""
    if is_secret(path) or PROC_TREE.fullmatch(path):
        return True
    return any(_under(tree, path) for tree in (*SECRET_TREES, "/home"))


def readable(path: str) -> str | None:
    """``None`` when ``path`` may be read by a diagnostic; otherwise why not."""
    if path == "-":
        return "reads standard input, which is empty here"
    if not path.startswith("/"):
        return f"{path!r} is relative and the working directory is unknown: name an absolute path"
    norm = normalize(path)
    if (refused := _refused(norm)) is not None:
        return refused
    if PROC_ENVIRON.fullmatch(norm):
        return f"{norm} is a process environment, which often holds secrets"
    if PROC_FOLLOW.fullmatch(norm):
        return f"{norm} follows a process's open file or executable"
    if DEVICE_REGISTERS.fullmatch(norm):
        return f"{norm} reaches device registers or debug/trace files (reads can have side effects)"
    if not any(_under(norm, root) for root in READ_ROOTS):
        return f"{norm} is outside the readable roots ({', '.join(READ_ROOTS[:5])}, ...)"
    return None


def recursively_readable(path: str) -> str | None:
    """``None`` when the tree at absolute ``path`` may be read whole (``grep -r``); otherwise why not."""
    norm = normalize(path)
    if any(_under(norm, root) for root in RECURSIVE_ROOTS):
        return None
    return f"recursive reads are limited to trees without secrets or device registers ({', '.join(RECURSIVE_ROOTS[:6])}, ...)"


def listable(path: str) -> str | None:
    """``None`` when ``path`` may be listed or stat'ed; otherwise why not."""
    if not path.startswith("/"):
        return f"{path!r} is relative and the working directory is unknown: name an absolute path"
    return _refused(normalize(path))


def _refused(norm: str) -> str | None:
    """Why an absolute, normalized path is refused whatever is done with it (the guards say the same first)."""
    if is_secret(norm):
        return f"{norm} holds credentials"
    if PROC_ESCAPE.fullmatch(norm):
        return f"{norm} escapes through a /proc root or cwd link"
    if RAW_MEMORY.fullmatch(norm):
        return f"{norm} is raw memory, I/O ports, the kernel log queue or the watchdog"
    return None
