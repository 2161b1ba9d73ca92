"""Hybrid search over the memories a turn may see (SPEC §2, §10; issue #5)."""
