"""The Python phases of a query that calls udafs as Columns or in SQL, as the JVM plans them.

The optimizer rule ``sparkagg.python.PythonAggregates`` replaces each aggregation with Python calls by two
``mapInArrow`` steps around a shuffle, and names in each step's function ``partial(spec)`` or
``final(spec)`` from here (a window step over a ROWS frame: ``window(spec)``). The spec (JSON) holds the
calls' pickled udafs and where their columns are. They run ``aggregate``'s two phases (``Partial``,
``Final``) and ``window``'s slide (``Windows``) over that layout.

Partial's input columns: the keys ``__sparkagg_k<i>``, each call's arguments, the bucket (Spark's hash of
the keys, for keys numpy does not bucket), each call's FILTER mask, and for a global aggregate a last
column marking the input's rows apart from the one extra row.
"""
from __future__ import annotations

import base64
import itertools
import json
import pickle
from collections.abc import Callable, Iterator

import pyarrow as pa

from .aggregate import Final, Partial
from .plan import PREFIX
from .window import Windows

Phase = Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]


def _udafs(spec: dict) -> list:
    return [pickle.loads(base64.b64decode(p)) for p in spec["udafs"]]


def partial(spec_json: str) -> Phase:
    spec = json.loads(spec_json)
    udafs, keys = _udafs(spec), spec["keys"]
    names = [f"{PREFIX}k{i}" for i in range(keys)] + [
        f"s{c}_{f}" for c, u in enumerate(udafs) for f in range(len(u.state_type))]

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        batches = iter(batches)
        first = next(batches, None)
        if first is None:
            return
        key_types = [first.schema.field(i).type for i in range(keys)]
        phase = Partial(udafs, spec["widths"], key_types, names, int(spec["max_groups"]), spec["partitions"],
                        bucket_column=spec["bucket"], filters=spec["filters"])
        yield from phase(itertools.chain([first], batches))
    return run


def final(spec_json: str) -> Phase:
    spec = json.loads(spec_json)
    udafs = _udafs(spec)

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        batches = (b for b in batches if b.num_rows)
        first = next(batches, None)
        if first is None:
            return
        schema = pa.ipc.open_stream(first.column(1)[0].as_buffer()).schema
        key_types = [schema.field(i).type for i in range(spec["keys"])]
        phase = Final(udafs, [len(u.state_type) for u in udafs], key_types, spec["names"])
        yield from phase(itertools.chain([first], batches))
    return run


def window(spec_json: str) -> Phase:
    """A window step: rows sorted by partition and order keys in, each row out with the calls' results over
    its ROWS frame (``rows``: offsets, None unbounded)."""
    spec = json.loads(spec_json)
    return Windows(_udafs(spec), spec["widths"], spec["keep"], spec["keys"], tuple(spec["rows"]), spec["names"])


def identity(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """The probe's function: never run, since the rule gives each step a command of its own."""
    return batches
