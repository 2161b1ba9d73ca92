"""LangGraph's long-term memory API (``BaseStore``) on kioku's memories.

``store.py`` holds :class:`~kioku._lgstore.store.KiokuLangGraphStore`; ``namespaces.py``
the rules (namespace to scope, value to text), ``checks.py`` the checks of each operation,
``sql.py`` the statements, ``search.py`` the ranked search, ``writes.py`` the puts and
deletes.
"""
