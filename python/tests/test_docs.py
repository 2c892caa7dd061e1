"""The Python commands the docs show (`$ python -c ...` in a `console` block of
README.md and docs/python.md) print what the docs say, with the installed package.

The Rust transcript test (tests/transcripts.rs) runs every other shown command;
it leaves these blocks to this test, which has the package installed.
"""

import re
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


def python_blocks(markdown):
    return re.findall(r"```python\n(.*?)```", markdown, re.S)


def test_the_first_agent_of_docs_python_meets_every_customer_of_1000_seeds(tmp_path, monkeypatch, capsys):
    # The page's first example is the one a user builds on: run as shown (1,000
    # seeds, concurrency 8, out/py under the working directory), it must not
    # crash on any customer, the vague one who names no order included.
    first = python_blocks((ROOT / "docs" / "python.md").read_text())[0]
    assert "agentsim.evaluate(agent" in first and "range(1000)" in first, first
    monkeypatch.chdir(tmp_path)
    scope = {}
    exec(compile(first, "docs/python.md (first example)", "exec"), scope)
    result = scope["result"]
    assert result.summary["trajectories"] == 1000
    errors = [row["seed"] for row in result.rows if row["outcome"] == "agent_error"]
    assert not errors, f"the first agent of docs/python.md crashes on {len(errors)} of 1000 seeds: {errors[:10]}"
    assert all(row["tool_calls"] >= 1 for row in result.rows), "every customer gets a lookup"
    assert (tmp_path / "out" / "py" / "summary.json").exists()
    assert "'rate': " in capsys.readouterr().out


def test_the_env_example_of_docs_python_prints_what_it_shows(capsys):
    # The comment after `print(obs["text"])` is the printed text, line for line.
    [block] = [b for b in python_blocks((ROOT / "docs" / "python.md").read_text()) if "agentsim.Env(" in b]
    lines = block.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith('print(obs["text"])'))
    shown = [lines[at].split("# ", 1)[1]]
    for line in lines[at + 1:]:
        if not line.strip().startswith("# "):
            break
        shown.append(line.strip()[2:])
    exec(compile(block, "docs/python.md (Env example)", "exec"), {})
    assert capsys.readouterr().out.splitlines() == shown


def test_the_install_docs_say_what_pip_install_takes_and_how_to_get_gymnasium_and_the_command():
    # A newcomer's `pip install .` runs minutes with no output but "still
    # running"; gymnasium is the `gym` extra; the command comes from cargo.
    from importlib.metadata import metadata

    meta = metadata("agentsim")
    assert "gym" in (meta.get_all("Provides-Extra") or [])
    requires = [r.replace('"', "'") for r in meta.get_all("Requires-Dist") or []]
    assert any(r.startswith("gymnasium") and "extra == 'gym'" in r for r in requires), requires
    for doc in ("README.md", "docs/python.md"):
        text = " ".join((ROOT / doc).read_text().split())
        assert "pip install '.[gym]'" in text, doc
        assert "still running..." in text and "minutes of CPU" in text, doc
        assert "cargo install --path ." in text, doc
