"""Pure image checks for photo compliance: the policy catalogue, evaluate() and a process-pool runner."""

from processors.photo.checks.evaluate import evaluate
from processors.photo.checks.policies import POLICIES, Policy, Rule
from processors.photo.checks.pool import CheckPool
from processors.photo.checks.verdict import CATEGORIES, REASON_CODES, Check, Verdict

__all__ = ["CATEGORIES", "POLICIES", "REASON_CODES", "Check", "CheckPool", "Policy", "Rule", "Verdict", "evaluate"]
