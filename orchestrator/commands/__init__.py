"""One module per subcommand; each exposes ``COMMAND`` (an :class:`orchestrator.command.Command`)."""
