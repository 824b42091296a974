import sys

from rigaudit.orchestrator.cli import main

sys.exit(main())
