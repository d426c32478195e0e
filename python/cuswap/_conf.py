"""CUSWAP_CONF from Python: a budget checked here and written into the variable.

The shim reads CUSWAP_CONF once, when it initialises, and answers a bad value
with a warning and its default, which for the budget means no swapping at
all. So a budget given from Python is checked here first, by the grammar of
docs/configuration.md ("Sizes"), and a bad one is a ValueError.
"""

from __future__ import annotations

import re
from typing import List, Union

ENV_CONF = "CUSWAP_CONF"

_UNIT_BYTES = {"": 1, "b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
_SIZE = re.compile(r"([0-9]+)(?:\.([0-9]+))?[ \t]*(?:([kmgt])(?:i?b)?|(b))?", re.IGNORECASE)
_MAX_BYTES = (1 << 64) - 1


def size_bytes(text: str) -> int:
    """The bytes a size like "12GiB", "1.5G" or "4096" stands for; ValueError if it is not one."""
    match = _SIZE.fullmatch(text.strip())
    if not match:
        raise ValueError(f"{text!r} is not a size (expected a number and a unit, like 12GiB)")
    whole, fraction, unit, plain = match.groups()
    unit_bytes = _UNIT_BYTES[(unit or plain or "").lower()]
    scale = 10 ** len(fraction or "")
    scaled = (int(whole) * scale + int(fraction or "0")) * unit_bytes
    if scaled % scale:
        raise ValueError(f"{text!r} is not a whole number of bytes")
    if scaled // scale > _MAX_BYTES:
        raise ValueError(f"{text!r} is more than 2^64 - 1 bytes")
    return scaled // scale


def budget_value(budget: Union[int, str]) -> str:
    """The CUSWAP_CONF value for a budget: bytes as an int, a size, or "[0:12GiB,1:10GiB]"."""
    if isinstance(budget, bool) or not isinstance(budget, (int, str)):
        raise TypeError(f"budget must be bytes (int) or a size (str) like '12GiB', not {budget!r}")
    if isinstance(budget, int):
        if not 0 < budget <= _MAX_BYTES:
            raise ValueError(f"budget must be a positive number of bytes, not {budget}")
        return str(budget)
    text = budget.strip()
    if text.startswith("[") and text.endswith("]"):  # per device
        for item in text[1:-1].split(","):
            device, colon, size = item.partition(":")
            if not colon or not device.strip().isdigit():
                raise ValueError(f"budget {budget!r}: {item.strip()!r} is not DEVICE:SIZE")
            size_bytes(size)
        return text
    if size_bytes(text) == 0:
        raise ValueError(f"budget must be more than 0 bytes, not {budget!r}")
    return text


def split_pairs(conf: str) -> List[str]:
    """The key:value pairs of a CUSWAP_CONF text, split at the commas outside brackets."""
    pairs, depth, start = [], 0, 0
    for i, c in enumerate(conf):
        if c == "[":
            depth += 1
        elif c == "]" and depth:
            depth -= 1
        elif c == "," and depth == 0:
            pairs.append(conf[start:i])
            start = i + 1
    pairs.append(conf[start:])
    return [p.strip() for p in pairs if p.strip()]


def with_budget(conf: str, value: str) -> str:
    """CUSWAP_CONF text `conf` with its budget pairs replaced by budget:`value`."""
    kept = [p for p in split_pairs(conf) if p.partition(":")[0].strip() != "budget"]
    return ",".join(kept + [f"budget:{value}"])
