"""One module per subcommand; each exposes ``COMMAND`` (an :class:`rigaudit.orchestrator.command.Command`)."""
