"""A command's session: its events, the query commands' sessions, transcripts summed up."""
