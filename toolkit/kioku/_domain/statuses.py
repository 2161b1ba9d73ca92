"""Every status a tool answers the model with (SPEC §3–4, §7): one enum per tool."""

from __future__ import annotations

from enum import StrEnum


class CreateStatus(StrEnum):
    """Outcomes of ``create_long_term_memory``."""

    SAVED = "memory_saved_successfully"
    INVALID_ARGS = "memory_save_failed_invalid_args"
    DISABLED = "memory_save_failed_disabled"
    INTERNAL_ERROR = "memory_save_failed_internal_error"
    AMBIGUOUS_USER = "memory_save_failed_ambiguous_user"
    USER_NOT_FOUND = "memory_save_failed_user_not_found"
    PRIVACY_RESTRICTED = "memory_save_failed_privacy_restricted"
    INVALID_CONTENT = "memory_save_failed_invalid_content"
    LIMIT_EXCEEDED = "memory_save_failed_limit_exceeded"
    DUPLICATE = "memory_save_failed_duplicate"
    DB_ERROR = "memory_save_failed_db_error"


class UpdateStatus(StrEnum):
    """Outcomes of ``update_long_term_memory``."""

    UPDATED = "memory_updated_successfully"
    DELETED = "memory_deleted_successfully"
    INVALID_ARGS = "memory_update_failed_invalid_args"
    DISABLED = "memory_update_failed_disabled"
    INTERNAL_ERROR = "memory_update_failed_internal_error"
    INVALID_CONTENT = "memory_update_failed_invalid_content"
    AMBIGUOUS_USER = "memory_update_failed_ambiguous_user"
    USER_NOT_FOUND = "memory_update_failed_user_not_found"
    INVALID_SCOPE = "memory_update_failed_invalid_scope"
    INVALID_TARGET = "memory_update_failed_invalid_target"
    PRIVACY_RESTRICTED = "memory_update_failed_privacy_restricted"
    NOT_FOUND = "memory_update_failed_not_found"
    DB_ERROR = "memory_update_failed_db_error"


class StmStatus(StrEnum):
    """Outcomes of ``update_short_term_memory``."""

    UPDATED = "short_term_memory_updated_successfully"
    REFUSED = "short_term_memory_update_refused"
    INVALID_ARGS = "short_term_memory_update_failed_invalid_args"
    INTERNAL_ERROR = "short_term_memory_update_failed_internal_error"
    DB_ERROR = "short_term_memory_update_failed_db_error"


class SearchStatus(StrEnum):
    """Outcomes of ``search_long_term_memory``."""

    FOUND = "memories_found"
    NONE = "no_memories_found"
    INVALID_ARGS = "search_failed_invalid_args"
    INTERNAL_ERROR = "search_failed_internal_error"
    DB_ERROR = "search_failed_db_error"


class GetStatus(StrEnum):
    """Outcomes of ``get_memory``."""

    FOUND = "memory_found"
    NOT_FOUND = "memory_not_found"
    INVALID_ARGS = "get_failed_invalid_args"
    DB_ERROR = "get_failed_db_error"
