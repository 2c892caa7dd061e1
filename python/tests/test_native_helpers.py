"""The helpers the Python package takes from the Rust library instead of
writing them again: the wording of a failed call (shared with ``agentsim mcp``)
and the writer of every output file."""

import os

import pytest

from agentsim import _native
from agentsim.loop import explain


def test_a_transient_error_with_retry_after_says_how_long_to_wait():
    out = explain({"type": "http", "status": 503, "message": "unavailable", "retry_after_ms": 1500})
    assert list(out) == ["status", "retry_after_ms", "message", "retryable", "explanation"]
    assert out["retryable"] is True
    assert out["explanation"] == (
        "HTTP 503 unavailable: temporary, retryable; wait at least 1500 ms (1.5 s, the server's "
        "Retry-After) before repeating the call."
    )


def test_a_missing_record_is_not_retryable():
    out = explain({"type": "http", "status": 404, "message": "no such order", "retry_after_ms": None})
    assert out["retryable"] is False
    assert "check its arguments" in out["explanation"]


def test_a_timeout_and_a_garbled_body_keep_their_own_words():
    timeout = explain({"type": "timeout", "status": 504})
    assert timeout["message"] == "the call timed out; it may still have taken effect"
    garbled = explain({"type": "unparseable", "status": 200, "text": '{"id": 1'})
    assert list(garbled) == ["status", "retry_after_ms", "message", "retryable", "body", "explanation"]
    assert garbled["body"] == '{"id": 1'


def test_an_object_that_is_not_a_protocol_error_is_refused():
    with pytest.raises(ValueError, match="not a protocol error object"):
        explain({"type": "weather"})


def test_outputs_are_written_whole_and_never_over_a_directory(tmp_path):
    target = tmp_path / "incident.ron"
    _native.write_atomic(target, "first")
    _native.write_atomic(str(target), "second")
    assert target.read_text() == "second"
    assert [p.name for p in tmp_path.iterdir()] == ["incident.ron"]
    folder = tmp_path / "folder"
    folder.mkdir()
    with pytest.raises(OSError, match="folder"):
        _native.write_atomic(folder, "x")
    assert os.listdir(folder) == []
