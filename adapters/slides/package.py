"""Saving a python-pptx presentation so that the same content gives the same bytes.

python-pptx stamps each zip entry with the time of saving; the entries are written
again here in the same order with one fixed time, and the document's dates are set
to that time too, so a deck version renders to identical bytes wherever and whenever.
"""

from __future__ import annotations

import io
import zipfile
from datetime import datetime

from pptx.presentation import Presentation

FIXED_TIME = datetime(2000, 1, 1)
_ZIP_TIME = FIXED_TIME.timetuple()[:6]


def saved(prs: Presentation, *, title: str, revision: int = 1) -> bytes:
    """The presentation's PPTX bytes, with fixed dates and zip timestamps."""
    props = prs.core_properties
    props.title = title
    props.author = props.last_modified_by = "TokenDance"
    props.comments = ""
    props.revision = revision
    props.created = props.modified = props.last_printed = FIXED_TIME
    buffer = io.BytesIO()
    prs.save(buffer)
    return fixed_zip(buffer.getvalue())


def fixed_zip(data: bytes) -> bytes:
    """`data` (a zip) rewritten with every entry's time fixed, in the same order."""
    out = io.BytesIO()
    with (
        zipfile.ZipFile(io.BytesIO(data)) as source,
        zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target,
    ):
        for entry in source.infolist():
            info = zipfile.ZipInfo(entry.filename, date_time=_ZIP_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.create_system = 0  # the same bytes on every platform
            target.writestr(info, source.read(entry))
    return out.getvalue()
