"""The finalize Java UDF classes registered from PySpark as docs/state-as-data.md shows: with the
return type where the result follows the state, without it where the class declares it. A class whose
result follows the state, registered without the type, fails at registration and names the type to pass
(before, it registered as struct<> and failed inside the first job). The classes are those the catalogue
lists (``finalize_class``), each checked."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from py4j.protocol import Py4JJavaError

import sparkagg

PAGE = Path(__file__).resolve().parent.parent / "docs" / "state-as-data.md"

def _page_python() -> list[str]:
    section = PAGE.read_text()
    return re.search(r"```python\n(.*?)```", section, re.S).group(1).strip().splitlines()


def test_readme_registration_and_query(spark):
    # Shop a: 1 and 2 on day 1, 6 on day 2 -> avg 3; shop b: 10 on day 1 -> avg 10.
    spark.sql("""SELECT shop, day, df_avg_state(amount) AS amount_s
                 FROM VALUES ('a', 1, 1.0D), ('a', 1, 2.0D), ('a', 2, 6.0D), ('b', 1, 10.0D) AS sales(shop, day, amount)
                 GROUP BY shop, day""").createOrReplaceTempView("daily")
    *statements, query = _page_python()
    assert any("registerJavaFunction" in s and '"double"' not in s for s in statements)  # one without a type
    # The page's avg_final line without its type: refused at registration, saying to pass it.
    untyped = next(s for s in statements if '"double"' in s).replace(', "double"', "")
    wanted = 'registerJavaFunction\\("avg_final", "sparkagg.udf.AvgFinalize", "double"\\)'
    with pytest.raises(Py4JJavaError, match=wanted):
        exec(untyped, {"spark": spark})
    exec("\n".join(statements), {"spark": spark})
    result = eval(query, {"spark": spark})
    assert sorted(map(tuple, result.collect())) == [("a", 3.0), ("b", 10.0)]
    # var_final, registered without a type (its class declares double): var_samp of 1 and 3 is 2.
    assert spark.sql("SELECT var_final(df_var_samp_state(x)) FROM VALUES (1.0D), (3.0D) AS t(x)").first()[0] == 2.0


@pytest.fixture(scope="module")
def finalizing(spark):
    """The catalogue's functions with a finalize class: (name, class, declared result or None)."""
    entries = [(f["name"], f["finalize_class"], f["finalize_result"]) for f in sparkagg.catalogue(spark)
               if f["finalize_class"]]
    assert {"avg", "sum", "var_samp", "count", "bool_and", "mode"} <= {name for name, _, _ in entries}
    return entries


def test_registration_without_the_type_fails_at_once_naming_it(spark, finalizing):
    follows = [(name, cls) for name, cls, declared in finalizing if declared is None]
    assert len(follows) >= 9
    for function, cls in follows:
        with pytest.raises(Py4JJavaError) as failed:
            spark.udf.registerJavaFunction(f"{function}_untyped", cls)
        message = str(failed.value)
        assert f"{cls} returns what df_{function}_finalize returns" in message, function
        assert "pass it as the third argument" in message and f'"{cls}", "' in message, function
        assert not spark.catalog.functionExists(f"{function}_untyped")


def test_a_declared_result_registers_without_the_type_and_finalizes_a_state_to_the_aggregate(spark, finalizing):
    """Each class that declares its result, registered without a type: over a state the function made, it gives
    the declared type and the aggregate's own value."""
    declared = [(name, cls, result) for name, cls, result in finalizing if result is not None]
    assert len(declared) >= 20
    rows = "VALUES (1.0D, 2.0D, true), (3.0D, 7.0D, false), (4.0D, 5.0D, true), (NULL, 1.0D, NULL) AS t(x, y, b)"
    finals, aggregates = [], []
    for function, cls, _ in declared:
        spark.udf.registerJavaFunction(f"{function}_final", cls)
        args = "b" if function.startswith("bool_") else "x, y" if function[:4] in ("cova", "corr", "regr") else "x"
        finals.append(f"{function}_final(df_{function}_state({args})) AS {function}")
        aggregates.append(f"df_{function}({args}) AS {function}")
    finalized = spark.sql(f"SELECT {', '.join(finals)} FROM {rows}")
    expected = spark.sql(f"SELECT {', '.join(aggregates)} FROM {rows}").first()
    for (function, _, result), field in zip(declared, finalized.schema.fields):
        assert field.dataType.simpleString() == result, function
    assert finalized.first() == expected


def test_a_forged_state_is_refused_naming_the_class(spark):
    spark.udf.registerJavaFunction("var_final_forged", "sparkagg.udf.VarSampFinalize")
    with pytest.raises(Exception, match=re.escape("sparkagg.udf.VarSampFinalize: invalid state, m2: -1.0 is negative")):
        spark.sql("SELECT var_final_forged(named_struct('count', 2L, 'mean', 1.0D, 'm2', -1.0D))").collect()
