"""Dense group indices for the key columns of Arrow batches, as DataFusion's group-by hash table
assigns them: 0, 1, 2, ... in order of first appearance, stable across the batches of a partition."""
from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

_NAN = object()  # NaN as a dictionary key: every NaN is one group, as in Spark's GROUP BY


def _normal(value: object) -> object:
    if isinstance(value, float):
        if math.isnan(value):
            return _NAN
        if value == 0.0:
            return 0.0  # -0.0 and 0.0 are one group
    return value


class GroupIndex:
    """The groups seen so far in a partition, and their key values in group order.

    ``index(keys)`` encodes each batch column by column in Arrow (dictionary codes), combines the
    codes, and looks up in Python only the distinct keys of the batch, not its rows. With no key
    columns every row is group 0 (a global aggregate)."""

    def __init__(self, key_types: list[pa.DataType]) -> None:
        self.key_types = key_types
        self._ids: dict[object, int] = {}
        self._keys: list[list[pa.Array]] = [[] for _ in key_types]  # new groups' keys, per batch
        self.count = 0 if key_types else 1

    def index(self, keys: list[pa.Array], rows: int) -> np.ndarray:
        if not keys:
            return np.zeros(rows, np.int64)
        combined, span = np.zeros(rows, np.int64), 1
        for column in keys:
            encoded = pc.dictionary_encode(column, null_encoding="encode")
            codes = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
            if span * len(encoded.dictionary) >= 2**62:  # renumber the keys so far densely first
                combined = np.unique(combined, return_inverse=True)[1].reshape(-1)
                span = int(combined.max()) + 1
            combined, span = combined * len(encoded.dictionary) + codes, span * len(encoded.dictionary)
        distinct, first, inverse = np.unique(combined, return_index=True, return_inverse=True)
        firsts = pa.array(first)
        values = [column.take(firsts) for column in keys]
        if len(keys) == 1:
            lookups = [_normal(v) for v in values[0].to_pylist()]
        else:
            lookups = [tuple(map(_normal, row)) for row in zip(*(v.to_pylist() for v in values))]
        ids = self._ids
        mapped = np.empty(len(distinct), np.int64)
        fresh = []
        for i, key in enumerate(lookups):
            g = ids.get(key)
            if g is None:
                g = ids[key] = self.count
                self.count += 1
                fresh.append(i)
            mapped[i] = g
        if fresh:
            rows_of_new = pa.array(fresh, pa.int64())
            for store, v in zip(self._keys, values):
                store.append(v.take(rows_of_new))
        return mapped[inverse.reshape(-1)]

    def take_keys(self) -> list[pa.Array]:
        """Every group's key values in group order; the index starts afresh (an early emit)."""
        out = [pa.concat_arrays(chunks) if chunks else pa.array([], t)
               for chunks, t in zip(self._keys, self.key_types)]
        self.__init__(self.key_types)
        return out
