"""Archetype verdicts, slice 4 of the cases in tests/support/archetype_cases.py (one slice a file, for the workers)."""

from tests.support.archetype_cases import slice_tests

test_archetype_verdicts, test_fault_verdicts, test_every_fix_holds_on_its_layer = slice_tests(4)
