"""What every module stands on: the exception root, Record, the version, text safe to show."""
