"""Accuracy of the labelled judgement sets: name pairs (phone) and photos (photo), per kind.

    python bench/judgement.py

The sets live in tests/judgement/ with each case's label and why. A case counts as right when the service judges it
as labelled. Cases of a kind the checks cannot judge yet (`known_gap`, photos) are reported apart, each with how it
is judged today and the reason, and are not in the figure.
"""

from __future__ import annotations

import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _report(title: str, results: list[tuple[str, bool]]) -> None:
    by_kind: dict[str, list[bool]] = defaultdict(list)
    for kind, right in results:
        by_kind[kind].append(right)
    total = sum(right for _, right in results)
    print(f"{title}: {total}/{len(results)} right ({100 * total / len(results):.1f}%)")
    for kind, rights in by_kind.items():
        print(f"  {kind:24s} {sum(rights)}/{len(rights)}")


def main() -> None:
    from tests.judgement import names, photos

    _report("name match", [(pair.kind, names.judge(pair) == pair.expected) for pair in names.CASES])
    judged = [case for case in photos.CASES if not case.known_gap]
    gaps = [case for case in photos.CASES if case.known_gap]
    _report("photo checks", [(case.kind, photos.judge(case)) for case in judged])
    print(f"photo known gaps (not judged yet, not counted above): {len(gaps)}")
    for case in gaps:
        state = "judged as labelled anyway" if photos.judge(case) else "not judged as labelled"
        print(f"  {case.kind}/{case.name}: {state}; {case.why}")


if __name__ == "__main__":
    main()
