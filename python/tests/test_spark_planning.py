"""The planning functions the PySpark data source's driver calls
(kwire._kwire.rate_limit, plan_micro_batch): Spark's rateLimit and micro-batch
ranges with the data-loss rules, over Spark's offsets JSON. No broker needed."""

import json

import pytest

import kwire
from kwire import _kwire

OPTS = {"kafka.bootstrap.servers": "127.0.0.1:1", "subscribe": "t"}


def offsets(**parts):
    return json.dumps({"t": {k.lstrip("p"): v for k, v in parts.items()}})


def test_rate_limit_spreads_the_limit_over_the_backlog():
    # backlog 23 + 15 + 9 = 47; shares of 20: 9.79, 6.38, 3.83 -> floored
    got = _kwire.rate_limit(20, offsets(p0=0, p1=0, p2=0), offsets(p0=23, p1=15, p2=9), "{}")
    assert json.loads(got) == {"t": {"0": 9, "1": 6, "2": 3}}


def test_rate_limit_rounds_small_shares_up_and_starts_new_partitions_at_earliest():
    # p1 is new (absent from start): its backlog counts from its earliest, 4
    got = _kwire.rate_limit(10, offsets(p0=0), offsets(p0=100, p1=5), offsets(p1=4))
    # shares: 10 * 100/101 = 9.9 -> 9; 10 * 1/101 < 1 -> ceil 1
    assert json.loads(got) == {"t": {"0": 9, "1": 5}}


def test_plan_micro_batch_gives_ranges_and_splits_for_min_partitions():
    ranges, warnings = _kwire.plan_micro_batch(
        dict(OPTS, minPartitions="4"), offsets(p0=0, p1=10), offsets(p0=30, p1=20), "{}"
    )
    assert warnings == []
    # 40 offsets over 4 parts: p0 (30) gets 3, p1 (10) gets 1
    assert ranges == [("t", 0, 0, 10), ("t", 0, 10, 20), ("t", 0, 20, 30), ("t", 1, 10, 20)]


def test_plan_micro_batch_raises_sparks_data_loss_conditions():
    with pytest.raises(kwire.KafkaDataLossError) as e:
        _kwire.plan_micro_batch(OPTS, offsets(p0=10), offsets(p0=4), "{}")
    assert e.value.condition == "KAFKA_DATA_LOSS.PARTITION_OFFSET_CHANGED"
    with pytest.raises(kwire.KafkaDataLossError) as e:
        _kwire.plan_micro_batch(OPTS, offsets(p0=0), offsets(p0=5, p1=3), offsets(p1=2))
    assert e.value.condition == "KAFKA_DATA_LOSS.ADDED_PARTITION_DOES_NOT_START_FROM_OFFSET_ZERO"


def test_plan_micro_batch_warns_instead_with_fail_on_data_loss_false():
    ranges, warnings = _kwire.plan_micro_batch(
        dict(OPTS, failOnDataLoss="false"), offsets(p0=10, p1=0), offsets(p0=4, p1=6), "{}"
    )
    assert ranges == [("t", 1, 0, 6)]
    assert len(warnings) == 1 and "PARTITION_OFFSET_CHANGED" in warnings[0]


def test_plan_micro_batch_rejects_bad_offsets_json():
    with pytest.raises(kwire.KwireError):
        _kwire.plan_micro_batch(OPTS, "{not json", offsets(p0=1), "{}")
