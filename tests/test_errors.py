"""The library's errors stay free of the CLI toolkit: importing them (as the signal set-up does first) loads no
click, and the CLI still turns each into one escaped line and its exit code."""

from __future__ import annotations

import subprocess
import sys

from click.testing import CliRunner

from distiller.cli import cli


def test_the_stop_flag_and_the_errors_import_without_click():
    code = "import sys, distiller.stop, distiller.errors; print('click' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


def test_a_library_error_is_one_escaped_line_with_its_exit_code(tmp_path):
    result = CliRunner().invoke(cli, ["batches", "retry", "bad\x1b[31mid"])
    assert result.exit_code == 2  # BadBatchId is a usage error
    assert result.stderr.count("\n") == 1 and "\x1b" not in result.stderr and "\\x1b" in result.stderr
    assert result.stderr.startswith("Error: not a batch id")
