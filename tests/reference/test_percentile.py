"""Tests of the reference model's percentile_cont (python/sparkagg/reference/percentile.py)."""
from __future__ import annotations

import math

import pyarrow as pa

from sparkagg import reference as ref


def test_percentile_cont_interpolates_and_reads_desc_from_the_top():
    """Hand-worked: {0, 10, 20, 30}, p = 0.25: index 0.75 -> 7.5; DESC: the 0.75th -> 22.5."""
    for descending, expected in ((False, 7.5), (True, 22.5)):
        acc = ref.get("percentile_cont").bind(p=0.25, descending=descending)([pa.int64()])
        acc.update_batch([pa.array([30, None, 0, 20, 10])])
        assert acc.evaluate() == expected
    empty = ref.get("percentile_cont").bind(p=0.5)([pa.float64()])
    assert empty.evaluate() is None
    nan_last = ref.get("percentile_cont").bind(p=1.0)([pa.float64()])
    nan_last.update_batch([pa.array([1.0, float("nan"), -0.0])])
    assert math.isnan(nan_last.evaluate())
