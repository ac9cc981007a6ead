"""`tokendance memory reembed [--embedder NAME]`: move the vector read models to another
embedding model while the server keeps serving (`projections.memory_vectors.reembed`).

The command talks to the database only: the views go on writing through their runners
in the server, and searches keep using the old model's vectors until the flip.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TextIO

from eventsourcing.postgres import PostgresDatastore
from psycopg.conninfo import conninfo_to_dict

from application.ports import Embedder
from projections.memories import MemoriesView
from projections.memory_vectors import (
    EmbedderFor,
    EmbeddingModels,
    ReembedBusy,
    VectorTable,
    reembed,
)

BAR_WIDTH = 30


def datastore_of(database_url: str, *, pool_size: int = 2) -> PostgresDatastore:
    params = conninfo_to_dict(database_url)
    return PostgresDatastore(
        str(params.get("dbname") or "postgres"),
        str(params.get("host") or "localhost"),
        str(params.get("port") or "5432"),
        str(params.get("user") or "postgres"),
        str(params.get("password") or ""),
        pool_size=pool_size,
    )


def run_reembed(
    database_url: str,
    embedder: Embedder,
    embedder_for: EmbedderFor,
    *,
    out: TextIO,
    tables: Sequence[VectorTable] = (MemoriesView.VECTORS,),
) -> int:
    """Re-embed every vectors table with `embedder`'s model, drawing progress on `out`;
    the exit status (0: done, or nothing to do; 1: refused)."""
    datastore = datastore_of(database_url)
    try:
        models = EmbeddingModels(embedder, embedder_for)
        # Makes the tables if this database has none yet (then `embedder` is the first model).
        MemoriesView(datastore, models).create_table()
        with _progress(out, f"re-embedding with {embedder.model}") as progress:
            report = reembed(datastore, models, embedder, tables, progress)
    except (ReembedBusy, ValueError) as e:
        print(f"tokendance memory reembed: {e}", file=out)
        return 1
    finally:
        datastore.close()
    print(report, file=out)
    return 0


@contextmanager
def _progress(out: TextIO, what: str) -> Iterator[Callable[[int, int], None]]:
    """A progress bar on `out`: tqdm's when it is installed, else a plain `\\r` bar."""
    try:
        from tqdm import tqdm
    except ImportError:

        def plain(done: int, total: int) -> None:
            filled = BAR_WIDTH * done // total if total else BAR_WIDTH
            out.write(f"\r{what} [{'#' * filled}{'-' * (BAR_WIDTH - filled)}] {done}/{total}")
            out.flush()

        yield plain
        out.write("\n")
        return
    with tqdm(desc=what, unit=" texts", file=out) as bar:

        def update(done: int, total: int) -> None:
            bar.total = total
            bar.update(done - bar.n)

        yield update
