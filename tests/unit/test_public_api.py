"""The public library API is the names the public packages list in `__all__`; README's Python
teaches only those packages."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PUBLIC = ("service", "service.bpe", "service.store", "service.models", "service.errors")


@pytest.mark.parametrize("package", PUBLIC[:4])
def test_every_public_name_resolves(package: str) -> None:
    module = importlib.import_module(package)
    names = module.__all__
    assert names == sorted(names) and len(set(names)) == len(names)
    for name in names:
        assert getattr(module, name) is not None, f"{package}.{name}"


def test_readme_python_imports_only_the_public_packages() -> None:
    readme = (ROOT / "README.md").read_text("utf-8")
    blocks = re.findall(r"```python\n(.*?)```", readme, re.DOTALL)
    assert blocks
    used = set()
    for block in blocks:
        for node in ast.walk(ast.parse(block)):
            if isinstance(node, ast.ImportFrom) and node.module:
                used.add(node.module)
            elif isinstance(node, ast.Import):
                used.update(alias.name for alias in node.names)
    ours = {m for m in used if m == "service" or m.startswith("service.")}
    assert ours, "README shows no library import"
    assert ours <= set(PUBLIC), ours - set(PUBLIC)
