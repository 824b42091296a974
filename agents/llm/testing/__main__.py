"""``python -m rigaudit.agents.llm.testing SCRIPT.json [--port N] [--family NAME]``: the scripted server, by hand."""

from __future__ import annotations

import sys

from rigaudit.agents.llm.testing.server import main

sys.exit(main())
