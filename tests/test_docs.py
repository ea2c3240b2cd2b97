"""The documentation: README stays a front page, and the MkDocs site builds in strict mode.

A broken link or anchor between pages, a page left out of the navigation, or an API entry
naming something that no longer exists fails ``mkdocs build --strict`` and so this test; a
public name (``pytest_rnncov._EXPORTS``) without an API entry fails it too. The build needs
the ``docs`` extra, which the ``test`` extra includes.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"


def readme_section(title: str) -> str:
    """The text of README's ``## title`` section (up to the next ``## `` heading)."""
    text = README.read_text(encoding="utf-8")
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    assert match, f"README has no '## {title}' section"
    return match.group(1)


def ci_command() -> str:
    """The command .ci/run copies from README's "Set up" (command 2), as .ci/run holds it."""
    lines = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    marker = next(i for i, line in enumerate(lines) if "README" in line and "verbatim" in line)
    return lines[marker + 1]


def test_readme_is_a_front_page():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 150, f"README.md has {len(lines)} lines; move detail into docs/"


def test_readme_set_up_holds_both_commands_verbatim():
    setup = readme_section("Set up").splitlines()
    command_2 = ci_command()
    assert command_2.startswith("python3 -m venv .venv && ")
    assert command_2 in setup, "README's command 2 no longer matches .ci/run: change both"
    command_1 = (
        'python3 -m venv .venv && .venv/bin/pip install -q -e ".[examples]" && '
        ".venv/bin/python -m pytest examples/mnist --rnn-coverage=0.6"
    )
    assert command_1 in setup
    assert setup.index(command_1) < setup.index(command_2)


def test_readme_links_point_at_existing_files_and_headings():
    text = README.read_text(encoding="utf-8")
    links = re.findall(r"\]\(([^)\s]+)\)", text)
    assert links
    for link in links:
        if re.match(r"[a-z]+:", link):
            continue
        path, _, anchor = link.partition("#")
        target = ROOT / path if path else README
        assert target.exists(), f"README links to missing {link}"
        if anchor and target.suffix == ".md":
            slugs = {
                slug(h) for h in re.findall(r"^#+ (.+)$", target.read_text(encoding="utf-8"), re.M)
            }
            assert anchor in slugs, f"README links to missing heading {link}"


def slug(heading: str) -> str:
    """The anchor Python-Markdown's toc (and GitHub) gives a heading, for plain headings."""
    text = re.sub(r"[^\w\s-]", "", heading.strip().lower())
    return re.sub(r"[\s]+", "-", text)


def exported_names() -> dict[str, str]:
    """pytest_rnncov's public names and the modules defining them (``_EXPORTS``), read
    without importing the package."""
    tree = ast.parse((ROOT / "pytest_rnncov" / "__init__.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "_EXPORTS":
            return ast.literal_eval(node.value)
    raise AssertionError("pytest_rnncov/__init__.py has no _EXPORTS")


def test_mkdocs_site_builds_strict(tmp_path):
    """Every warning (a broken link or anchor, an unknown API name) fails the build."""
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-5000:] + done.stderr[-5000:]
    assert (tmp_path / "index.html").exists()
    api = (tmp_path / "api" / "index.html").read_text(encoding="utf-8")
    undocumented = [
        f"{module}.{name}"
        for name, module in exported_names().items()
        if f'id="pytest_rnncov.{module}.{name}"' not in api
    ]
    assert not undocumented, f"docs/api.md lacks a '::: pytest_rnncov.X' entry for {undocumented}"
