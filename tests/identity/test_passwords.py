"""Password hashes: the production cost, and checks that read the cost from the stored hash."""

from __future__ import annotations

import pytest

from console.identity.passwords import decoy_hash, hash_password, verify_password


@pytest.mark.production_hashing
def test_a_password_is_hashed_with_scrypt_at_32_mib_and_only_it_verifies() -> None:
    stored = hash_password("correct horse")
    scheme, n, r, p, _salt, _digest = stored.split("$")
    assert (scheme, int(n), int(r), int(p)) == ("scrypt", 2**15, 8, 1)
    assert 128 * int(r) * int(n) == 32 * 2**20  # the memory each guess costs
    assert verify_password("correct horse", stored)
    assert not verify_password("correct horse!", stored)
    assert hash_password("correct horse") != stored  # a salt of its own each time


def test_the_tests_hash_at_the_cheapest_cost_and_the_check_reads_it_from_the_hash() -> None:
    stored = hash_password("pw")
    assert stored.startswith("scrypt$2$8$1$")
    assert verify_password("pw", stored)
    assert not verify_password("pw ", stored)


def test_a_hash_of_another_scheme_or_shape_never_verifies() -> None:
    assert not verify_password("pw", "bcrypt$2$8$1$c2FsdA$ZGlnZXN0")
    assert not verify_password("pw", "scrypt$2$8$1$c2FsdA")


@pytest.mark.production_hashing
def test_the_decoy_an_unknown_name_is_checked_against_costs_the_same_and_nothing_verifies() -> None:
    decoy, real = decoy_hash(), hash_password("pw")
    assert decoy.split("$")[:4] == real.split("$")[:4]  # the same scheme and cost: the same work
    assert len(decoy) == len(real)
    assert not verify_password("pw", decoy)
    assert decoy != decoy_hash()
