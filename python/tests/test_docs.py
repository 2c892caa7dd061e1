"""The Python commands the docs show (`$ python -c ...` in a `console` block of
README.md and docs/python.md) print what the docs say, with the installed package.

The Rust transcript test (tests/transcripts.rs) runs every other shown command;
it leaves these blocks to this test, which has the package installed.
"""

import subprocess
import sys

import pytest

from conftest import ROOT

DOCS = ["README.md", "docs/python.md"]


def python_commands(markdown):
    """(line, code, expected output lines) of each `$ python -c "..."` shown."""
    found = []
    lines = markdown.splitlines()
    in_console = False
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.strip() == "```console":
            in_console = True
        elif line.strip() == "```":
            in_console = False
        elif in_console and line.startswith('$ python -c "'):
            code = line[len('$ python -c "') :].rsplit('"', 1)[0]
            expected = []
            j = i + 1
            while j < len(lines) and not lines[j].startswith("$ ") and lines[j].strip() != "```":
                expected.append(lines[j].rstrip())
                j += 1
            found.append((i + 1, code, expected))
        i += 1
    return found


CASES = [(doc, *case) for doc in DOCS for case in python_commands((ROOT / doc).read_text())]


def test_the_docs_show_python_commands():
    assert len(CASES) >= 2, "README.md and docs/python.md each show a `python -c` command"


@pytest.mark.parametrize("doc,line,code,expected", CASES, ids=[f"{c[0]}:{c[1]}" for c in CASES])
def test_a_shown_python_command_prints_what_the_doc_shows(doc, line, code, expected, tmp_path):
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"{doc}:{line}: {done.stderr}"
    printed = [l.rstrip() for l in done.stdout.splitlines()]
    assert printed == expected, f"{doc}:{line}: shown {expected}, printed {printed}"
