"""Command lines: the program and its flags are kept, the values of flags that carry credentials are not.

A flag carries a credential when its name is a secret name (``--api-key``, ``--auth``, ``--hf-token``,
``--password``, ``-pass``), or by the program's convention: ``mysql -pSECRET``, ``sshpass -p``,
``redis-cli -a``, ``ipmitool -P``, ``ldapsearch -w``, ``docker login -p``, ``curl -u user:pass``, and ``-k VALUE``
(a key; ``curl -k URL`` keeps its URL). ``NAME=value`` words (``env HF_TOKEN=x python ...``) are
judged by their name. The same walk serves argument vectors and the words of a ``ps`` line.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence

from rigaudit.tools.redact._names import is_secret_name
from rigaudit.tools.redact._shapes import REDACTED
from rigaudit.tools.redact._tally import Tally

_MYSQL = frozenset({"mysql", "mysqldump", "mysqladmin", "mysqlimport", "mysqlcheck", "mysqlsh", "mariadb", "mariadb-dump"})
_NEXT = {
    "sshpass": frozenset({"-p"}),
    "redis-cli": frozenset({"-a"}),
    "valkey-cli": frozenset({"-a"}),
    "keydb-cli": frozenset({"-a"}),
    "ipmitool": frozenset({"-P", "-K", "-y"}),
    "mongo": frozenset({"-p"}),
    "mongosh": frozenset({"-p"}),
    "mongodump": frozenset({"-p"}),
    "smbclient": frozenset({"-U"}),
    **dict.fromkeys(
        ("ldapsearch", "ldapmodify", "ldapadd", "ldapdelete", "ldapwhoami", "ldapcompare", "ldapmodrdn"), frozenset({"-w"})
    ),
    "ldappasswd": frozenset({"-w", "-a", "-s"}),
    "curl": frozenset({"-b"}),
}
"""Short flags whose next word (or glued rest) is a password, by program."""
_LOGIN = frozenset({"docker", "podman", "nerdctl", "helm", "buildah", "skopeo"})
_LOGIN_KEY = frozenset({"wandb"})
"""Programs whose ``login`` takes the key itself as its next word (``wandb login KEY``)."""
_USERPASS = frozenset({"-u", "--user", "-U", "--proxy-user"})
_URL_TOOLS = frozenset({"curl", "wget", "http", "https", "xh", "httpie"})
_POSITIONAL = frozenset({"htpasswd", "mc", "mcli"})
"""Programs that take a secret as a plain argument at a fixed place (:func:`_secret_place`)."""
_KNOWN = _MYSQL | frozenset(_NEXT) | _LOGIN | _LOGIN_KEY | _URL_TOOLS | _POSITIONAL
_NUMBER = re.compile(r"-?\d+(?:[.,]\d+)*")
_ASSIGN = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)=(.*)", re.DOTALL)
_FLAG = re.compile(r"(--?[A-Za-z][A-Za-z0-9_.-]*)(?:=(.*))?", re.DOTALL)


def _program(word: str) -> str:
    """The program a word names: ``/usr/bin/curl``, ``"curl``, or after a record's key (``cmdline="curl``)."""
    bare = word.strip("\"'")
    if "=" in bare and not bare.startswith("-"):
        bare = bare.rsplit("=", 1)[1].strip("\"'")
    return posixpath.basename(bare)


def _value_like(word: str) -> bool:
    """Whether ``word`` can be a flag's value (not the next flag)."""
    return bool(word) and (not word.startswith("-") or _NUMBER.fullmatch(word) is not None) and word != REDACTED


def _plain(word: str) -> bool:
    """Values ``-k`` keeps: URLs, paths, numbers (``curl -k URL``, ``sort -k 2``)."""
    bare = word.strip("\"'")
    return "://" in bare or bare.startswith(("/", "./", "~")) or _NUMBER.fullmatch(bare) is not None


def _secret_place(program: str, flags: str, before: Sequence[str]) -> bool:
    """Whether the next plain argument, after the arguments ``before`` it, is a secret by the program's usage:
    ``htpasswd -b FILE USER PASSWORD`` (``-nb USER PASSWORD``), ``mc alias set NAME URL ACCESS SECRET`` and
    ``mc config host add NAME URL ACCESS SECRET``."""
    if program == "htpasswd":
        return "b" in flags and len(before) == (1 if "n" in flags else 2)
    if list(before[:2]) == ["alias", "set"]:
        return len(before) == 5
    return list(before[:3]) == ["config", "host", "add"] and len(before) == 6


class ArgvWalk:
    """One left-to-right pass over the words of a command line."""

    def __init__(self, tally: Tally | None) -> None:
        self.tally = tally
        self.program = ""
        self.login = False
        self.flags = ""
        """The short flags given so far to a program of :data:`_POSITIONAL` (``-nbB``: ``nbB``)."""
        self.plain: list[str] = []
        """Its plain arguments so far."""
        self.hide: str | None = None
        """How the next word is a secret: ``all`` (the whole word), ``key`` (unless a URL, path or number)
        or ``userpass`` (after its colon)."""

    def _count(self, kind: str = "credential") -> None:
        if self.tally is not None:
            self.tally.add(kind)

    def _hidden(self, word: str) -> str:
        how, self.hide = self.hide, None
        if how == "userpass":
            user, colon, password = word.partition(":")
            if not colon or not password or password == REDACTED:
                return word
            self._count()
            return f"{user}:{REDACTED}"
        self._count()
        return REDACTED

    def _short(self, word: str) -> str | None:
        """A program's own short credential flag (``-pSECRET``, ``-a``, ``-P``); ``None`` when not one."""
        flag, rest = word[:2], word[2:]
        glued = rest[1:] if rest.startswith("=") else rest
        if self.program in _MYSQL and flag == "-p" and glued:
            self._count()
            return f"-p{REDACTED}"
        if flag in _NEXT.get(self.program, ()) or (self.login and flag == "-p"):
            if glued:
                self._count()
                return f"{flag}{REDACTED}"
            self.hide = "all"
            return word
        if self.program in _URL_TOOLS and word in _USERPASS:
            self.hide = "userpass"
            return word
        return None

    def word(self, word: str, next_word: str | None) -> str:
        """The word, redacted as its place on the command line says."""
        if self.hide is not None:
            if _value_like(word) and not (self.hide == "key" and _plain(word)):
                return self._hidden(word)
            self.hide = None
        if word.startswith("-") and len(word) > 1 and not _NUMBER.fullmatch(word):
            if self.program in _POSITIONAL and not word.startswith("--"):
                self.flags += word[1:]
            return self._flag(word, next_word)
        assign = _ASSIGN.fullmatch(word)
        if assign:
            if assign.group(2) and assign.group(2) != REDACTED and is_secret_name(assign.group(1)):
                self._count()
                return f"{assign.group(1)}={REDACTED}"
            if not assign.group(2).startswith(('"', "'")):
                return word
            # a quoted command line in a record (audit's cmdline="curl -u ..."): its first word is a program
        base = _program(word)
        if self.program in _POSITIONAL and base != self.program:
            secret = _secret_place(self.program, self.flags, self.plain) and word != REDACTED
            self.plain.append(word)
            if secret:
                self._count()
                return REDACTED
            return word
        if not self.program or base in _KNOWN:
            self.program, self.login, self.flags, self.plain = base, False, "", []
        elif self.program in _LOGIN and word == "login":
            self.login = True
        elif self.program in _LOGIN_KEY and word == "login":
            self.hide = "all"
        return word

    def _flag(self, word: str, next_word: str | None) -> str:
        short = self._short(word) if not word.startswith("--") else None
        if short is not None:
            return short
        flag = _FLAG.fullmatch(word)
        if flag is None:
            return word
        name, value = flag.group(1), flag.group(2)
        if self.program in _URL_TOOLS and name in _USERPASS:
            self.hide = "userpass"
            return f"{name}={self._hidden(value)}" if value else word
        if name in ("-k", "--key") and value is None:
            self.hide = "key"  # a key, unless the next word is a URL, a path or a number (curl -k URL)
            return word
        if name == "--key" and value and value != REDACTED and not _plain(value):
            self._count()
            return f"{name}={REDACTED}"
        if not is_secret_name(name):
            return word
        if value is None:
            self.hide = "all"
            return word
        if value and value != REDACTED:
            self._count()
            return f"{name}={REDACTED}"
        return word


def redact_words(words: Sequence[str], tally: Tally | None = None) -> list[str]:
    """The words of one command line with credential values replaced (the number of words is kept)."""
    walk = ArgvWalk(tally)
    return [walk.word(w, words[i + 1] if i + 1 < len(words) else None) for i, w in enumerate(words)]
