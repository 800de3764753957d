"""The README's two set-up commands: each starts from a virtual environment (pip refuses to
install outside one on Debian and Ubuntu, and there `python` is `python3`); the test
command installs what CI installs and runs the pytest CI runs (.ci/run, system-wide); the site's
home page shows the same main command."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
VENV = ["python3", "-m", "venv", ".venv", "&&", ".", ".venv/bin/activate", "&&"]


def setup_commands(text: str) -> list[list[str]]:
    """The commands of the first bash block, as words, without their comments."""
    block = re.search(r"```bash\n(.*?)```", text, re.S)
    assert block, "no bash block"
    return [shlex.split(line, comments=True) for line in block.group(1).splitlines()]


def install_and_rest(words: list[str]) -> tuple[str, list[str]]:
    """After the venv: `pip install -e SPEC && REST`; the SPEC and the REST."""
    assert words[: len(VENV)] == VENV, words
    words = words[len(VENV) :]
    assert words[:3] == ["pip", "install", "-e"] and words[4] == "&&", words
    return words[3], words[5:]


def test_both_commands_start_from_a_venv_and_the_tests_are_what_ci_runs():
    main, tests = setup_commands((ROOT / "README.md").read_text(encoding="utf-8"))
    spec, rest = install_and_rest(main)
    assert spec == ".[test,fast]" and rest == ["python", "script_trialrun.py"]
    spec, rest = install_and_rest(tests)
    assert rest == ["python", "-m", "pytest"]
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert f'python -m pip install -q -e "{spec}"\n' in ci
    ci_pytest = [line.split() for line in ci.splitlines() if line.startswith("python -m pytest")]
    assert ci_pytest == [["python", "-m", "pytest", "-q"]]  # the same run, quieter
    assert "export GAMEGYM_REQUIRE_BROWSER=1" in ci


def test_the_home_page_shows_the_readmes_main_command():
    (main, *_) = setup_commands((ROOT / "README.md").read_text(encoding="utf-8"))
    (home,) = setup_commands((ROOT / "docs" / "index.md").read_text(encoding="utf-8"))
    assert home == main
