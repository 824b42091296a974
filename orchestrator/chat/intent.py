"""A small deterministic intent parser: what to do, in the order the person said it, without an LLM.

"write down in system-improve.md, apply the changes runtime only for now, check that p2p works with
some manual micro bench, then rerun inference benchmark" becomes report(system-improve.md),
apply_runtime, bench_p2p, bench_inference. The sentence is cut into clauses (commas, "then",
"and"); each clause may name several steps, kept in the order they appear; a step named twice
counts once. What it does not recognise it leaves alone: the caller says so.
"""

from __future__ import annotations

import re

from rigaudit.orchestrator.chat.steps import Step, StepKind

_CLAUSES = re.compile(r"[,;]|\.(?:\s|$)|\band then\b|\bthen\b|\band\b|\bafterwards\b", re.IGNORECASE)
_FILE_MD = re.compile(r"(?<![\w/.-])((?:[\w.-]+/)*[\w.-]+\.(?:md|markdown))\b", re.IGNORECASE)
_JSON = re.compile(r"(?<![\w/.-])((?:[\w.-]+/)*[\w.-]+\.json)\b", re.IGNORECASE)
_CHECK = re.compile(r"\b([a-z_]+\.[a-z0-9_.]+[a-z0-9_])\b")

_PATTERNS: tuple[tuple[StepKind, re.Pattern[str]], ...] = (
    ("report", re.compile(r"\bwrite (?:it )?down\b|\breport\b|\bdocument\b|\bwrite up\b|\.(?:md|markdown)\b", re.IGNORECASE)),
    ("rollback", re.compile(r"\broll ?back\b|\bundo\b|\brevert\b", re.IGNORECASE)),
    ("apply_runtime", re.compile(r"\bapply\b|\bfix (?:it|them|the host|everything)\b", re.IGNORECASE)),
    ("bench_p2p", re.compile(r"\bp2p\b|\bpeer[- ]to[- ]peer\b|\bmicro[- ]?bench", re.IGNORECASE)),
    (
        "bench_inference",
        re.compile(
            r"\binference\b.*\bbench|\bbench\w*\b.*\binference\b|\b(?:re-?run|repeat)\b.*\bbench|\bthroughput\b|\btok(?:ens)?/s\b",
            re.IGNORECASE,
        ),
    ),
    ("compare", re.compile(r"\bcompare\b", re.IGNORECASE)),
    ("explain", re.compile(r"\bwhy\b|\bexplain\b", re.IGNORECASE)),
    ("plan", re.compile(r"\bplan\b|\bwhat should (?:i|we) (?:do|fix|change)\b|\bpropose\b", re.IGNORECASE)),
    (
        "audit",
        re.compile(
            r"\baudit\b|\b(?:check|inspect|scan|look at) (?:the |this )?(?:host|server|machine|box|system)\b", re.IGNORECASE
        ),
    ),
)


def _clauses(text: str) -> list[str]:
    return [c.strip() for c in _CLAUSES.split(text) if c and c.strip()]


def _step(kind: StepKind, clause: str, text: str) -> Step | None:
    if kind == "report":
        found = _FILE_MD.search(clause) or _FILE_MD.search(text)
        return Step("report", (found.group(1),) if found else ())
    if kind == "explain":
        check = _CHECK.search(clause)
        return Step("explain", (check.group(1),)) if check else None
    if kind == "compare":
        files = _JSON.findall(clause)
        files = files if len(files) >= 2 else _JSON.findall(text)
        return Step("compare", tuple(files[:2])) if len(files) >= 2 else None
    return Step(kind)


def parse_intent(text: str) -> list[Step]:
    """The steps ``text`` asks for, in the order it names them (empty when none is recognised)."""
    steps: list[Step] = []
    seen: set[StepKind] = set()
    for clause in _clauses(text):
        hits = sorted((m.start(), kind) for kind, pattern in _PATTERNS if (m := pattern.search(clause)))
        if any(kind == "bench_p2p" for _, kind in hits):
            hits = [(pos, kind) for pos, kind in hits if kind != "bench_inference" or "inference" in clause.lower()]
        if any(kind in ("report", "apply_runtime", "bench_p2p", "bench_inference", "rollback") for _, kind in hits):
            hits = [(pos, kind) for pos, kind in hits if kind != "audit"]
        for _, kind in hits:
            if kind in seen:
                continue
            step = _step(kind, clause, text)
            if step is not None:
                steps.append(step)
                seen.add(kind)
    return steps
