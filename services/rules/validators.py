"""Named validators: small pure functions that confirm a pattern match (SPEC §4).

A rule names its validator in YAML (``validator: luhn``); the name resolves through
:data:`VALIDATORS`. Each function takes the matched value and the rule's ``validator_args`` and
returns whether the value is real. Checksums come from python-stdnum and phone numbers from
phonenumbers; nothing here re-implements a published algorithm those libraries provide.
"""

from __future__ import annotations

import base64
import binascii
import ipaddress
import json
from collections.abc import Callable, Mapping
from typing import Any

import phonenumbers
from stdnum import iban, luhn
from stdnum.exceptions import ValidationError as StdnumError
from stdnum.nl import bsn
from stdnum.us import ssn

from services.rules.refdata import VN_PROVINCE_CODES

__all__ = ["DEFAULT_PHONE_REGIONS", "VALIDATORS", "Validator", "register"]

#: Regions whose numbers in national form are found by default (``VIGIL_PHONE_REGIONS``).
DEFAULT_PHONE_REGIONS = ("NL", "VN", "GB", "US")

Validator = Callable[[str, Mapping[str, Any]], bool]
VALIDATORS: dict[str, Validator] = {}


def register(name: str) -> Callable[[Validator], Validator]:
    """Add a validator under ``name``; a second registration of the same name is an error."""

    def deco(fn: Validator) -> Validator:
        if name in VALIDATORS:
            raise ValueError(f"validator {name!r} is already registered")
        VALIDATORS[name] = fn
        return fn

    return deco


def _digits(value: str) -> str:
    return "".join(ch for ch in value if ch.isdigit())


@register("luhn")
def _luhn(value: str, args: Mapping[str, Any]) -> bool:
    """Payment card numbers: 13–19 digits (``min_digits`` / ``max_digits``) passing Luhn."""
    digits = _digits(value)
    low, high = int(args.get("min_digits", 13)), int(args.get("max_digits", 19))
    if not low <= len(digits) <= high or len(set(digits)) == 1:
        return False
    return bool(luhn.is_valid(digits))


@register("iban")
def _iban(value: str, args: Mapping[str, Any]) -> bool:
    """IBAN: country format and ISO 13616 mod-97 check (python-stdnum)."""
    return bool(iban.is_valid(value))


@register("nl_bsn")
def _nl_bsn(value: str, args: Mapping[str, Any]) -> bool:
    """Dutch citizen service number: 9 digits passing the 11-check; 000000000 is not a BSN."""
    digits = _digits(value)
    if len(digits) != 9 or digits == "0" * 9:
        return False
    return bool(bsn.is_valid(digits))


@register("us_ssn")
def _us_ssn(value: str, args: Mapping[str, Any]) -> bool:
    """US SSN: area not 000/666/9xx, group not 00, serial not 0000, no advertised numbers.

    Separators are the pattern's business: ``078 05 1123`` and ``078.05.1123`` are checked as
    ``078051123`` (python-stdnum itself only strips dashes).
    """
    digits = _digits(value)
    if len(digits) != 9:
        return False
    try:
        ssn.validate(digits)
    except StdnumError:
        return False
    return True


@register("vn_cccd")
def _vn_cccd(value: str, args: Mapping[str, Any]) -> bool:
    """Vietnamese citizen identity card (CCCD): 12 digits.

    Digits 1–3 are a province code from the published list, digit 4 encodes century and sex
    (0–9), digits 5–6 the birth year. Numbers with a province code outside the list are rejected.
    """
    digits = _digits(value)
    return len(digits) == 12 and digits[:3] in VN_PROVINCE_CODES and digits[3:] != "0" * 9


@register("phone")
def _phone(value: str, args: Mapping[str, Any]) -> bool:
    """A valid phone number (phonenumbers) for one of ``args['regions']``, or in international
    form: ``+`` or ``00`` (the ITU international prefix, dialled from most countries) and a
    country code, valid for whatever country that is.

    ``strict_grouping: true`` also requires the digits to be grouped as the region writes its
    numbers (phonenumbers' ``Leniency.STRICT_GROUPING``): ``030 1234567`` is a Berlin number,
    the date ``06-03-2024`` is not, though its digits are valid in Germany.
    """
    value = value.strip()
    bare = value.lstrip("( ")  # "(+31) 6 1234 5678"
    international = bare.startswith(("+", "00"))
    if bare.startswith("00"):
        value = "+" + bare[2:]
    regions = args.get("regions") or DEFAULT_PHONE_REGIONS
    candidates = [None] if international else list(regions)
    strict = bool(args.get("strict_grouping"))
    for region in candidates:
        try:
            number = phonenumbers.parse(value, region)
        except phonenumbers.NumberParseException:
            continue
        if phonenumbers.is_valid_number(number):
            allowed = args.get("regions")
            if not (international or not allowed) and (
                phonenumbers.region_code_for_number(number) not in allowed
            ):
                continue
            if strict and not _grouped_as_written(value, region):
                continue
            return True
    return False


def _grouped_as_written(value: str, region: str | None) -> bool:
    """Whether phonenumbers finds ``value``, whole, with the region's own digit grouping."""
    matcher = phonenumbers.PhoneNumberMatcher(
        value, region or "ZZ", leniency=phonenumbers.Leniency.STRICT_GROUPING
    )
    return any(m.start == 0 and m.end == len(value) for m in matcher)


@register("ipv4")
def _ipv4(value: str, args: Mapping[str, Any]) -> bool:
    """A well-formed IPv4 address; version-like strings (1.2.3.4 in 'v1.2.3.4') are the
    pattern's job. Loopback and unspecified addresses are not personal data."""
    try:
        addr = ipaddress.IPv4Address(value)
    except ValueError:
        return False
    return not (addr.is_loopback or addr.is_unspecified)


@register("ipv6")
def _ipv6(value: str, args: Mapping[str, Any]) -> bool:
    try:
        addr = ipaddress.IPv6Address(value)
    except ValueError:
        return False
    return not (addr.is_loopback or addr.is_unspecified)


@register("jwt")
def _jwt(value: str, args: Mapping[str, Any]) -> bool:
    """A JSON Web Token: the first segment decodes to a JSON object with an ``alg`` member."""
    head = value.split(".", 1)[0]
    try:
        decoded = base64.urlsafe_b64decode(head + "=" * (-len(head) % 4))
        obj = json.loads(decoded)
    except (binascii.Error, ValueError):
        return False
    return isinstance(obj, dict) and "alg" in obj


@register("not_placeholder")
def _not_placeholder(value: str, args: Mapping[str, Any]) -> bool:
    """Reject obvious placeholders in secret assignments (``password=changeme``, ``<token>``).

    Args: ``placeholders`` (whole values), ``placeholder_substrings`` (``your``, ``example``...),
    ``min_length`` (default 6) and ``min_char_classes`` (default 1): how many of letters, digits
    and other characters the value must mix, so ``password is incorrect`` is not a password.
    """
    v = value.strip().strip("'\"")
    low = v.lower()
    placeholders = {str(p).lower() for p in args.get("placeholders", [])}
    if (
        low in placeholders
        or low.startswith(("<", "${", "{{", "%(", "%s"))
        or (low.startswith("$") and low[1:].replace("_", "a").isalnum())  # $ENV_VAR
        or set(low) <= {"*", "x", "."}
        or any(str(sub).lower() in low for sub in args.get("placeholder_substrings", []))
    ):
        return False
    classes = (
        any(ch.isalpha() for ch in v)
        + any(ch.isdigit() for ch in v)
        + any(not ch.isalnum() for ch in v)
    )
    return len(v) >= int(args.get("min_length", 6)) and classes >= int(
        args.get("min_char_classes", 1)
    )
