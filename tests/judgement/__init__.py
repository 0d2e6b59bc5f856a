"""Labelled judgement sets: real-world-shaped cases, each labelled as a careful reviewer would, with the reason why."""
