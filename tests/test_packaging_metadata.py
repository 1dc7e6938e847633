"""pyproject lists packages explicitly (resources/ is mapped in); none may be forgotten."""

from pathlib import Path

import tomllib

REPO = Path(__file__).resolve().parents[1]


def test_every_package_folder_is_listed() -> None:
    config = tomllib.loads((REPO / "pyproject.toml").read_text())
    listed = set(config["tool"]["setuptools"]["packages"])
    found = {
        ".".join(p.parent.relative_to(REPO).parts)
        for p in (REPO / "edgestudio").rglob("__init__.py")
    }
    assert found - listed == set(), f"add to [tool.setuptools] packages: {found - listed}"
    assert "edgestudio.resources" in listed


def test_resources_resolve_from_the_package() -> None:
    from edgestudio import resources

    assert resources.SAMPLE_MODEL.is_file()
    assert resources.ICON_SVG.is_file()
