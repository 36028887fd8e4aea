-- case: count(*) counts every row, count(x) the non-NULL ones, count(x, y) rows with both
SELECT df_count(*), df_count(x), df_count(x, y) FROM VALUES (1, 'a'), (NULL, 'b'), (3, NULL) AS t(x, y);
-- expect:
-- 3 | 2 | 1

-- case: count of empty input is 0, every other function NULL
SELECT df_count(*), df_sum(x), df_avg(x), df_min(x), df_max(x) FROM VALUES (1) AS t(x) WHERE x > 1;
-- expect:
-- 0 | NULL | NULL | NULL | NULL

-- case: integer avg is a double; sum of ints is a bigint
SELECT df_avg(x), df_sum(x) FROM VALUES (1), (2), (NULL), (4) AS t(x);
-- expect:
-- 2.3333333333333335 | 7

-- case: grouped, keys in order
SELECT k, df_sum(x), df_max(x) FROM VALUES ('a', 1), ('b', 5), ('a', 2), ('b', NULL) AS t(k, x) GROUP BY k ORDER BY k;
-- expect:
-- a | 3 | 2
-- b | 5 | 5

-- case: decimal avg truncates to scale s+4; decimal sum keeps scale s
SELECT df_avg(x), df_sum(x) FROM VALUES (1.00BD), (2.00BD), (2.00BD) AS t(x);
-- expect:
-- 1.666666 | 5.00

-- case: NaN is the greatest double: max is NaN, min ignores it
SELECT df_max(x), df_min(x) FROM VALUES (1.5D), (double('NaN')), (-3.0D) AS t(x);
-- expect:
-- nan | -3.0

-- case: min and max of strings and dates
SELECT df_min(s), df_max(s), df_min(d), df_max(d) FROM VALUES ('pear', DATE'2024-02-29'), ('apple', DATE'2023-01-01'), ('zoo', NULL) AS t(s, d);
-- expect:
-- apple | zoo | 2023-01-01 | 2024-02-29

-- case: DISTINCT through Spark's DISTINCT keyword
SELECT df_count(DISTINCT x), df_sum(DISTINCT x) FROM VALUES (1), (1), (2), (NULL) AS t(x);
-- expect:
-- 2 | 3

-- case: a sliding frame of two rows
SELECT df_sum(x) OVER (ORDER BY i ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) FROM VALUES (1, 10), (2, 20), (3, NULL), (4, 40) AS t(i, x) ORDER BY i;
-- expect:
-- 10
-- 30
-- 20
-- 40

-- case: regression of y on x; r2 is NULL for a constant y, as in DataFusion
SELECT df_regr_slope(y, x), df_regr_sxx(y, x), df_regr_sxy(y, x), df_regr_r2(3, x), df_regr_count(y, x) FROM VALUES (1, 1), (2, 3), (4, 2), (NULL, 5) AS t(y, x);
-- expect:
-- 0.5 | 2.0 | 1.0 | NULL | 3

-- case: variance of one value: sample NULL, population 0
SELECT df_var_samp(x), df_var_pop(x), df_stddev(x), df_stddev_pop(x) FROM VALUES (5) AS t(x);
-- expect:
-- NULL | 0.0 | NULL | 0.0

-- case: corr of one pair is NULL (DataFusion 51), and of a constant column
SELECT df_corr(y, x), df_corr(y, 2) FROM VALUES (1, 2) AS t(y, x);
-- expect:
-- NULL | NULL

-- case: skewness and kurtosis of 0, 0, 6, 6 (deviations of 3 from 3: m2 = 9, m3 = 0, m4 = 81; every step exact in any order): 0, 3 * (5 - 9) / 2 = -6, and 1 - 3 = -2; of 1, 2 (m2 = 1/4, m4 = 1/16): kurtosis_pop -2, too few values for the others; a constant: NULL
SELECT df_skewness(x), df_kurtosis(x), df_kurtosis_pop(x), df_kurtosis_pop(y), df_skewness(y), df_kurtosis(y), df_kurtosis_pop(5) FROM VALUES (0, 1), (0, 2), (6, NULL), (6, NULL) AS t(x, y);
-- expect:
-- 0.0 | -6.0 | -2.0 | -2.0 | NULL | NULL | NULL

-- case: mode: the most frequent value, the smallest of equally frequent ones, NULLs skipped
SELECT df_mode(x), df_mode(s), df_mode(n) FROM VALUES (9, 'b', CAST(NULL AS INT)), (9, 'a', NULL), (5, 'a', NULL), (5, 'b', NULL), (1, NULL, NULL) AS t(x, s, n);
-- expect:
-- 5 | a | NULL

-- case: over no rows beside two DISTINCT aggregates (Spark's expand rewrite), count, regr_count and approx_distinct are 0, as alone
SELECT df_count(x), df_regr_count(x, y), df_approx_distinct(x), df_sum(DISTINCT x), df_avg(DISTINCT y) FROM VALUES (1, 2) AS t(x, y) WHERE x > 1;
-- expect:
-- 0 | 0 | 0 | NULL | NULL

-- case: a correlated scalar subquery's count is 0 where no row matches, as Spark's count
SELECT a.k, (SELECT df_count(b.x) FROM VALUES (1, 10) AS b(k, x) WHERE b.k = a.k) FROM VALUES (1), (2) AS a(k) ORDER BY a.k;
-- expect:
-- 1 | 1
-- 2 | 0
