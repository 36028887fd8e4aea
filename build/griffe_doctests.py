"""A griffe extension for the Python API page (docs/api.md, mkdocs.yml): the package's docstrings are written for help()
and doctest, so their ``>>>`` examples become fenced Python sessions and their Sphinx roles inline code before
mkdocstrings renders them as Markdown (where ``>>>`` would read as nested quotes)."""
from __future__ import annotations

import re

import griffe

ROLE = re.compile(r":(?:func|class|mod|meth|attr|data|exc):`~?([^`]+)`")


def fence_examples(text: str) -> str:
    """``text`` with each doctest run (its ``>>>`` / ``...`` lines and the output up to a blank line) fenced as
    a ``pycon`` block, and each Sphinx role as inline code."""
    out, session = [], False
    for line in ROLE.sub(r"`\1`", text).replace("``", "`").splitlines():
        starts = line.lstrip().startswith(">>>")
        if starts and not session:
            out.append("```pycon")
            session = True
        elif session and not line.strip():
            out.append("```")
            session = False
        out.append(line)
    if session:
        out.append("```")
    return "\n".join(out)


class DoctestFences(griffe.Extension):
    def on_object(self, *, obj: griffe.Object, **kwargs) -> None:
        if obj.docstring is not None:
            obj.docstring.value = fence_examples(obj.docstring.value)
