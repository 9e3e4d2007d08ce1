"""The type stub `_native.pyi` names exactly what the built extension holds: its constants with
their types, its functions, and `Engine`'s methods and properties. mypy trusts the stub, so a name
the extension lacks or a member the stub forgets is a type check that lies."""

from __future__ import annotations

import ast
import builtins
import inspect
from pathlib import Path
from types import ModuleType

import pytest

from service.bpe.engine import native

STUB = Path(native.__file__).resolve().parents[1] / "_native.pyi"


@pytest.fixture(scope="module")
def extension() -> ModuleType:
    module = native._native
    if module is None:
        pytest.skip("the C extension is not built: the stub has nothing to be checked against")
    return module


def stub_tree() -> ast.Module:
    return ast.parse(STUB.read_text(encoding="utf-8"))


def public(names: object) -> set[str]:
    return {n for n in dir(names) if not n.startswith("_")}


def test_the_stub_names_every_public_name_of_the_extension_and_no_other(
    extension: ModuleType,
) -> None:
    declared = set()
    for node in stub_tree().body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            declared.add(node.target.id)
        elif isinstance(node, ast.FunctionDef | ast.ClassDef):
            declared.add(node.name)
    assert declared == public(extension)


def test_constants_have_the_types_the_stub_gives(extension: ModuleType) -> None:
    for node in stub_tree().body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            assert isinstance(node.annotation, ast.Name)
            kind = getattr(builtins, node.annotation.id)
            assert isinstance(getattr(extension, node.target.id), kind), node.target.id


def test_functions_are_callables_and_engine_members_are_of_their_kind(
    extension: ModuleType,
) -> None:
    for node in stub_tree().body:
        if isinstance(node, ast.FunctionDef):
            assert callable(getattr(extension, node.name)), node.name
        if isinstance(node, ast.ClassDef):
            cls = getattr(extension, node.name)
            members = {m.name: m for m in node.body if isinstance(m, ast.FunctionDef)}
            assert set(members) - {"__init__"} == public(cls), node.name
            for name, member in members.items():
                if name == "__init__":
                    continue
                is_property = any(
                    isinstance(d, ast.Name) and d.id == "property" for d in member.decorator_list
                )
                attribute = inspect.getattr_static(cls, name)
                assert is_property == (not callable(attribute)), f"{node.name}.{name}"
