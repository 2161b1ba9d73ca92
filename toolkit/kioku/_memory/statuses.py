"""Status values returned to the model by the long-term memory tools (SPEC §3–4)."""

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
