"""The relevance floor: a similarity, or the nearest memory standing out from the rest."""

from __future__ import annotations

from kioku._calibration import (
    STAND_OUT_PEERS,
    RelevanceFloor,
    calibration_for,
    relevance_floor,
)

E5 = "multilingual:multilingual-e5-small-q4"


def test_a_memory_similar_enough_clears_it() -> None:
    floor = RelevanceFloor(0.845, stands_out=0.045)
    assert floor.cleared_by([0.80, 0.85, 0.81])
    assert not floor.cleared_by([0.80, 0.84, 0.81])
    assert not floor.cleared_by([])


def test_the_nearest_memory_standing_out_from_the_rest_clears_it() -> None:
    floor = RelevanceFloor(0.845, stands_out=0.045)
    crowd = [0.78] * 19
    assert floor.cleared_by([0.83, *crowd])  # 0.05 above the rest
    assert not floor.cleared_by([0.82, *crowd])  # 0.04 above
    # Only the next 19 are compared: a long tail of far memories changes nothing.
    assert not floor.cleared_by([0.82, *crowd, *[0.10] * 200])


def test_a_small_scope_has_nothing_to_stand_out_from() -> None:
    floor = RelevanceFloor(0.845, stands_out=0.045)
    assert not floor.cleared_by([0.83, *[0.70] * (STAND_OUT_PEERS - 1)])
    assert floor.cleared_by([0.83, *[0.70] * STAND_OUT_PEERS])


def test_without_a_margin_only_the_similarity_counts() -> None:
    assert not RelevanceFloor(0.845).cleared_by([0.83, *[0.50] * 30])


def test_a_floor_set_by_hand_is_the_similarity_alone() -> None:
    assert relevance_floor(E5, 0.8) == RelevanceFloor(0.8)
    assert relevance_floor(E5, -1) is None
    calibrated = relevance_floor(E5, None)
    assert calibrated == RelevanceFloor(
        calibration_for(E5).relevant, calibration_for(E5).stands_out
    )
    assert calibrated is not None and calibrated.stands_out is not None
    assert relevance_floor("hashing-384", None) == RelevanceFloor(0.30)
