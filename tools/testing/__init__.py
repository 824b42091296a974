"""Test doubles shipped with the library, so tests (ours and yours) never need a real server."""

from rigaudit.tools.testing.fake_openai import FakeTiming, Generation, OpenAIStreamServer, fake_server, paced_generator
from rigaudit.tools.testing.scripted_openai import Reply, ScriptedOpenAIServer

__all__ = [
    "FakeTiming",
    "Generation",
    "OpenAIStreamServer",
    "Reply",
    "ScriptedOpenAIServer",
    "fake_server",
    "paced_generator",
]
