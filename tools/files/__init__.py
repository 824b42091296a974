"""Files rigaudit reads or writes: atomic writes, bounded reads and tar unpacking, times in files."""
