"""Context build (SPEC §10): pure stages rendering loaded memory into context items."""
