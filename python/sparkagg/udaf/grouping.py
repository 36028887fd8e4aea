"""Dense group indices for the key columns of Arrow batches, as DataFusion's group-by hash table
assigns them: 0, 1, 2, ... in order of first appearance, stable across the batches of a partition."""
from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

_NAN = object()  # NaN as a dictionary key: every NaN is one group, as in Spark's GROUP BY


def normal_key_value(value: object) -> object:
    """A key value as Python compares keys: equal exactly when GROUP BY puts them in one group."""
    if isinstance(value, float):
        if math.isnan(value):
            return _NAN
        if value == 0.0:
            return 0.0  # -0.0 and 0.0 are one group
    return value


class GroupIndex:
    """The groups seen so far in a partition, and their key values in group order.

    ``index(keys)`` encodes each batch column by column in Arrow (dictionary codes), combines the
    codes, and looks up in Python only the distinct keys of the batch, not its rows. One integer key
    stays in numpy: first a dense array of group ids indexed by ``key - low``, as the JVM operator's
    LongKeyMap, while the keys span at most ``DENSE_SPAN`` values per group; past that, for good, the
    keys seen in a sorted array beside their group ids, searched a batch's distinct keys at a time (a
    final phase's partition holds every n-th key of a wide range, which no dict of Python ints should
    hold). With no key columns every row is group 0 (a global aggregate)."""

    DENSE_SPAN = 8
    DENSE_MIN = 1 << 16  # slots the dense array may always have, however few the groups

    def __init__(self, key_types: list[pa.DataType]) -> None:
        self.key_types = key_types
        self._ids: dict[object, int] = {}
        self._keys: list[list[pa.Array]] = [[] for _ in key_types]  # new groups' keys, per batch
        self.count = 0 if key_types else 1
        self._integer = len(key_types) == 1 and pa.types.is_signed_integer(key_types[0])
        self._dense = self._integer
        self._low, self._slots = 0, np.zeros(0, np.int64)  # the dense path: group id + 1 per key - low
        self._sorted, self._sorted_ids = np.zeros(0, np.int64), np.zeros(0, np.int64)  # the sparse path
        self._null_group = -1

    def index(self, keys: list[pa.Array], rows: int) -> np.ndarray:
        if not keys:
            return np.zeros(rows, np.int64)
        if self._integer:
            return self._integer_index(keys[0])
        return self._lookup_index(keys, rows)

    def _integer_index(self, column: pa.Array) -> np.ndarray:
        """One integer key's groups: its non-NULL values through the dense or the sorted path, NULL one
        group of its own."""
        valid = None if column.null_count == 0 else column.is_valid().to_numpy(zero_copy_only=False)
        values = column.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
        present = values if valid is None else values[valid]
        present_groups = self._dense_index(present, column.type) if self._dense else None
        if present_groups is None:
            if self._dense:
                self._leave_dense()
            present_groups = self._sorted_index(present, column.type)
        if valid is None:
            return present_groups
        if self._null_group < 0 and not valid.all():
            self._null_group = self.count
            self._keys[0].append(pa.nulls(1, column.type))
            self.count += 1
        groups = np.full(len(values), self._null_group, np.int64)
        groups[valid] = present_groups
        return groups

    def _new_groups(self, keys: np.ndarray, key_type: pa.DataType) -> np.ndarray:
        """Group ids for ``keys`` (distinct, not seen before, in order of first appearance)."""
        self._keys[0].append(pa.array(keys).cast(key_type))
        self.count += len(keys)
        return np.arange(self.count - len(keys), self.count)

    def _dense_index(self, present: np.ndarray, key_type: pa.DataType) -> np.ndarray | None:
        if not len(present):
            return np.zeros(0, np.int64)
        low = min(int(present.min()), self._low if len(self._slots) else int(present.min()))
        high = max(int(present.max()) + 1, self._low + len(self._slots))
        if high - low > max(self.DENSE_MIN, self.DENSE_SPAN * (self.count + len(present))):
            return None
        self._cover(low, high)
        offsets = present - self._low
        missing = self._slots[offsets] == 0
        if missing.any():
            fresh = self._first_of_each(offsets[missing])
            self._slots[fresh] = self._new_groups(fresh + self._low, key_type) + 1
        return self._slots[offsets] - 1

    def _sorted_index(self, present: np.ndarray, key_type: pa.DataType) -> np.ndarray:
        distinct, first, inverse = np.unique(present, return_index=True, return_inverse=True)
        at = np.searchsorted(self._sorted, distinct)
        seen = at < len(self._sorted)
        seen[seen] = self._sorted[at[seen]] == distinct[seen]
        ids = np.empty(len(distinct), np.int64)
        ids[seen] = self._sorted_ids[at[seen]]
        fresh = np.flatnonzero(~seen)
        if len(fresh):
            fresh = fresh[np.argsort(first[fresh], kind="stable")]  # numbered in order of first appearance
            ids[fresh] = self._new_groups(distinct[fresh], key_type)
            fresh.sort()  # np.insert wants the positions in the sorted array in order
            self._sorted = np.insert(self._sorted, at[fresh], distinct[fresh])
            self._sorted_ids = np.insert(self._sorted_ids, at[fresh], ids[fresh])
        return ids[inverse.reshape(-1)]

    def _first_of_each(self, offsets: np.ndarray) -> np.ndarray:
        """The distinct values of ``offsets`` (free slots) in order of first appearance, in O(n) without
        sorting: written backwards, each slot keeps the position of its first writer, and the positions
        that kept their slot name one each."""
        positions = np.arange(1, len(offsets) + 1)
        self._slots[offsets[::-1]] = -positions[::-1]
        fresh = offsets[self._slots[offsets] == -positions]
        self._slots[offsets] = 0
        return fresh

    def _cover(self, low: int, high: int) -> None:
        """Widen the dense array to keys [low, high), doubling so that a growing range costs O(n)."""
        old_low, old = self._low, self._slots
        if len(old) and low >= old_low and high <= old_low + len(old):
            return
        if len(old):
            low, high = min(low, old_low), max(high, old_low + len(old))
        size = max(high - low, 2 * len(old))
        new_low = high - size if len(old) and low < old_low else low  # the room on the side that grew
        self._slots = np.zeros(size, np.int64)
        if len(old):
            self._slots[old_low - new_low: old_low - new_low + len(old)] = old
        self._low = new_low

    def _leave_dense(self) -> None:
        """Too sparse for the array: its groups move to the sorted path."""
        taken = np.flatnonzero(self._slots)
        self._sorted, self._sorted_ids = taken + self._low, self._slots[taken] - 1
        self._dense, self._slots = False, np.zeros(0, np.int64)

    def _lookup_index(self, keys: list[pa.Array], rows: int) -> np.ndarray:
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
            lookups = [normal_key_value(v) for v in values[0].to_pylist()]
        else:
            lookups = [tuple(map(normal_key_value, row)) for row in zip(*(v.to_pylist() for v in values))]
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
