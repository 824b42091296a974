"""What a command writes: system-improve.md, its pictures, result files."""
