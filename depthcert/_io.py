"""I/O helpers for the CLI layer (implemented once, in :mod:`plumbing.io`)."""
from plumbing.io import atomic_write_json, atomic_write_text, check_writable_dir, dumps, versions

__all__ = ["atomic_write_json", "atomic_write_text", "check_writable_dir", "dumps", "versions"]
