"""Transcripts: every session's events as JSONL (writer), read back (reader, migrations), listed
(store), replayed through the UI (replay), and re-diagnosed from their tool calls (rebuild), cut into their audits (segments)."""
