"""The oracle of the functions in DataFusion's companion crate of extra aggregates (mode, skewness, kurtosis,
kurtosis_pop): DataFusion 55 with datafusion-extra-functions, in an environment of its own
(.venvs/datafusion-55, built by ``make oracle55``), since the main oracle (oracle.py) is still DataFusion
50 in-process. One subprocess runs every query of a call; the table goes over as an Arrow IPC file and
the rows come back pickled."""
from __future__ import annotations

import pickle
import subprocess
import tempfile
from pathlib import Path

import pyarrow as pa

PYTHON = Path(__file__).resolve().parent.parent / ".venvs" / "datafusion-55" / "bin" / "python"

_SCRIPT = """
import pickle, sys
import datafusion, pyarrow as pa
import datafusion_extra_functions as extra
table = pa.ipc.open_file(sys.argv[1]).read_all()
ctx = datafusion.SessionContext()
for name in extra.list_functions():
    ctx.register_udaf(datafusion.AggregateUDF.from_pycapsule(extra.udaf_by_name(name)))
ctx.register_record_batches("t", [table.to_batches() or [pa.RecordBatch.from_pylist([], schema=table.schema)]])
rows = [[tuple(r.values()) for r in ctx.sql(sql).to_arrow_table().to_pylist()] for sql in sys.argv[2:]]
sys.stdout.buffer.write(pickle.dumps((datafusion.__version__, rows)))
"""


def run(table: pa.Table, *queries: str) -> list[list[tuple]]:
    """The rows of each query over ``table`` registered as ``t``, run by DataFusion 55 with the extra
    functions registered under their own names."""
    assert PYTHON.exists(), f"{PYTHON} is missing: `make oracle55` builds it"
    with tempfile.NamedTemporaryFile(suffix=".arrow") as f:
        with pa.ipc.new_file(f.name, table.schema) as writer:
            writer.write_table(table)
        done = subprocess.run([str(PYTHON), "-c", _SCRIPT, f.name, *queries], capture_output=True, check=False)
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    version, rows = pickle.loads(done.stdout)
    assert version.startswith("55."), version
    return rows
