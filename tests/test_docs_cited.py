"""Every ``docs/...`` file that the code, the tests or the writing cites exists (``snapshot --help`` included)."""

from __future__ import annotations

import re
from pathlib import Path

_ROOT = Path(__file__).resolve().parent.parent
_CITED = re.compile(r"(?<![\w./-])docs/[\w./-]*\w\.(?:md|txt|json|jsonl|csv|log|tar\.gz)\b")
_SKIP = {".git", ".venv", "node_modules", "__pycache__"}


def _sources() -> list[Path]:
    return [
        p
        for p in _ROOT.rglob("*")
        if p.suffix in {".py", ".md", ".toml", ".txt", ".sh"} and p.is_file() and not _SKIP & set(p.parts)
    ]


def test_every_cited_docs_file_exists() -> None:
    missing = sorted(
        f"{p.relative_to(_ROOT)}: {m}"
        for p in _sources()
        for m in set(_CITED.findall(p.read_text(errors="replace")))
        if not (_ROOT / m).is_file()
    )
    assert not missing, "cited but absent:\n" + "\n".join(missing)


def test_snapshot_help_names_the_shipped_format() -> None:
    from rigaudit.orchestrator.commands import snapshot

    assert "docs/snapshot-format.md" in (snapshot.__doc__ or "")
    assert (_ROOT / "docs/snapshot-format.md").is_file()
