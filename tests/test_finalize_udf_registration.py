"""The finalize Java UDF classes registered from PySpark as docs/state-as-data.md shows: with the
return type where the result follows the state, without it where the class declares it. A class whose
result follows the state, registered without the type, fails at registration and names the type to pass
(before, it registered as struct<> and failed inside the first job)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from py4j.protocol import Py4JJavaError

PAGE = Path(__file__).resolve().parent.parent / "docs" / "state-as-data.md"

# Finalize classes whose result type follows the state: (class, function).
TYPE_FOLLOWS_STATE = [("SumFinalize", "sum"), ("AvgFinalize", "avg"), ("MinFinalize", "min"),
                      ("MaxFinalize", "max"), ("BitAndFinalize", "bit_and"), ("BitOrFinalize", "bit_or"),
                      ("BitXorFinalize", "bit_xor"), ("ArrayAggFinalize", "array_agg"),
                      ("MedianFinalize", "median")]


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


@pytest.mark.parametrize("cls,function", TYPE_FOLLOWS_STATE)
def test_registration_without_the_type_fails_at_once_naming_it(spark, cls, function):
    with pytest.raises(Py4JJavaError) as failed:
        spark.udf.registerJavaFunction(f"{function}_untyped", f"sparkagg.udf.{cls}")
    message = str(failed.value)
    assert f"sparkagg.udf.{cls} returns what df_{function}_finalize returns" in message
    assert "pass it as the third argument" in message and f'"sparkagg.udf.{cls}", "' in message
    assert not spark.catalog.functionExists(f"{function}_untyped")


def test_a_forged_state_is_refused_naming_the_class(spark):
    spark.udf.registerJavaFunction("var_final_forged", "sparkagg.udf.VarSampFinalize")
    with pytest.raises(Exception, match=re.escape("sparkagg.udf.VarSampFinalize: invalid state, m2: -1.0 is negative")):
        spark.sql("SELECT var_final_forged(named_struct('count', 2L, 'mean', 1.0D, 'm2', -1.0D))").collect()
