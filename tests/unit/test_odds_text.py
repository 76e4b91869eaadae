"""Exact figures as text (issue 24): integer arithmetic, half up."""

from __future__ import annotations

from fractions import Fraction

import pytest

from jackpotd.domain.errors import InvalidInput
from jackpotd.odds.exact_text import decimal_text, dollars_text, one_in, percent_text


def test_decimal_text_rounds_half_up_exactly() -> None:
    assert decimal_text(Fraction(2, 3), 4) == "0.6667"
    assert decimal_text(Fraction(1, 8), 2) == "0.13"  # 0.125: half up
    assert decimal_text(Fraction(-1, 8), 2) == "-0.13"  # half away from zero
    assert decimal_text(Fraction(1249, 1000), 2) == "1.25"
    assert decimal_text(Fraction(5, 2), 0) == "3"
    assert decimal_text(Fraction(7), 3) == "7.000"
    assert decimal_text(Fraction(-1, 1000), 2) == "0.00"
    assert decimal_text(Fraction(10**30 + 1, 10**30), 29) == "1.00000000000000000000000000000"


def test_percent_text() -> None:
    assert percent_text(Fraction(1, 3)) == "33.3333%"
    assert percent_text(Fraction(951_234_5, 10**7)) == "95.1235%"
    assert percent_text(Fraction(951_234_49, 10**8), 4) == "95.1234%"
    assert percent_text(Fraction(1), 1) == "100.0%"


def test_one_in() -> None:
    assert one_in(Fraction(4, 2_598_960)) == "1 in 649,740"
    assert one_in(Fraction(36, 2_598_960)) == "1 in 72,193"  # 72,193.33
    assert one_in(Fraction(2, 5)) == "1 in 3"  # 2.5: half up
    assert one_in(Fraction(1)) == "1 in 1"
    assert one_in(Fraction(0)) == "never"
    with pytest.raises(InvalidInput) as bad:
        one_in(Fraction(3, 2))
    assert bad.value.field == "probability"


def test_dollars_text() -> None:
    assert dollars_text(1_000_000) == "$10,000.00"
    assert dollars_text(5) == "$0.05"
    assert dollars_text(-123_456) == "-$1,234.56"
    with pytest.raises(InvalidInput) as bad:
        dollars_text(1.5)  # type: ignore[arg-type]
    assert bad.value.field == "cents"


def test_places_must_be_sane() -> None:
    with pytest.raises(InvalidInput) as bad:
        decimal_text(Fraction(1), -1)
    assert bad.value.field == "places" and bad.value.value == -1
