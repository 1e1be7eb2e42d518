"""Credentials in URLs (user info, secret query parameters) are masked in text and config,
dropped from identities, and restored for the processes that need them."""

from __future__ import annotations

import logging
import os

import pytest

from mill.redact import (
    SWEEP_SECRETS_ENV,
    _RedactedRecord,
    hide_sweep_credentials,
    is_secret_param,
    redact,
    redact_logs,
    redact_text,
    redact_url,
    restore,
    secrets_of,
    sweep_job_config,
)

URLS = [
    # (url, masked, dropped)
    (
        "http://alice:secret@127.0.0.1:8080/v1",
        "http://***@127.0.0.1:8080/v1",
        "http://127.0.0.1:8080/v1",
    ),
    (
        "https://token@api.example.com/v1/",
        "https://***@api.example.com/v1/",
        "https://api.example.com/v1/",
    ),
    ("http://alice:p%40ss@h/v1", "http://***@h/v1", "http://h/v1"),
    # a raw '?' or '#' in the password: still all of it
    ("http://alice:se?cr#et@h/v1", "http://***@h/v1", "http://h/v1"),
    (
        "https://h/v1?api_key=abc&api-version=2024-06-01&sig=zz#frag",
        "https://h/v1?api_key=***&api-version=2024-06-01&sig=***#frag",
        "https://h/v1?api-version=2024-06-01#frag",
    ),
    (
        "http://h/v1?X-Amz-Signature=1&max_tokens=5&accessToken=9&Password=x",
        "http://h/v1?X-Amz-Signature=***&max_tokens=5&accessToken=***&Password=***",
        "http://h/v1?max_tokens=5",
    ),
    ("http://h/v1?key=1", "http://h/v1?key=***", "http://h/v1"),
    ("http://127.0.0.1:8080/v1", "http://127.0.0.1:8080/v1", "http://127.0.0.1:8080/v1"),
    ("http://h/v1?model=x", "http://h/v1?model=x", "http://h/v1?model=x"),
    ("alice:secret@host/v1", "***@host/v1", "host/v1"),  # no scheme: still masked
]


@pytest.mark.parametrize(("url", "masked", "dropped"), URLS)
def test_redact_url_masks_or_drops_credentials(url: str, masked: str, dropped: str) -> None:
    assert redact_url(url) == masked
    assert redact_url(url, drop=True) == dropped


def test_secret_parameter_names_are_words_not_substrings() -> None:
    for name in ("key", "api_key", "apiKey", "API-KEY", "apikey", "token", "access_token",
                 "client_secret", "password", "passwd", "X-Amz-Signature", "sig", "auth",
                 "credential"):  # fmt: skip
        assert is_secret_param(name), name
    for name in ("max_tokens", "keyboard", "monkey", "api-version", "model", "signal", "page"):
        assert not is_secret_param(name), name


def test_redact_text_finds_urls_inside_messages_and_command_lines() -> None:
    line = (
        "mill task=arc model.base_url=http://alice:secret@127.0.0.1:8/v1 "
        "'judge.base_url=https://h/v1?api_key=k123' (see http://docs.example/x?page=2)"
    )
    out = redact_text(line)
    assert "secret" not in out and "k123" not in out
    assert "model.base_url=http://***@127.0.0.1:8/v1 " in out
    assert "judge.base_url=https://h/v1?api_key=***'" in out
    assert "http://docs.example/x?page=2" in out
    assert redact_text("no url: alice@example.com, key=1") == "no url: alice@example.com, key=1"


def test_redact_walks_config_and_secrets_restore_it() -> None:
    config = {
        "model": {"base_url": "http://u:pw@h:1/v1", "max_length": 5, "stops": ["\n"]},
        "judge": {"base_url": "https://h/v1?token=t0k", "n": None},
        "argv": ["a", "x=http://u:pw@h/v1"],
    }
    clean = redact(config)
    assert clean == {
        "model": {"base_url": "http://***@h:1/v1", "max_length": 5, "stops": ["\n"]},
        "judge": {"base_url": "https://h/v1?token=***", "n": None},
        "argv": ["a", "x=http://***@h/v1"],
    }
    assert config["model"]["base_url"] == "http://u:pw@h:1/v1"  # a copy
    secrets = secrets_of(config)
    assert [path for path, _ in secrets] == [
        ["model", "base_url"],
        ["judge", "base_url"],
        ["argv", 1],
    ]
    assert restore(clean, secrets) == config


def test_log_records_are_redacted_whatever_the_handler(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(logging, "_logRecordFactory", logging.LogRecord)
    redact_logs()
    assert logging.getLogRecordFactory() is _RedactedRecord
    with caplog.at_level(logging.INFO, logger="hydra"):
        logging.getLogger("hydra").info("\t#%d : %s", 0, "model.base_url=http://a:secret@h/v1")
    (record,) = caplog.records
    assert record.getMessage() == "\t#0 : model.base_url=http://***@h/v1"
    assert "secret" not in caplog.text


def test_every_url_of_a_sweep_value_is_masked() -> None:
    """A sweep override lists its values with commas: each URL is masked (the second one
    was kept whole inside the first's match, its credentials in clear)."""
    for text, masked in (
        (
            "model.base_url=http://a:s1@h/v1,https://b:s2@h2/v1?key=s3",
            "model.base_url=http://***@h/v1,https://***@h2/v1?key=***",
        ),
        ("u=choice(http://c:s4@h3,http://d:s5@h4/v1)", "u=choice(http://***@h3,http://***@h4/v1)"),
    ):
        assert redact_text(text) == masked


def _sweep_config():
    from omegaconf import OmegaConf

    return OmegaConf.create(
        {
            "model": {"base_url": "http://alice:secret@h/v1?api_key=k1&v=1"},
            "judge": {"base_url": "${model.base_url}"},
            "hydra": {
                "overrides": {
                    "task": [
                        'model.base_url="http://alice:secret@h/v1?api_key=k1&v=1"',
                        "x=http://bob:pw@h2/v1,http://carol:pw2@h3/v1)",
                    ]
                }
            },
        }
    )


def test_a_sweeps_credentials_travel_in_the_environment_not_the_config(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The master config of a sweep (what launchers pickle) is masked in place and the
    originals go to MILL_SWEEP_SECRETS; a job's config gets them back as a copy, and the
    config Hydra keeps for the job's result is masked too."""
    from omegaconf import OmegaConf

    monkeypatch.delenv(SWEEP_SECRETS_ENV, raising=False)
    cfg = _sweep_config()
    hide_sweep_credentials(cfg)
    text = OmegaConf.to_yaml(cfg)
    assert "secret" not in text and "k1" not in text and "pw" not in text, text
    assert cfg.model.base_url == "http://***@h/v1?api_key=***&v=1"
    carried = os.environ[SWEEP_SECRETS_ENV]
    assert "alice:secret" in carried and "carol:pw2" in carried
    # a job composed from the masked overrides: its URLs come back from the environment
    job = OmegaConf.create(
        {"model": {"base_url": "http://***@h/v1?api_key=***&v=1"}, "x": "http://***@h3/v1"}
    )
    real = sweep_job_config(job)
    assert real.model.base_url == "http://alice:secret@h/v1?api_key=k1&v=1"
    assert real.x == "http://carol:pw2@h3/v1"
    assert job.model.base_url == "http://***@h/v1?api_key=***&v=1"  # the original stays masked
    # a secret a job's own config file holds is masked in what Hydra keeps of the job
    own = OmegaConf.create({"model": {"base_url": "http://dave:pw3@h4/v1"}})
    assert sweep_job_config(own).model.base_url == "http://dave:pw3@h4/v1"
    assert own.model.base_url == "http://***@h4/v1"


def test_a_job_without_the_sweeps_credentials_is_one_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from omegaconf import OmegaConf

    from mill.errors import ConfigError

    monkeypatch.delenv(SWEEP_SECRETS_ENV, raising=False)
    job = OmegaConf.create({"model": {"base_url": "http://***@h/v1"}})
    with pytest.raises(ConfigError, match=rf"model\.base_url=.*{SWEEP_SECRETS_ENV}") as info:
        sweep_job_config(job)
    assert "\n" not in str(info.value)


def test_two_urls_that_differ_only_in_credentials_are_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from omegaconf import OmegaConf

    from mill.errors import ConfigError

    monkeypatch.delenv(SWEEP_SECRETS_ENV, raising=False)
    cfg = OmegaConf.create(
        {"hydra": {"overrides": {"task": ["u=http://a:1@h/v1,http://b:2@h/v1"]}}}
    )
    with pytest.raises(ConfigError, match=r"differ only in their credentials") as info:
        hide_sweep_credentials(cfg)
    assert "1@" not in str(info.value) and "2@" not in str(info.value)
    assert SWEEP_SECRETS_ENV not in os.environ


def test_credentials_a_server_echoes_outside_urls_are_masked() -> None:
    """Issue 35, item 3: what a server echoes of the request (an Authorization header, a
    token alone, an api_key field or parameter, the key itself or its base64) is masked;
    settings and metrics that merely name a key or a token are kept."""
    import base64

    from mill.redact import register_url_secrets

    url = "http://echo-user:echo-pass-1234@127.0.0.1:1/v1?api_key=echo-query-key"
    register_url_secrets(url, "sk-echo-configured-key")
    basic = base64.b64encode(b"echo-user:echo-pass-1234").decode()
    echoed = [
        f"HTTP 401: denied: Authorization: Basic {basic}",
        f'{{"authorization": "Basic {basic}", "token": "{basic}"}}',
        f"token alone {basic.rstrip('=')}",
        "Authorization: Bearer sk-echo-configured-key",
        "the key sk-echo-configured-key, in base64 "
        + base64.b64encode(b"sk-echo-configured-key").decode(),
        '{"api_key": "echo-query-key", "X-Api-Key": "another-key-9"}',
        "GET /v1/models?api_key=echo-query-key&api-version=1",
        "password echo-pass-1234, url-quoted " + "echo-user%3Aecho-pass-1234",
        "Bearer some-other-bearer-token",
    ]
    for text in echoed:
        clean = redact_text(text)
        for secret in (
            basic,
            basic.rstrip("="),
            "echo-pass-1234",
            "sk-echo-configured-key",
            base64.b64encode(b"sk-echo-configured-key").decode().rstrip("="),
            "echo-query-key",
            "another-key-9",
            "some-other-bearer-token",
        ):
            assert secret not in clean, (text, clean)
        assert "***" in clean
    kept = [
        "acc_norm_token=0.25, acc_norm_token: 0.5",
        "set model.api_key_env=OPENAI_API_KEY",
        "Basic usage: max_tokens=16",
    ]
    assert [redact_text(t) for t in kept] == kept


def test_the_console_streams_mask_what_is_printed_and_are_restored(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """What ``mill`` prints, a traceback included, goes through :class:`RedactingStream`."""
    import sys

    from mill.redact import RedactingStream, redacted_console, register_secret

    register_secret("console-secret-3f9d")
    before = sys.stdout, sys.stderr
    with redacted_console():
        assert isinstance(sys.stderr, RedactingStream)
        assert sys.stderr.isatty() == before[1].isatty()  # everything else is the stream's
        print("loading http://bob:pw-5c1e2a@host/v1 with console-secret-3f9d")
        print("Traceback: Error('console-secret-3f9d')", file=sys.stderr)
    assert (sys.stdout, sys.stderr) == before
    out, err = capsys.readouterr()
    assert out == "loading http://***@host/v1 with ***\n"
    assert err == "Traceback: Error('***')\n"
