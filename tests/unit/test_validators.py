"""Table tests for every named validator: a valid value, near misses, and junk.

Near misses are the values a pattern will hand over in real text: a card number with one digit
off, an IBAN with wrong check digits, a BSN failing the 11-check, a phone number one digit short.
"""

from __future__ import annotations

from typing import Any

import pytest

from services.rules.validators import VALIDATORS, register

CASES: list[tuple[str, str, dict[str, Any], bool]] = [
    # luhn: 13–19 digits by default, separators ignored
    ("luhn", "4111 1111 1111 1111", {}, True),
    ("luhn", "5555-5555-5555-4444", {}, True),
    ("luhn", "378282246310005", {}, True),
    ("luhn", "4111 1111 1111 1112", {}, False),  # last digit off
    ("luhn", "4012-8888-8888-1882", {}, False),
    ("luhn", "0000000000000000", {}, False),  # passes Luhn, but one repeated digit
    ("luhn", "79927398713", {}, False),  # valid Luhn, too short for a card
    ("luhn", "630427373398", {}, False),  # 12 digits: only with min_digits 12
    ("luhn", "630427373398", {"min_digits": 12, "max_digits": 12}, True),
    ("luhn", "4111111111111111", {"min_digits": 12, "max_digits": 12}, False),
    ("luhn", "not a number", {}, False),
    # iban: country format, national checks and mod-97 (python-stdnum)
    ("iban", "NL91ABNA0417164300", {}, True),
    ("iban", "NL91 ABNA 0417 1643 00", {}, True),
    ("iban", "gb29nwbk60161331926819", {}, True),
    ("iban", "AL47-2121-1009-0000-0002-3569-8741", {}, True),
    ("iban", "NL91ABNA0417164301", {}, False),  # check digits do not match
    ("iban", "NL91ABNA041716430", {}, False),  # one character short for NL
    ("iban", "XX91ABNA0417164300", {}, False),  # no such country
    ("iban", "ES2121000418450200051331", {}, False),  # mod-97 ok, Spanish check fails
    ("iban", "hello world", {}, False),
    # nl_bsn: 9 digits, 11-check
    ("nl_bsn", "123456782", {}, True),
    ("nl_bsn", "1112.22.333", {}, True),
    ("nl_bsn", "111 222 333", {}, True),
    ("nl_bsn", "123456789", {}, False),  # fails the 11-check
    ("nl_bsn", "1112.52.333", {}, False),
    ("nl_bsn", "000000000", {}, False),  # passes the arithmetic, never issued
    ("nl_bsn", "1234567820", {}, False),  # ten digits
    ("nl_bsn", "abc", {}, False),
    # us_ssn: area/group/serial rules and advertised numbers; separators are the pattern's job
    ("us_ssn", "536-22-1234", {}, True),
    ("us_ssn", "078-05-1123", {}, True),
    ("us_ssn", "078 05 1123", {}, True),
    ("us_ssn", "078.05.1123", {}, True),
    ("us_ssn", "078051121", {}, True),
    ("us_ssn", "078-05-1120", {}, False),  # the Woolworth wallet number
    ("us_ssn", "000-45-6789", {}, False),  # area 000
    ("us_ssn", "666-12-3456", {}, False),  # area 666
    ("us_ssn", "900-12-3456", {}, False),  # area 9xx
    ("us_ssn", "123-00-6789", {}, False),  # group 00
    ("us_ssn", "123-45-0000", {}, False),  # serial 0000
    ("us_ssn", "123-45-67890", {}, False),
    # vn_cccd: 12 digits, province code from rules/data/vn_cccd_province_codes.csv
    ("vn_cccd", "001099012345", {}, True),  # 001 Hà Nội
    ("vn_cccd", "079 203 004 567", {}, True),  # 079 Hồ Chí Minh
    ("vn_cccd", "999184003512", {}, False),  # no province 999
    ("vn_cccd", "003201004567", {}, False),  # 003 is not a province code
    ("vn_cccd", "00109901234", {}, False),  # eleven digits
    ("vn_cccd", "001000000000", {}, False),
    # phone: phonenumbers, national form for the listed regions, any country with + or 00
    ("phone", "06-12345678", {"regions": ["NL"]}, True),
    ("phone", "020 123 4567", {"regions": ["NL"]}, True),
    ("phone", "0031 6 12345678", {"regions": ["NL"]}, True),
    ("phone", "06-1234567", {"regions": ["NL"]}, False),  # one digit short
    ("phone", "0123 456 789", {"regions": ["NL"]}, False),  # no such area code
    ("phone", "0912 345 678", {"regions": ["VN"]}, True),
    ("phone", "0912 345 678", {"regions": ["NL"]}, True),  # also a valid NL number
    ("phone", "(415) 555-0132", {"regions": ["US"]}, True),
    ("phone", "(415) 555-0132", {"regions": ["NL"]}, False),
    ("phone", "(123) 555-0132", {"regions": ["US"]}, False),  # area code 123 does not exist
    ("phone", "07400 123456", {"regions": ["GB"]}, True),
    ("phone", "07911 123456", {"regions": ["GB"]}, False),  # a Guernsey number...
    ("phone", "07911 123456", {"regions": ["GB", "GG"]}, True),  # ...allowed with GG
    ("phone", "+55 11 98456 5666", {}, True),
    ("phone", "+55 11 98456 5666", {"regions": ["NL"]}, True),  # + is any country
    ("phone", "001-518-640-0854", {"regions": ["NL"]}, True),  # 00 is the + of Europe
    ("phone", "+31 6 1234", {}, False),
    ("phone", "+12", {}, False),
    ("phone", "call me", {}, False),
    # ipv4 / ipv6: ipaddress; loopback and unspecified are not personal data
    ("ipv4", "84.241.11.7", {}, True),
    ("ipv4", "10.0.0.1", {}, True),
    ("ipv4", "127.0.0.1", {}, False),
    ("ipv4", "0.0.0.0", {}, False),
    ("ipv4", "256.1.1.1", {}, False),
    ("ipv4", "192.168.001.001", {}, False),  # leading zeros are ambiguous
    ("ipv4", "1.2.3", {}, False),
    ("ipv6", "2001:db8::1", {}, True),
    ("ipv6", "::ffff:192.0.2.1", {}, True),
    ("ipv6", "fe80::1%eth0", {}, True),
    ("ipv6", "::1", {}, False),
    ("ipv6", "::", {}, False),
    ("ipv6", "2001::db8::1", {}, False),
    ("ipv6", "12:34:56", {}, False),
    ("ipv6", "aa:bb:cc:dd:ee:ff", {}, False),
    # jwt: header decodes to a JSON object with alg
    ("jwt", "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxIn0.sig", {}, True),
    ("jwt", "eyJ0eXAiOiJKV1QiLA0KImFsZyI6IkhTMjU2In0.eyJzdWIiOiIxIn0", {}, True),
    ("jwt", "eyJ0eXAiOiJKV1QifQ.eyJzdWIiOiIxIn0.sig", {}, False),  # {"typ":"JWT"}: no alg
    ("jwt", "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ.eyJzdWIiOiIxIn0", {}, False),  # cut JSON
    ("jwt", "eyJBB.eyJCC.eyJDDDD", {}, False),
    ("jwt", "not.a.jwt", {}, False),
    # not_placeholder
    ("not_placeholder", "Zomer2024!", {}, True),
    ("not_placeholder", "'s3cr3t-Pa55'", {}, True),
    ("not_placeholder", "changeme", {"placeholders": ["changeme"]}, False),
    ("not_placeholder", "<your password>", {}, False),
    ("not_placeholder", "${DB_PASSWORD}", {}, False),
    ("not_placeholder", "$DB_PASSWORD", {}, False),
    ("not_placeholder", "{{ secret }}", {}, False),
    ("not_placeholder", "%(password)s", {}, False),
    ("not_placeholder", "********", {}, False),
    ("not_placeholder", "xxxxxxxx", {}, False),
    ("not_placeholder", "abc1", {}, False),  # shorter than min_length 6
    ("not_placeholder", "abc1", {"min_length": 4}, True),
    ("not_placeholder", "incorrect", {"min_char_classes": 2}, False),  # letters only
    ("not_placeholder", "hunter2", {"min_char_classes": 2}, True),
    ("not_placeholder", "your_api_key_here", {"placeholder_substrings": ["your"]}, False),
    ("not_placeholder", "AKIAIOSFODNN7EXAMPLE", {"placeholder_substrings": ["example"]}, False),
]


@pytest.mark.parametrize(
    ("name", "value", "args", "expected"),
    CASES,
    ids=[f"{n}:{v}:{'ok' if e else 'no'}" for n, v, _, e in CASES],
)
def test_validator(name: str, value: str, args: dict[str, Any], expected: bool) -> None:
    assert VALIDATORS[name](value, args) is expected


def test_every_registered_validator_has_valid_and_invalid_cases() -> None:
    covered = {(name, expected) for name, _, _, expected in CASES}
    for name in VALIDATORS:
        assert (name, True) in covered and (name, False) in covered, name


def test_registering_a_name_twice_fails_loudly() -> None:
    with pytest.raises(ValueError, match="already registered"):
        register("luhn")(lambda value, args: True)
