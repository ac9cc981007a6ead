"""The upkeep of long-term memory's vectors, from the command line.

`tokendance memory reembed [--embedder NAME]` moves the vector read models to another
embedding model while the server keeps serving (`projections.reembed`): the views go on
writing through their runners in the server, and searches keep using the old model's
vectors until the flip. `tokendance memory graphs` gives each large namespace its graph
now (`projections.vector_graphs`), rather than at the server's next pass.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TextIO

from adapters.postgres.eventstore import datastore_of
from application.ports import Embedder
from projections.memories import MemoriesView
from projections.memory_vectors import EmbedderFor, EmbeddingModels, VectorTable
from projections.reembed import ReembedBusy, reembed
from projections.vector_graphs import GraphKeeper

BAR_WIDTH = 30


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


def run_graphs(database_url: str, *, out: TextIO) -> int:
    """One pass of the graph keeper, saying what it did; the exit status (1: busy)."""
    datastore = datastore_of(database_url)
    try:
        keeper = GraphKeeper(datastore, [MemoriesView.VECTORS])
        keeper.create_table()
        kept = keeper.keep()
    finally:
        datastore.close()
    print(f"tokendance memory graphs: {kept}", file=out)
    return 1 if kept.busy else 0


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
