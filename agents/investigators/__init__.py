"""One module per area; each exposes ``INVESTIGATOR``."""
