"""Test doubles shipped with the library, so tests (ours and yours) never need a real server."""

from tools.testing.fake_openai import FakeTiming, Generation, OpenAIStreamServer, fake_server, paced_generator
from tools.testing.scripted_openai import Reply, ScriptedOpenAIServer

__all__ = [
    "FakeTiming",
    "Generation",
    "OpenAIStreamServer",
    "Reply",
    "ScriptedOpenAIServer",
    "fake_server",
    "paced_generator",
]
