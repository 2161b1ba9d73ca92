"""Settings come from the environment; malformed values fail fast naming the variable."""

from __future__ import annotations

import pytest

from kioku import ConfigurationError, load_settings


def test_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("KIOKU_DATABASE_URL", "MAX_SERVER_MEMORIES", "MAX_MEMORY_LENGTH"):
        monkeypatch.delenv(name, raising=False)
    settings = load_settings()
    assert settings.database_url is None
    assert (settings.max_server_memories, settings.max_personal_memories) == (100, 100)
    assert settings.max_memory_length == 1000
    assert (settings.stm_ttl_hours, settings.stm_summary_ttl_hours) == (12, 24)
    assert settings.stm_max_summary_length == 1500
    assert settings.stm_max_messages_per_channel == 10
    assert settings.stm_min_messages_for_summary == 6
    assert settings.stm_max_other_channels == 3
    assert "kioku" in str(settings.data_dir)


def test_environment_is_read(monkeypatch: pytest.MonkeyPatch, tmp_path: object) -> None:
    monkeypatch.setenv("MAX_SERVER_MEMORIES", "7")
    monkeypatch.setenv("KIOKU_DATA_DIR", "/tmp/somewhere")
    monkeypatch.setenv("SHORT_TERM_MEMORY_TTL_HOURS", "1.5")
    settings = load_settings()
    assert settings.max_server_memories == 7
    assert str(settings.data_dir) == "/tmp/somewhere"
    assert settings.stm_ttl_hours == 1.5


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("MAX_SERVER_MEMORIES", "lots"),
        ("MAX_PERSONAL_MEMORIES", "0"),
        ("SHORT_TERM_MEMORY_TTL_HOURS", "-1"),
    ],
)
def test_malformed_value_names_the_variable(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str
) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(ConfigurationError, match=name):
        load_settings()


def test_mcp_token_is_a_secret_never_repeated(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KIOKU_MCP_TOKEN", "s3cret-but-short")
    settings = load_settings()
    assert settings.mcp_token is not None
    assert settings.mcp_token.get_secret_value() == "s3cret-but-short"
    assert "s3cret" not in repr(settings)
    monkeypatch.setenv("KIOKU_MCP_TOKEN", "tiny-s3cret")
    with pytest.raises(ConfigurationError, match="KIOKU_MCP_TOKEN") as raised:
        load_settings()
    assert "s3cret" not in str(raised.value)


@pytest.mark.parametrize("value", ["", " ", " " * 20, "\t\n"])
def test_a_blank_mcp_token_is_a_configuration_error(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    """No client could log in with it (an empty one would otherwise count as unset)."""
    monkeypatch.setenv("KIOKU_MCP_TOKEN", value)
    with pytest.raises(ConfigurationError, match="KIOKU_MCP_TOKEN is blank") as raised:
        load_settings()
    assert "\n" not in str(raised.value) and "secrets.token_urlsafe" in str(raised.value)
    monkeypatch.delenv("KIOKU_MCP_TOKEN")
    with pytest.raises(ConfigurationError, match="KIOKU_MCP_TOKEN is blank"):
        load_settings(mcp_token=value)


def test_an_mcp_token_with_surrounding_whitespace_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An ``Authorization`` header cannot carry it, so nobody could log in."""
    monkeypatch.setenv("KIOKU_MCP_TOKEN", "s3cret-long-enough-token ")
    with pytest.raises(ConfigurationError, match="whitespace") as raised:
        load_settings()
    assert "s3cret" not in str(raised.value)
