"""kioku's plain data: scopes, memory records, server settings, statuses, visibility.

Nothing here touches SQLAlchemy, a database or the network; the pure modules (rules,
rendering, statement building) import these and each other, and the modules with I/O
import them too, never the other way round.
"""
