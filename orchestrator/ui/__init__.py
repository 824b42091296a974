"""Consumers of session events that draw on the terminal."""
