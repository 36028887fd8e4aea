"""States given by a user to the state forms (_merge, _merge_state, _finalize) that no accumulator can make
are refused with an error naming the SQL function, the state field and why, of sparkagg's error class
SPARKAGG_INVALID_STATE (SQLSTATE 22023); valid states still give their values. One test per function family;
every expected value and message is worked out by hand."""
from __future__ import annotations

import re

import pytest
from pyspark.errors import IllegalArgumentException

import sparkagg

# From Spark 4.0 a task's SparkThrowable fails its job as it is: PySpark raises its IllegalArgumentException,
# with sparkagg's error class and SQLSTATE. Spark 3.5 wraps every task failure in a SparkException, which
# reaches Python as a Py4JJavaError holding the same message.
TASK_ERRORS_AS_THEY_ARE = sparkagg.spark_minor() != "3.5"


def _refused(spark, sql, message):
    if TASK_ERRORS_AS_THEY_ARE:
        with pytest.raises(IllegalArgumentException) as raised:
            spark.sql(sql).collect()
        assert (raised.value.getCondition(), raised.value.getSqlState()) == ("SPARKAGG_INVALID_STATE", "22023")
        assert str(raised.value).startswith(f"[SPARKAGG_INVALID_STATE] {message}"), str(raised.value)[:500]
    else:
        with pytest.raises(Exception, match=re.escape(f"[SPARKAGG_INVALID_STATE] {message}")):
            spark.sql(sql).collect()


def _one(spark, sql):
    return spark.sql(sql).first()[0]


def test_count(spark):
    _refused(spark, "SELECT df_count_merge(named_struct('count', -5L))",
             "df_count_merge: invalid state, count: -5 is negative")
    assert _one(spark, "SELECT df_count_merge(s) FROM VALUES (named_struct('count', 2L)), "
                       "(named_struct('count', 3L)) AS t(s)") == 5


def test_sum(spark):
    _refused(spark, "SELECT df_sum_merge_state(named_struct('sum', 1.0D, 'count', -1L))",
             "df_sum_merge_state: invalid state, count: -1 is negative")
    assert _one(spark, "SELECT df_sum_merge(s) FROM VALUES (named_struct('sum', 1.0D, 'count', 1L)), "
                       "(named_struct('sum', 2.5D, 'count', 2L)) AS t(s)") == 3.5


def test_avg(spark):
    _refused(spark, "SELECT df_avg_merge(named_struct('count', -5L, 'sum', 1.0D))",
             "df_avg_merge: invalid state, count: -5 is negative")
    _refused(spark, "SELECT df_avg_finalize(named_struct('count', -5L, 'sum', 1.0D))",
             "df_avg_finalize: invalid state, count: -5 is negative")
    assert _one(spark, "SELECT df_avg_finalize(named_struct('count', 2L, 'sum', 3.0D))") == 1.5
    # count is declared non-NULL: every state holds one (0 for no rows), so a NULL count is forged.
    _refused(spark, "SELECT df_avg_merge(named_struct('count', CAST(NULL AS BIGINT), 'sum', 1.0D))",
             "df_avg_merge: invalid state, count: is NULL, which no state holds")
    assert _one(spark, "SELECT df_avg_merge(named_struct('count', 0L, 'sum', CAST(NULL AS DOUBLE)))") is None


def test_min_max_any_value_is_a_state(spark):
    # A state is one value of the type, NULL for no rows: each is what some input makes. NaN is greatest.
    assert _one(spark, "SELECT df_min_merge(s) FROM VALUES (named_struct('min', CAST('NaN' AS DOUBLE))), "
                       "(named_struct('min', 1.0D)) AS t(s)") == 1.0
    assert _one(spark, "SELECT df_max_finalize(named_struct('max', CAST(NULL AS DOUBLE)))") is None


def test_bit_bool_any_value_is_a_state(spark):
    # 5 xor 3 = 6; true and false = false.
    assert _one(spark, "SELECT df_bit_xor_merge(s) FROM VALUES (named_struct('bit_xor', 5L)), "
                       "(named_struct('bit_xor', 3L)) AS t(s)") == 6
    assert _one(spark, "SELECT df_bool_and_merge(s) FROM VALUES (named_struct('bool_and', true)), "
                       "(named_struct('bool_and', false)) AS t(s)") is False


def test_co_moments(spark):
    _refused(spark, "SELECT df_var_samp_merge(named_struct('count', 2L, 'mean', 1.0D, 'm2', -1.0D))",
             "df_var_samp_merge: invalid state, m2: -1.0 is negative")
    _refused(spark, "SELECT df_corr_finalize(named_struct('count', -1L, 'mean1', 0.0D, 'm2_1', 0.0D, "
                    "'mean2', 0.0D, 'm2_2', 0.0D, 'algo_const', 0.0D))",
             "df_corr_finalize: invalid state, count: -1 is negative")
    # Values 1.5 and 2.5: mean 2, m2 0.25 + 0.25 = 0.5, sample variance 0.5 / (2 - 1).
    assert _one(spark, "SELECT df_var_samp_finalize(named_struct('count', 2L, 'mean', 2.0D, 'm2', 0.5D))") == 0.5


def _keys(*ks):
    return "array(" + ", ".join(f"named_struct('k0_asc_nulls_first', {k}L)" for k in ks) + ")"


def test_array_agg(spark):
    _refused(spark, f"SELECT df_array_agg_merge(named_struct('array_agg', array(1.0D), "
                    f"'array_agg_orderings', {_keys(1, 2)}))",
             "df_array_agg_merge: invalid state, array_agg_orderings: length 2, but array_agg has length 1")
    # Keys 2 and 1 order the values 1.0 and 2.0 as 2.0, 1.0.
    assert _one(spark, f"SELECT df_array_agg_merge(named_struct('array_agg', array(1.0D, 2.0D), "
                       f"'array_agg_orderings', {_keys(2, 1)}))") == [2.0, 1.0]


def test_string_agg(spark):
    _refused(spark, f"SELECT df_string_agg_merge(named_struct('string_agg', array('a', 'b'), "
                    f"'string_agg_orderings', {_keys(1)}), ',')",
             "df_string_agg_merge: invalid state, string_agg_orderings: length 1, but string_agg has length 2")
    assert _one(spark, f"SELECT df_string_agg_merge(named_struct('string_agg', array('a', 'b'), "
                       f"'string_agg_orderings', {_keys(2, 1)}), ',')") == "b,a"


def test_first_last_nth_value(spark):
    _refused(spark, f"SELECT df_nth_value_merge(named_struct('nth_value', array(1.0D, 2.0D), "
                    f"'nth_value_orderings', {_keys(1)}), 2)",
             "df_nth_value_merge: invalid state, nth_value_orderings: length 1, but nth_value has length 2")
    assert _one(spark, f"SELECT df_nth_value_merge(named_struct('nth_value', array(1.0D, 2.0D), "
                       f"'nth_value_orderings', {_keys(2, 1)}), 2)") == 1.0
    assert _one(spark, "SELECT df_first_value_finalize("
                       "named_struct('first_value', 1.0D, 'first_value_is_set', true))") == 1.0


def test_median(spark):
    _refused(spark, "SELECT df_median_merge(named_struct('median', array(1.0D, NULL, 3.0D)))",
             "df_median_merge: invalid state, median: element 1 is NULL")
    assert _one(spark, "SELECT df_median_merge(named_struct('median', array(1.0D, 3.0D)))") == 2.0


def test_percentile_cont(spark):
    _refused(spark, "SELECT df_percentile_cont_merge(named_struct('percentile_cont', array(1.0D, NULL, 3.0D)), 0.5D)",
             "df_percentile_cont_merge: invalid state, percentile_cont: element 1 is NULL")
    # p = 0.5 of 1 and 3: 1 + 0.5 * (3 - 1).
    assert _one(spark, "SELECT df_percentile_cont_merge(named_struct('percentile_cont', array(1.0D, 3.0D)), "
                       "0.5D)") == 2.0


def _digest(centroids, count=2, max_size=100):
    return (f"named_struct('max_size', {max_size}L, 'sum', 4.0D, 'count', {count}D, 'max', 3.0D, 'min', 1.0D, "
            f"'centroids', array({', '.join(f'{c}D' for c in centroids)}))")


def test_t_digest(spark):
    _refused(spark, f"SELECT df_approx_median_merge({_digest([3.0, 1.0, 1.0, 1.0])})",
             "df_approx_median_merge: invalid state, centroids: mean 1.0 of centroid 1 is below the mean 3.0 before it")
    _refused(spark, f"SELECT df_approx_median_finalize({_digest([1.0, 1.0, 3.0, -1.0])})",
             "df_approx_median_finalize: invalid state, centroids: weight -1.0 of centroid 1 is negative")
    _refused(spark, f"SELECT df_approx_percentile_cont_merge({_digest([1.0, 1.0, 3.0])}, 0.5D)",
             "df_approx_percentile_cont_merge: invalid state, centroids: 3 elements, not pairs of mean and weight")
    _refused(spark, f"SELECT df_approx_percentile_cont_with_weight_merge({_digest([1.0, 1.0], count=-2.0)}, 0.5D)",
             "df_approx_percentile_cont_with_weight_merge: invalid state, count: -2.0 is negative")
    _refused(spark, f"SELECT df_approx_median_merge({_digest([1.0, 1.0], max_size=0)})",
             "df_approx_median_merge: invalid state, max_size: 0 is not positive")
    # One centroid of weight 1 at 2.0: every percentile is 2.0.
    assert _one(spark, "SELECT df_approx_median_merge(named_struct('max_size', 100L, 'sum', 2.0D, 'count', 1.0D, "
                       "'max', 2.0D, 'min', 2.0D, 'centroids', array(2.0D, 1.0D)))") == 2.0


def test_approx_distinct(spark):
    _refused(spark, "SELECT df_approx_distinct_merge(named_struct('hll_registers', X'0102'))",
             "df_approx_distinct_merge: invalid state, hll_registers: 2 bytes, not 16384")
    # 2^14 registers of 0: no value seen.
    assert _one(spark, "SELECT df_approx_distinct_finalize(named_struct('hll_registers', "
                       "unhex(repeat('00', 16384))))") == 0


def test_state_forms_over_a_window(spark):
    # Spark's window runs the state forms (sparkagg's sliding window takes only the plain functions).
    # Frame of row 2: the states (2, 3.0) and (1, 1.0), avg 4 / 3.
    rows = [tuple(r) for r in spark.sql(
        "SELECT i, df_avg_merge(s) OVER (ORDER BY i ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) FROM VALUES "
        "(1, named_struct('count', 2L, 'sum', 3.0D)), (2, named_struct('count', 1L, 'sum', 1.0D)) AS t(i, s)"
    ).collect()]
    assert rows == [(1, 1.5), (2, 4 / 3)]
    _refused(spark, "SELECT df_avg_merge(s) OVER (ORDER BY i ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) FROM VALUES "
                    "(1, named_struct('count', -2L, 'sum', 3.0D)) AS t(i, s)",
             "df_avg_merge: invalid state, count: -2 is negative")
