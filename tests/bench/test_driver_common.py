"""scripts/driver_common.py: the scripts start ``mill`` as the tests do."""

from __future__ import annotations

import sys
from pathlib import Path

from tests.helpers import mill_command

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
from driver_common import mill_cmd  # noqa: E402


def test_scripts_and_tests_locate_the_same_mill() -> None:
    command = mill_command()
    assert mill_cmd(["task=arc_easy"]) == [*command, "task=arc_easy"]
    # the console script beside this interpreter, or this interpreter's ``-m mill``
    assert Path(command[0]).is_file() and Path(command[0]).parent == Path(sys.executable).parent
