"""Slide decks to PDF through LibreOffice in headless mode, and PDF pages to PNGs.

`Office.to_pdf` runs one `soffice --convert-to pdf` process per deck, in its own
process group so that a timeout or a cancellation kills LibreOffice with all its
children. `pdf_page_images` renders the pages with PDFium; it is blocking, so callers
run it in a thread.

What soffice does with input that is not a deck: random bytes, plain text or a zip
that is no PPTX make it print "Error: source file could not be loaded" and exit 0
without writing a PDF, which `to_pdf` reports as `ConversionFailed`. An empty file it
exports as one blank page, so `to_pdf` refuses empty input before starting it.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import os
import shutil
import signal
import tempfile
import threading
import weakref
from pathlib import Path

import pypdfium2 as pdfium

NOT_INSTALLED = "LibreOffice (soffice) is not installed: apt-get install libreoffice-impress"

# PDFium may not be called from two threads at once; callers render in threads.
_PDFIUM = threading.Lock()


class OfficeUnavailable(Exception):
    """LibreOffice cannot run here; `reason` says why and how to fix it."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class ConversionFailed(Exception):
    """soffice failed, timed out or wrote no PDF, or a PDF could not be read."""


class Office:
    """LibreOffice run headless, one process per conversion, `concurrency` at most at once.

    Profiles: each concurrency slot keeps one LibreOffice user profile, created by the
    first conversion in that slot under a temp dir this instance owns (removed when the
    instance is collected or the interpreter exits). Reusing it saves making a profile
    each time: on 2 CPUs, a 20-slide deck took 2.14 s with the slot's profile against
    2.39 s with a new one (medians of 8 alternated runs, `python -m bench.slide_previews`),
    3 slides 1.82 s against 2.13 s. A slot runs one soffice at a time, so no two share a
    profile; when soffice fails, times out or is cancelled the slot's profile is deleted,
    so one left half-written is never reused.
    """

    def __init__(
        self, binary: str | None = None, *, timeout: float = 120.0, concurrency: int = 1
    ) -> None:
        if concurrency < 1:
            raise ValueError(f"concurrency must be at least 1, not {concurrency}")
        self.binary = binary or shutil.which("soffice") or shutil.which("libreoffice")
        self.timeout = timeout
        self._reason = _why_unavailable(self.binary)
        self._root: Path | None = None
        self._slots: asyncio.Queue[int] = asyncio.Queue()
        for slot in range(concurrency):
            self._slots.put_nowait(slot)

    def unavailable(self) -> str | None:
        """Why this instance cannot convert (LibreOffice missing), or None if it can."""
        return self._reason

    async def to_pdf(self, pptx: bytes) -> bytes:
        """The deck as PDF; `OfficeUnavailable`, or `ConversionFailed` with the cause."""
        if self._reason is not None:
            raise OfficeUnavailable(self._reason)
        if not pptx:
            raise ConversionFailed("the deck is empty (0 bytes)")
        slot = await self._slots.get()
        try:
            with tempfile.TemporaryDirectory(prefix="tokendance-office-") as work:
                return await self._convert(pptx, Path(work), self._profiles() / f"slot-{slot}")
        finally:
            self._slots.put_nowait(slot)

    def _profiles(self) -> Path:
        """The temp dir holding the slots' profiles, made on first use."""
        if self._root is None:
            self._root = Path(tempfile.mkdtemp(prefix="tokendance-office-profiles-"))
            weakref.finalize(self, shutil.rmtree, self._root, ignore_errors=True)
        return self._root

    async def _convert(self, pptx: bytes, work: Path, profile: Path) -> bytes:
        source, out = work / "input.pptx", work / "out"
        source.write_bytes(pptx)
        out.mkdir()
        assert self.binary is not None  # checked by to_pdf through _reason
        code, output = await self._run(
            [
                self.binary,
                "--headless",
                "--norestore",
                "--nolockcheck",
                "--convert-to",
                "pdf",
                "--outdir",
                str(out),
                f"-env:UserInstallation={profile.as_uri()}",
                str(source),
            ],
            home=work,
            profile=profile,
        )
        if code != 0:
            raise ConversionFailed(f"LibreOffice exited with code {code}: {_tail(output)}")
        result = out / "input.pdf"
        if not result.is_file():
            raise ConversionFailed(f"LibreOffice wrote no PDF: {_tail(output)}")
        pdf = result.read_bytes()
        if not pdf.startswith(b"%PDF-"):
            raise ConversionFailed(f"LibreOffice wrote no valid PDF: {_tail(output)}")
        return pdf

    async def _run(self, args: list[str], *, home: Path, profile: Path) -> tuple[int, str]:
        """Exit code and output (stdout and stderr) of soffice, killed on timeout.

        A run that is killed or fails deletes the profile: it may be half-written.
        """
        process = await asyncio.create_subprocess_exec(
            *args,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            env={**os.environ, "HOME": str(home)},
            start_new_session=True,
        )
        try:
            output, _ = await asyncio.wait_for(process.communicate(), self.timeout)
        except TimeoutError:
            raise ConversionFailed(f"LibreOffice timed out after {self.timeout:g} s") from None
        finally:
            if process.returncode is None:
                # soffice starts soffice.bin as a child: kill the whole process group.
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                await process.wait()
                await _group_gone(process.pid)
                shutil.rmtree(profile, ignore_errors=True)
        code = process.returncode
        assert code is not None  # communicate() returned, so soffice has exited
        if code != 0:
            shutil.rmtree(profile, ignore_errors=True)
        return code, output.decode(errors="replace")


def pdf_page_count(pdf: bytes) -> int:
    """How many pages the PDF has; `ConversionFailed` if it cannot be read."""
    with _PDFIUM:
        document = _open(pdf)
        try:
            return len(document)
        finally:
            document.close()


def pdf_page_images(pdf: bytes, *, width: int = 640) -> list[bytes]:
    """Each page as a PNG `width` pixels wide (height by aspect); blocking.

    `ConversionFailed` if the PDF cannot be read.
    """
    if width < 1:
        raise ValueError(f"width must be at least 1 pixel, not {width}")
    with _PDFIUM:
        document = _open(pdf)
        try:
            return [_page_png(document[index], width) for index in range(len(document))]
        finally:
            document.close()


def _open(pdf: bytes) -> pdfium.PdfDocument:
    try:
        return pdfium.PdfDocument(pdf)
    except pdfium.PdfiumError as error:
        raise ConversionFailed(f"the PDF cannot be read: {error}") from None


def _page_png(page: pdfium.PdfPage, width: int) -> bytes:
    try:
        # The page's width in points is after its rotation, as rendering is.
        image = page.render(scale=width / page.get_width()).to_pil()
    finally:
        page.close()
    if image.width != width:  # the scaled size is rounded; make it exact
        image = image.resize((width, max(1, round(image.height * width / image.width))))
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


async def _group_gone(group: int, *, within: float = 5.0) -> None:
    """Wait until the SIGKILLed process group has no live member (bounded; Linux /proc)."""
    deadline = asyncio.get_running_loop().time() + within
    while _live_in_group(group) and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(0.02)


def _live_in_group(group: int) -> bool:
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError):
            # After the ")" closing the command name: state, parent, process group.
            state, _, pgrp = stat.read_text().rpartition(")")[2].split()[:3]
            if int(pgrp) == group and state not in ("Z", "X"):
                return True
    return False


def _why_unavailable(binary: str | None) -> str | None:
    if binary is None:
        return NOT_INSTALLED
    if shutil.which(binary) is None:
        return f"LibreOffice binary {binary!r} does not exist or is not executable"
    return None


def _tail(output: str, lines: int = 5) -> str:
    """The last lines soffice printed, for error messages."""
    # LibreOffice warns that it has no Java on every run; that says nothing here.
    kept = [line for line in output.splitlines() if line.strip() and "javaldx" not in line]
    kept = kept[-lines:]
    return " | ".join(kept) or "(no output)"
