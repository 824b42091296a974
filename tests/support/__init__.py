"""Test support shared by the test modules (import as ``tests.support...``, like ``tests.support.mutate``)."""
