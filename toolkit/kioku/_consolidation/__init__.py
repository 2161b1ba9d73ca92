"""Opt-in memory consolidation: one model pass proposing merges and supersessions."""
