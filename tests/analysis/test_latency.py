"""Latency quantiles in bounded memory (analyzer/analysis/latency.py)."""

import random

from mcptap.analysis.latency import EXACT, RELATIVE_ERROR, LatencySketch, nearest_rank


def test_quantiles_stay_within_the_relative_error_of_the_exact_ones():
    rng = random.Random(7)
    values = [rng.lognormvariate(-5, 1.5) for _ in range(20_000)]
    sketch = LatencySketch()
    for v in values:
        sketch.add(v)
    values.sort()
    for q in (0.5, 0.95, 0.99):
        exact = nearest_rank(values, q)
        assert abs(sketch.quantile(q) - exact) <= RELATIVE_ERROR * exact * 1.01
    assert sketch.max == values[-1] and sketch.count == len(values)


def test_memory_is_bounded_by_the_range_not_the_count():
    sketch = LatencySketch()
    for i in range(200_000):
        sketch.add(0.001 + (i % 1000) * 1e-6)
    assert len(sketch.buckets) < 100


def test_merged_sketches_answer_as_one():
    a, b, both = LatencySketch(), LatencySketch(), LatencySketch()
    for i in range(1, 1000):
        (a if i % 2 else b).add(i / 1000)
        both.add(i / 1000)
    a.merge(b)
    assert a.quantile(0.5) == both.quantile(0.5) and a.max == both.max and a.count == both.count


def test_an_empty_sketch_has_no_quantiles():
    assert LatencySketch().quantile(0.5) is None


def test_percentiles_are_by_nearest_rank_and_exact_for_small_counts():
    sketch = LatencySketch()
    for v in (0.034, 0.0011, 0.0023):
        sketch.add(v)
    assert (sketch.quantile(0.5), sketch.quantile(0.95), sketch.quantile(0)) == (0.0023, 0.034, 0.0011)
    assert nearest_rank([0.4, 0.1, 0.3, 0.2], 0.5) == 0.2 and nearest_rank([0.4, 0.1, 0.3, 0.2], 0.51) == 0.3
    assert nearest_rank([], 0.5) is None


def test_a_sketch_is_exact_up_to_its_exact_count_and_within_the_error_past_it():
    values = [(i * 7919 % 10_007) / 1e4 + 1e-3 for i in range(EXACT)]
    sketch = LatencySketch()
    for v in values:
        sketch.add(v)
    assert sketch.quantile(0.95) == nearest_rank(values, 0.95)
    sketch.add(1.0)
    exact = nearest_rank(values + [1.0], 0.95)
    assert sketch.quantile(0.95) != exact and abs(sketch.quantile(0.95) - exact) <= RELATIVE_ERROR * exact * 1.01
