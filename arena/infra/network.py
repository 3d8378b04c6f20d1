"""Networks, never addresses: the keyed hash rate limits and HYPE's retry rule key on.

A person who wants many identities usually has one network: limits that count per network
make a new identity cost more than one request. The address itself is never stored; only
an HMAC (keyed from ``SECRET_KEY``) of its network prefix, which cannot be turned back into
the address and changes with the key.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import re

from arena.infra.secrets import derived_key

IPV4_PREFIX = 24  # a home or office NAT, a small hosting block
IPV6_PREFIX = 48  # what one site or customer is given


# the common case without ipaddress (which took 7.8 of network_hash's 12.6 us): a dotted
# quad as ipaddress reads one, each part 0-255 in decimal without leading zeros
_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
_DOTTED_QUAD = re.compile(rf"({_OCTET}\.{_OCTET}\.{_OCTET})\.{_OCTET}")


def network_of(address: str | None) -> str:
    """The network an address belongs to, as text (``203.0.113.0/24``); "unknown" when
    there is no address or it cannot be read."""
    quad = _DOTTED_QUAD.fullmatch((address or "").strip())
    if quad is not None:
        return f"{quad[1]}.0/{IPV4_PREFIX}"
    return _parsed_network(address)


def _parsed_network(address: str | None) -> str:
    try:
        ip = ipaddress.ip_address((address or "").strip())
    except ValueError:
        return "unknown"
    prefix = IPV4_PREFIX if ip.version == 4 else IPV6_PREFIX
    if ip.version == 6 and ip.ipv4_mapped is not None:
        ip, prefix = ip.ipv4_mapped, IPV4_PREFIX
    return str(ipaddress.ip_network(f"{ip}/{prefix}", strict=False))


def network_hash(secret: str, address: str | None) -> str:
    """A keyed hash of the address's network: what limits and records keep."""
    key = derived_key(secret, b"arena networks")
    return hmac.new(key, network_of(address).encode(), hashlib.sha256).hexdigest()[:32]
