"""bert."""
