"""Build configuration that pyproject.toml cannot express: the bundled store ships inside the
package as `service.bundled_store` (mapped from the top-level `tokenizers_store/`), and the web
assets as package data."""

from setuptools import find_packages, setup

setup(
    packages=[*find_packages(include=["service", "service.*"]), "service.bundled_store"],
    package_dir={"service.bundled_store": "tokenizers_store"},
    package_data={
        "service.bundled_store": ["manifest.json", "*/*.json"],
        "service.api": ["assets/*/*"],  # web assets: the vendored Swagger UI, the playground
    },
)
