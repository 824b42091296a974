"""The coordinator: fan-out, merge, plan, approve, apply, benchmark, report, and the CLI."""
