"""Option types and option groups shared by several commands (--llm, the model)."""
