"""A generations file is read whole, so it is read with a bound: a symlink to a device
(``/dev/zero``), a folder where a file is expected, or a file past the bound is one error
line and exit 2, never a read until memory runs out; a pipe (``-g <(...)``) is still read."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from codereasoner.files import InputTooLarge, read_text_bounded
from tests.commands import invoke, one_error_line

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def test_a_generations_file_that_is_a_device_is_one_line(tmp_path: Path) -> None:
    zero = tmp_path / "zero.jsonl"
    zero.symlink_to("/dev/zero")
    done = invoke("score", "--bench", "cruxeval-o", "-g", zero, "--data-dir", FIXTURES)
    assert done.returncode == 2
    assert "not a file (a device or a folder)" in one_error_line(done.stderr)


def test_reading_stops_at_the_bound_and_a_pipe_is_read(tmp_path: Path) -> None:
    big = tmp_path / "big.jsonl"
    big.write_bytes(b"x" * 2048)
    with pytest.raises(InputTooLarge, match="larger than"):
        read_text_bounded(big, limit=1024)
    assert read_text_bounded(big, limit=4096) == "x" * 2048
    reading, writing = os.pipe()
    os.write(writing, b'{"a": 1}\n')
    os.close(writing)
    assert read_text_bounded(Path(f"/dev/fd/{reading}")) == '{"a": 1}\n'
    os.close(reading)
