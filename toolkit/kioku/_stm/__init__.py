"""Short-term memory: recent messages and summaries per channel (SPEC §7)."""
