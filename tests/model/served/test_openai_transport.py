"""A served model that changes mid-run (another ``model`` or ``system_fingerprint`` in a
response than in the run's first) stops the run with one line naming both."""

from __future__ import annotations

import pytest

from mill.errors import ModelError
from mill.model.served.openai_transport import same_server_model

URL = "http://127.0.0.1:8080/v1"


def test_the_first_response_sets_what_every_later_one_must_name() -> None:
    first = same_server_model(None, {"model": "judge.gguf", "system_fingerprint": "b1"}, "r0", URL)
    assert first == {"model": "judge.gguf", "system_fingerprint": "b1"}
    same = {"model": "judge.gguf", "system_fingerprint": "b1", "choices": []}
    assert same_server_model(first, same, "r1", URL) == first
    # a server that names neither is never refused
    assert same_server_model(same_server_model(None, {}, "r0", URL), {}, "r1", URL) == {}


@pytest.mark.parametrize(
    ("body", "named"),
    [
        (
            {"model": "other.gguf", "system_fingerprint": "b1"},
            "first model='judge.gguf', now model='other.gguf'",
        ),
        (
            {"model": "judge.gguf", "system_fingerprint": "b2"},
            "system_fingerprint='b1', now system_fingerprint='b2'",
        ),
        ({"model": "judge.gguf"}, "now system_fingerprint=None"),
    ],
)
def test_a_change_mid_run_is_one_line_naming_both(body, named) -> None:
    first = {"model": "judge.gguf", "system_fingerprint": "b1"}
    with pytest.raises(ModelError, match="changed mid-run") as err:
        same_server_model(first, body, "judged/3/judge/judge_score/t1/0", URL)
    assert named in str(err.value) and "\n" not in str(err.value)
    assert str(err.value).startswith("judged/3/judge/judge_score/t1/0: the server at " + URL)
