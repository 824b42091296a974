"""The kernel's AER messages in its log, per device: how many, how many the rate limit dropped, when, which errors.

Linux's AER driver (drivers/pci/pcie/aer.c) prints, for each error message a port receives, ``AER: Corrected error
received: BDF`` (5.x), ``AER: Corrected error message received from BDF`` (6.x) or ``AER: Correctable error message
received from BDF`` (6.16 on; ``Multiple ...`` when several were pending), then under the device that logged it
``PCIe Bus Error: severity=..., type=Physical Layer, (Receiver ID)`` and one line per error bit (``[ 0] RxErr``). From
6.16 the messages are rate-limited per device, and the kernel says how many it dropped (``aer_ratelimit: N callbacks
suppressed``; the 2023 patches' ``__aer_print_error: N callbacks suppressed``). A sysfs counter counts since boot; the
log's lines carry their time, so a burst shows a rate that one reading of the counter cannot.
"""

from __future__ import annotations

import re

from rigaudit.tools.core.record import Record, field

_BDF = r"[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]"
_RECEIVED = (
    r"(?P<port>" + _BDF + r"): AER: (?:Multiple )?(?P<sev>Correct(?:ed|able)|Uncorrect(?:ed|able) \((?:Non-)?Fatal\)) "
    r"error (?:message )?received(?: from|:) (?P<src>" + _BDF + r")"
)
_BUS_ERROR = r"(?P<dev>" + _BDF + r"): (?:AER: )?PCIe Bus Error: severity=(?P<sev>[^,]{1,40}), type=(?P<type>[^,]{1,40})"
_BIT = r"(?P<dev>" + _BDF + r"): (?:AER: )?\s+\[\s?\d{1,2}\] (?P<bit>[A-Za-z][A-Za-z0-9 ]{0,30}?)\s*(?:\(First\))?$"
_SUPPRESSED = r"(?:\]\s*|^)(?P<who>[\w.]{0,40}(?:aer|AER)[\w.]{0,40}): (?P<n>\d{1,9}) callbacks suppressed"
_AT = r"^\s*\[\s*(\d{1,10}\.\d{1,9})\]"


class AerLog(Record, frozen=False):
    """One device's AER messages in the kernel log."""

    bdf: str
    messages: int = 0
    """Error messages received from it (``... error message received from BDF``) or logged by it (``PCIe Bus Error``)."""
    suppressed: int = 0
    """Messages the kernel's rate limit dropped next to its own."""
    uncorrectable: int = 0
    first_at: float | None = None
    last_at: float | None = None
    kinds: dict[str, None] = field(default_factory=dict)
    """``Physical Layer RxErr``... in the order first seen."""

    @property
    def total(self) -> int:
        return self.messages + self.suppressed

    @property
    def span(self) -> str:
        if self.first_at is None or self.last_at is None:
            return ""
        if self.last_at - self.first_at < 1:
            return f"at {self.first_at:g} s"
        return f"between {self.first_at:g} s and {self.last_at:g} s"


def _norm(bdf: str) -> str:
    return bdf.lower()


def parse_aer_log(text: str) -> dict[str, AerLog]:
    """Each device's AER messages (the device a message came from, or the one that logged the error's details)."""
    out: dict[str, AerLog] = {}
    last: str | None = None
    announced: str | None = None
    layer: dict[str, str] = {}
    waiting = 0
    for line in text.splitlines():
        keyed = "AER" in line or "PCIe Bus Error" in line
        if not keyed and "callbacks suppressed" not in line and (last is None or last not in line.lower()):
            continue  # most lines: no regex (the gate reads the whole log)
        at_match = re.search(_AT, line)
        at = float(at_match.group(1)) if at_match else None
        bdf: str | None = None
        if keyed and (m := re.search(_RECEIVED, line)) is not None:
            bdf = announced = _norm(m.group("src"))
            log = out.setdefault(bdf, AerLog(bdf))
            log.messages += 1
            log.uncorrectable += m.group("sev").startswith("Uncorrect")
        elif keyed and (m := re.search(_BUS_ERROR, line)) is not None:
            bdf = _norm(m.group("dev"))
            log = out.setdefault(bdf, AerLog(bdf))
            if announced != bdf:  # details its port did not announce (another path, or a dropped announcement)
                log.messages += 1
                log.uncorrectable += m.group("sev").startswith("Uncorrect")
            announced = None
            layer[bdf] = m.group("type").strip()
            log.kinds.setdefault(layer[bdf], None)
        elif (m := re.search(_BIT, line)) is not None:
            bdf = _norm(m.group("dev"))
            log = out.setdefault(bdf, AerLog(bdf))
            log.kinds.pop(layer.get(bdf, ""), None)
            log.kinds.setdefault(f"{layer.get(bdf, '')} {m.group('bit').strip()}".strip(), None)
        elif (m := re.search(_SUPPRESSED, line)) is not None:
            if last is not None:
                out[last].suppressed += int(m.group("n"))
            else:
                waiting += int(m.group("n"))
            continue
        if bdf is None:
            continue
        log = out[bdf]
        if waiting:
            log.suppressed, waiting = log.suppressed + waiting, 0
        if at is not None:
            log.first_at = at if log.first_at is None else min(log.first_at, at)
            log.last_at = at if log.last_at is None else max(log.last_at, at)
        last = bdf
    return out
