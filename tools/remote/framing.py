"""Snapshot streams of many nodes over one stdout (Slurm): base64 lines tagged with the node name.

Each Slurm task runs :data:`FRAMER` with the node's ``python3 -I -S``: it runs the collection
command, and writes ``RIGAUDIT-FRAME1 <node> <seq> <base64>`` lines, then ``RIGAUDIT-FRAME1 <node>
end <exit status> <sha256> <frames> <base64 stderr tail>``. Lines of different tasks may
interleave; a node's stream is accepted only when its frames arrive in order and its digest
matches. Anything else on stdout (a login banner) is ignored.
"""

from __future__ import annotations

import base64
import binascii
import hashlib

from rigaudit.tools.core.record import Record, field

TAG = "RIGAUDIT-FRAME1"
CHUNK_BYTES = 48 * 1024

FRAMER = f"""\
import base64, hashlib, os, socket, subprocess, sys, threading
node = (os.environ.get("SLURMD_NODENAME") or socket.gethostname()).split()[0]
def emit(*fields):
    sys.stdout.write(" ".join(("{TAG}", node) + fields) + "\\n")
    sys.stdout.flush()
def b64(data):
    return base64.b64encode(data).decode("ascii") or "-"
try:
    proc = subprocess.Popen(sys.argv[1:], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
except OSError as exc:
    emit("end", "127", "-", "0", b64(("%s: %s" % (sys.argv[1], exc.strerror or exc)).encode()))
    sys.exit(0)
tail = []
def drain():
    for chunk in iter(lambda: proc.stderr.read(65536), b""):
        tail.append(chunk)
        while len(tail) > 1 and sum(map(len, tail)) > 8192:
            tail.pop(0)
reader = threading.Thread(target=drain, daemon=True)
reader.start()
digest, seq = hashlib.sha256(), 0
for chunk in iter(lambda: proc.stdout.read({CHUNK_BYTES}), b""):
    digest.update(chunk)
    emit(str(seq), b64(chunk))
    seq += 1
code = proc.wait()
reader.join(5)
emit("end", str(code), digest.hexdigest(), str(seq), b64(b"".join(tail)[-8192:]))
"""


class NodeStream(Record):
    """One node's complete stream; ``error`` says why it cannot be used (then ``data`` is partial)."""

    node: str
    data: bytes
    exit_code: int | None
    stderr: str
    error: str | None = None


def _b64(text: str) -> bytes:
    return b"" if text == "-" else base64.b64decode(text.encode("ascii"), validate=True)


class _Partial(Record, frozen=False):
    chunks: list[bytes] = field(default_factory=list)
    broken: str | None = None


class FrameReader:
    """Feed it stdout lines; it returns each node's :class:`NodeStream` as the node's end line arrives."""

    def __init__(self) -> None:
        self._partial: dict[str, _Partial] = {}
        self.finished: list[str] = []
        self.noise: list[str] = []

    @property
    def unfinished(self) -> list[str]:
        return sorted(self._partial)

    def feed(self, line: str) -> NodeStream | None:
        fields = line.rstrip("\r\n").split(" ")
        if len(fields) < 4 or fields[0] != TAG:
            if line.strip():
                self.noise.append(line.strip()[:200])
            return None
        node = fields[1]
        partial = self._partial.setdefault(node, _Partial())
        try:
            if fields[2] == "end" and len(fields) == 7:
                return self._end(node, partial, fields[3:])
            seq = int(fields[2])
            if partial.broken is None and seq != len(partial.chunks):
                partial.broken = f"frame {seq} arrived where {len(partial.chunks)} was expected"
            partial.chunks.append(_b64(fields[3]))
        except (ValueError, binascii.Error):
            partial.broken = partial.broken or "a garbled frame"
        return None

    def _end(self, node: str, partial: _Partial, fields: list[str]) -> NodeStream:
        del self._partial[node]
        self.finished.append(node)
        code_text, digest, count, stderr_b64 = fields
        stderr = _b64(stderr_b64).decode("utf-8", errors="replace")
        data = b"".join(partial.chunks)
        code = int(code_text)
        error = partial.broken
        if error is None and int(count) != len(partial.chunks):
            error = f"{len(partial.chunks)} of {count} frames arrived"
        if error is None and code == 0 and hashlib.sha256(data).hexdigest() != digest:
            error = "the stream's digest does not match"
        return NodeStream(node, data, code, stderr, f"garbled stream: {error}" if error else None)
