"""LangGraph graphs built on kioku (the per-turn memory graph arrives with issue #4)."""
