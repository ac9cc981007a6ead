"""The fonts of a rendered PDF, all shipped with ReportLab: nothing to install or fetch.

Body text is Bitstream Vera (ReportLab's bundled TrueType, embedded as a subset); a
character Vera lacks goes to an Adobe CID font, which PDF readers supply: Hangul to
HYSMyeongJo-Medium, everything else (Chinese, Japanese, Greek, Cyrillic, ...) to
STSong-Light. Text is marked up run by run (`runs`), so one line can mix them.
"""

from __future__ import annotations

import re
import threading
from pathlib import Path
from xml.sax.saxutils import escape

import reportlab
from reportlab.pdfbase import pdfmetrics
from reportlab.pdfbase.cidfonts import UnicodeCIDFont
from reportlab.pdfbase.ttfonts import TTFont

BODY = "TokenDanceVera"
BODY_BOLD = f"{BODY}-Bold"
MONO = "Courier"  # a standard PDF font: cp1252 only, the rest goes to the CID fonts
HAN = "STSong-Light"
HANGUL = "HYSMyeongJo-Medium"

_VERA = {
    "": "Vera.ttf",
    "-Bold": "VeraBd.ttf",
    "-Italic": "VeraIt.ttf",
    "-BoldItalic": "VeraBI.ttf",
}
_HANGUL = re.compile(r"[\u1100-\u11ff\u3130-\u318f\ua960-\ua97f\uac00-\ud7af\ud7b0-\ud7ff]")
# C0 controls but tab and newline, and what UCS-2 cannot carry (the CID fonts' encoding).
_UNPRINTABLE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\U00010000-\U0010ffff]")

_registered = threading.Lock()
_body_chars: frozenset[int] = frozenset()


def register() -> None:
    """Register the fonts with ReportLab once per process (its registry is global)."""
    global _body_chars
    with _registered:
        if _body_chars:
            return
        folder = Path(reportlab.__file__).parent / "fonts"
        for suffix, file in _VERA.items():
            pdfmetrics.registerFont(TTFont(BODY + suffix, str(folder / file)))
        pdfmetrics.registerFontFamily(
            BODY, normal=BODY, bold=BODY_BOLD, italic=f"{BODY}-Italic",
            boldItalic=f"{BODY}-BoldItalic",
        )  # fmt: skip
        for cid in (HAN, HANGUL):
            pdfmetrics.registerFont(UnicodeCIDFont(cid))
            # No bold or italic faces: <b> and <i> keep the same face.
            pdfmetrics.registerFontFamily(cid, normal=cid, bold=cid, italic=cid, boldItalic=cid)
        face = pdfmetrics.getFont(BODY).face  # type: ignore[attr-defined]
        _body_chars = frozenset(face.charToGlyph)


def printable(text: str) -> str:
    """The text without control characters or characters beyond the BMP (emoji)."""
    return _UNPRINTABLE.sub("", text)


def runs(text: str, *, mono: bool = False) -> str:
    """Paragraph markup for plain text: escaped, each run in a font that has its glyphs."""
    out: list[str] = []
    current: str | None = None  # None: the paragraph's own font
    run: list[str] = []
    for ch in printable(text):
        font = current if ch.isspace() else _font_of(ch, mono)
        if font != current and run:
            out.append(_wrap("".join(run), current))
            run = []
        current = font
        run.append(ch)
    if run:
        out.append(_wrap("".join(run), current))
    return "".join(out)


def _font_of(ch: str, mono: bool) -> str | None:
    if mono:
        try:
            ch.encode("cp1252")
            return None
        except UnicodeEncodeError:
            pass
    elif ord(ch) in _body_chars:
        return None
    return HANGUL if _HANGUL.match(ch) else HAN


def _wrap(text: str, font: str | None) -> str:
    escaped = escape(text)
    return escaped if font is None else f'<font name="{font}">{escaped}</font>'
