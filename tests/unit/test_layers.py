"""Dependencies point one way (errors <- bpe <- store <- models, runtime <- api, cli): every
module's imports, read with `ast` (lazy imports inside functions included), against the layers."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

SERVICE = Path(__file__).resolve().parents[2] / "service"
WEB_STACK = ("litestar", "uvicorn", "prometheus_client")
# build-time scripts inside the package (the C tables' generators): not imported by anything
BUILD_SCRIPTS = {
    SERVICE / "bpe" / "csrc" / name for name in ("gen_unicode_tables.py", "gen_normal_tables.py")
}


def module_name(path: Path) -> str:
    parts = path.relative_to(SERVICE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path) -> list[str]:
    """Every module `path` imports, absolute."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    return imports_in(path.read_text("utf-8"), package)


def imports_in(source: str, package: str) -> list[str]:
    """Every module `source` imports (relative imports resolved against `package`)."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = parts[: len(parts) - node.level + 1]
                stem = ".".join([*base, node.module] if node.module else base)
            else:
                stem = node.module or ""
            found.append(stem)
            # `from service import errors` imports the module service.errors
            found += [f"{stem}.{alias.name}" for alias in node.names if stem == "service"]
    return found


def modules(under: str = "") -> list[tuple[str, list[str]]]:
    root = SERVICE / under if under else SERVICE
    return [
        (module_name(path), sorted(set(imports_of(path))))
        for path in sorted(root.rglob("*.py"))
        if path not in BUILD_SCRIPTS
    ]


def within(name: str, *prefixes: str) -> bool:
    """`name` is one of `prefixes` or inside one; a trailing `*` names every module whose name
    begins so."""
    return any(
        name.startswith(p[:-1]) if p.endswith("*") else name == p or name.startswith(p + ".")
        for p in prefixes
    )


def offences(layer: str, forbidden: tuple[str, ...]) -> list[str]:
    """What the modules of `layer` (a package or a module) import from `forbidden`."""
    return [
        f"{mod} imports {imp}"
        for mod, imps in modules()
        for imp in imps
        if within(mod, layer) and within(imp, *forbidden)
    ]


def test_the_reader_sees_every_kind_of_import() -> None:
    """The rules below are only as good as the reading: absolute, from-, relative and lazy."""
    source = (
        "import litestar.app\nfrom service import cli\nfrom . import manifest\n"
        "def f():\n    from ..settings import Settings\n"
    )
    found = set(imports_in(source, "service.store"))
    assert {"litestar.app", "service.cli", "service.store", "service.settings"} <= found
    assert within("service.cli.store", "service.cli") and within("service.clix", "service.cli*")
    assert not within("service.storex", "service.store")


def test_bpe_imports_only_the_standard_library_regex_and_errors() -> None:
    allowed = ("service.errors", "service.bpe", "regex", "__future__")
    stdlib = sys.stdlib_module_names
    bad = [
        f"{mod} imports {imp}"
        for mod, imps in modules("bpe")
        for imp in imps
        if not within(imp, *allowed) and imp.split(".")[0] not in stdlib
    ]
    assert not bad


@pytest.mark.parametrize(
    ("layer", "forbidden"),
    [
        (
            "service.store",
            (
                "service.settings",
                "service.runtime",
                "service.api",
                "service.cli",
                "service.models",
                *WEB_STACK,
            ),
        ),
        (
            "service.models",
            ("service.settings", "service.runtime", "service.api", "service.cli", *WEB_STACK),
        ),
        ("service.runtime", ("service.api", "service.cli", *WEB_STACK)),
        ("service.encoding", ("service.api", "service.cli", *WEB_STACK)),
    ],
)
def test_lower_layers_know_nothing_of_the_ones_above(
    layer: str, forbidden: tuple[str, ...]
) -> None:
    assert not offences(layer, forbidden)


def test_only_api_imports_the_web_stack() -> None:
    bad = [
        f"{mod} imports {imp}"
        for mod, imps in modules()
        for imp in imps
        if within(imp, *WEB_STACK) and not within(mod, "service.api")
    ]
    assert not bad


def test_nothing_below_the_command_line_imports_it() -> None:
    def is_cli(name: str) -> bool:
        return within(name, "service.cli", "service.__main__")

    bad = [
        f"{mod} imports {imp}"
        for mod, imps in modules()
        for imp in imps
        if is_cli(imp) and not is_cli(mod)
    ]
    assert not bad


def test_every_layer_is_read() -> None:
    """The rules above would pass on an empty tree: they must see the packages they guard."""
    names = {mod for mod, _ in modules()}
    for package in ("service.bpe", "service.store", "service.models", "service.api"):
        assert any(within(name, package) and name != package for name in names), package
