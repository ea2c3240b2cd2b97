"""A griffe extension for the API pages: docstrings use Sphinx roles, Markdown shows code.

``:class:`~pytest_rnncov.RNNModel``` becomes ```RNNModel``` (the ``~`` form keeps the last
name, as Sphinx does) and ``:func:`write_reports``` becomes ```write_reports```; the
docstrings themselves stay as they are. Loaded by mkdocs.yml (mkdocstrings' python handler).
"""

from __future__ import annotations

import re
from typing import Any

import griffe

ROLE = re.compile(r":(?:py:)?(?:class|func|meth|attr|mod|data|exc|obj):`(~?)([^`]+)`")


def _plain(match: re.Match[str]) -> str:
    short, target = match.groups()
    return f"``{target.rsplit('.', 1)[-1] if short else target}``"


class SphinxRoles(griffe.Extension):
    """Rewrite Sphinx cross-reference roles in every docstring of the loaded package."""

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        seen: set[int] = set()
        todo: list[Any] = [pkg]
        while todo:
            obj = todo.pop()
            if id(obj) in seen or obj.is_alias:
                continue
            seen.add(id(obj))
            if obj.docstring is not None:
                obj.docstring.value = ROLE.sub(_plain, obj.docstring.value)
            todo.extend(obj.members.values())

    # older griffe releases call this hook on_package_loaded (newer ones never call that)
    on_package_loaded = on_package
