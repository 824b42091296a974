"""The terminal's section of a model's suggestions: after everything of the rules, apart, as the model wrote it.

Every text of a suggestion is the model's: it is shown literally (a :class:`~rich.text.Text`, never markup), so
``[link=...]`` or ``[bold]`` in it is printed as written, and printable (no control sequences).
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text

from rigaudit.tools.core.printable import printable
from rigaudit.tools.schema.finding import WHERE_TEXT, Finding

HEADING = "Model suggestions (LLM): not the rules' findings; never counted, planned or applied"
MAX_CHARS = 600
"""A field of a suggestion, as shown (``--json`` has it whole)."""


def _plain(text: str, limit: int = MAX_CHARS) -> str:
    text = printable(" ".join(text.split()))
    return text if len(text) <= limit else text[:limit] + "…"


def suggestion_text(suggestion: Finding, rule_checks: frozenset[str] = frozenset()) -> Text:
    """One suggestion: its check and title, what it says it observed, why, its fix as a description, its evidence."""
    text = Text()
    text.append(f"{suggestion.check} (LLM)", style="bold magenta")
    if suggestion.check in rule_checks:
        text.append(": explains the rule's finding: ")
    else:
        rated = f"the model rates it {suggestion.severity}" if suggestion.severity else suggestion.status
        text.append(f" ({rated}): ")
    text.append(_plain(suggestion.title, 200))
    for label, value in (("observed", suggestion.observed), ("why", suggestion.explanation)):
        if value:
            text.append(f"\n  {label}: ", style="dim")
            text.append(_plain(value))
    fix = suggestion.fix
    if fix is not None:
        text.append(
            f"\n  the model's suggestion, never applied ({fix.kind}, on {WHERE_TEXT[fix.where]}, risk {fix.risk}): ",
            style="dim",
        )
        text.append(_plain(fix.summary))
    if suggestion.evidence:
        text.append("\n  evidence: ", style="dim")
        text.append(_plain(", ".join(suggestion.evidence), 300))
    return text


def suggestions_section(suggestions: Sequence[Finding], rule_checks: frozenset[str] = frozenset()) -> list[Text]:
    """The heading and one block per suggestion (nothing without suggestions); ``rule_checks`` are the checks of
    the rules' findings (a suggestion on one of them explains it)."""
    if not suggestions:
        return []
    out = [Text(f"{HEADING} ({len(suggestions)}):", style="bold magenta")]
    return out + [suggestion_text(s, rule_checks) for s in suggestions]


__all__ = ["HEADING", "suggestion_text", "suggestions_section"]
