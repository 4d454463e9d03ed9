"""calc: small arithmetic helpers."""

from calc.generated.table import OPERATORS


def add(a: float, b: float) -> float:
    return a + b


def sub(a: float, b: float) -> float:
    return a - b


__all__ = ["OPERATORS", "add", "sub"]
