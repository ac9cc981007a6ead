"""A PPTX package checked the way PowerPoint reads it, before it is opened.

PowerPoint refuses ("needs to be repaired") a package with a part named twice, a
relationship to a part that is not there, or a part without a content type; python-pptx
opens some such files without complaint, so these are checked on the zip itself.
"""

from __future__ import annotations

import io
import posixpath
import zipfile
from xml.etree import ElementTree

from pptx import Presentation

CONTENT_TYPES = "[Content_Types].xml"
_CT = "{http://schemas.openxmlformats.org/package/2006/content-types}"
_RELS = "{http://schemas.openxmlformats.org/package/2006/relationships}"


def check_package(data: bytes) -> None:
    """Raise AssertionError saying what is wrong if `data` is not a sound PPTX package."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile as e:
        raise AssertionError(f"not a zip file: {e}") from None
    with archive:
        names = archive.namelist()
        twice = sorted({n for n in names if names.count(n) > 1})
        assert not twice, f"parts named more than once: {twice}"
        assert CONTENT_TYPES in names, f"no {CONTENT_TYPES}"
        _check_content_types(archive, names)
        for name in names:
            if name.endswith(".rels"):
                _check_relationships(archive, name, set(names))
    try:
        Presentation(io.BytesIO(data))
    except Exception as e:  # whatever python-pptx raises, the package is unusable
        raise AssertionError(f"python-pptx cannot open it: {type(e).__name__}: {e}") from None


def _check_content_types(archive: zipfile.ZipFile, names: list[str]) -> None:
    types = ElementTree.fromstring(archive.read(CONTENT_TYPES))
    defaults = {d.get("Extension", "").lower() for d in types.iter(f"{_CT}Default")}
    overrides = {o.get("PartName", "").lower() for o in types.iter(f"{_CT}Override")}
    untyped = [
        name
        for name in names
        if name != CONTENT_TYPES
        and not name.endswith("/")
        and f"/{name}".lower() not in overrides
        and posixpath.basename(name).rpartition(".")[2].lower() not in defaults
    ]
    assert not untyped, f"parts without a content type: {untyped}"
    missing = sorted(o for o in overrides if o.lstrip("/") not in {n.lower() for n in names})
    assert not missing, f"content types given for parts that are not there: {missing}"


def _check_relationships(archive: zipfile.ZipFile, rels: str, names: set[str]) -> None:
    """Each internal target of `rels` is a part of the package; ids are unique."""
    folder, file = posixpath.split(rels)
    assert posixpath.basename(folder) == "_rels", f"{rels} is not in a _rels folder"
    source = posixpath.join(posixpath.dirname(folder), file.removesuffix(".rels"))
    if source and source not in names:
        raise AssertionError(f"{rels} belongs to {source}, which is not in the package")
    base = posixpath.dirname(source)
    ids: list[str] = []
    for rel in ElementTree.fromstring(archive.read(rels)).iter(f"{_RELS}Relationship"):
        ids.append(rel.get("Id", ""))
        if rel.get("TargetMode") == "External":
            continue
        target = rel.get("Target", "")
        path = target[1:] if target.startswith("/") else posixpath.join(base, target)
        resolved = posixpath.normpath(path)
        assert resolved in names, (
            f"{rels}: relationship {rel.get('Id')} points to {target} ({resolved}), "
            "which is not in the package"
        )
    twice = sorted({i for i in ids if ids.count(i) > 1})
    assert not twice, f"{rels}: relationship ids used more than once: {twice}"
