"""A command line of any user's process is read as its first words: a 2 MB argument vector is not decoded whole at
every look (sixty of them took an audit from 0.7 s to 63 s)."""

from __future__ import annotations

from rigaudit.agents.facts.processes import split_cmdline
from rigaudit.tools.hosts.server_argv import MAX_ARGV_WORDS, server_marker
from rigaudit.tools.share._processes import _words


def test_a_two_megabyte_command_line_is_read_as_its_first_words() -> None:
    data = b"\x00".join([b"python3", b"-m", b"vllm.entrypoints.openai.api_server", *(b"-x%d" % n for n in range(250_000))])
    argv = split_cmdline(data)
    assert argv is not None and len(argv) == MAX_ARGV_WORDS
    assert server_marker(argv) == "vllm" and _words(data) == list(argv)
    long_word = split_cmdline(b"a" * 3_000_000)
    assert long_word is not None and len(long_word[0]) == 128 * 1024
