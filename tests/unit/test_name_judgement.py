"""The labelled name-match judgement set (tests/judgement/names.py): every pair is judged as its label says."""

from __future__ import annotations

import pytest

from tests.judgement.names import CASES, KINDS, NamePair, judge


def _case_id(pair: NamePair) -> str:
    index = [case for case in CASES if case.kind == pair.kind].index(pair)
    return f"{pair.kind}-{index}"


@pytest.mark.parametrize("pair", CASES, ids=_case_id)
def test_pair_is_judged_as_labelled(pair: NamePair) -> None:
    assert judge(pair) == pair.expected, pair.why


def test_every_kind_has_a_dozen_labelled_pairs() -> None:
    assert {pair.kind for pair in CASES} == set(KINDS)
    for kind in KINDS:
        assert sum(pair.kind == kind for pair in CASES) >= 12, kind
