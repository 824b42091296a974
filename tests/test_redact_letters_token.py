"""A random token of letters only is a secret too; a name made of words is not.

One random base62 token of 32 characters in some 250 has no digit (``XWHnPgNEpAEbYKNgqXXAnWzJiVzJZizR``): the
planted corpus drew one when other tests had drawn from its generator first, and it reached every output.
"""

from __future__ import annotations

import random
import string

import pytest

from rigaudit.tools.redact import REDACTED, redact_text

NAMES = [
    "NVreg_EnableStreamMemOPs",
    "GenuineIntelAuthenticAMDHygonGenuine",
    "LlamaForCausalLMWithTensorParallel",
    "NVIDIAGeForceRTXFourThousandNinety",
    "ThisIsALongIdentifierNameForTesting",
]


def test_a_token_of_letters_only_in_a_log_is_redacted() -> None:
    line = "[   14.000000] app[999]: session XWHnPgNEpAEbYKNgqXXAnWzJiVzJZizR resumed"
    assert redact_text(line) == f"[   14.000000] app[999]: session {REDACTED} resumed"


def test_most_random_tokens_of_letters_only_are_redacted() -> None:
    rng = random.Random(5)
    tokens = ["".join(rng.choice(string.ascii_letters) for _ in range(32)) for _ in range(400)]
    caught = sum(redact_text(f"session {t} resumed") == f"session {REDACTED} resumed" for t in tokens)
    assert caught >= 0.75 * len(tokens)


@pytest.mark.parametrize("name", NAMES)
def test_a_name_made_of_words_is_kept(name: str) -> None:
    assert redact_text(f"option {name} set") == f"option {name} set"
