"""The papers' experiments as functions returning plain data (used by the CLI, pages and tests)."""
