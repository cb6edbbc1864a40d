"""Protocol headers a payload carries on an LTE radio bearer, by packet size.

A payload of ``P`` bytes sent as datagrams of at most ``S`` bytes (``ceil(P/S)``
packets) carries, per packet, the headers of each layer it passes:

=========  =====  ==================================================================
layer      bytes  source
=========  =====  ==================================================================
IPv4       20     RFC 791 (no options); IPv6: 40 (RFC 8200)
UDP        8      RFC 768; TCP: 20 (RFC 9293, no options)
PDCP       2      TS 36.323 §6.2.3 (data PDU, 12-bit sequence number)
RLC UM     2      TS 36.322 §6.2.1.3 (10-bit sequence number, one SDU per PDU)
MAC        2 / 3  TS 36.321 §6.1.2 (subheader with a 7-bit length below 128 bytes,
                  a 15-bit length from 128)
=========  =====  ==================================================================

Segmentation of an RLC SDU over several transport blocks and padding are not
counted (they depend on the grant sizes): ns-3's LENA put 1,035.8 bytes on air per
1,000-byte datagram where these headers give 1,035.
"""

from __future__ import annotations

import math

__all__ = ["HEADER_BYTES", "packet_overhead_bytes", "bytes_on_air"]

#: header sizes [byte] by layer
HEADER_BYTES = {"ipv4": 20, "ipv6": 40, "udp": 8, "tcp": 20, "pdcp": 2, "rlc_um": 2}


def packet_overhead_bytes(datagram_bytes: int, transport: str = "udp", ip: str = "ipv4") -> int:
    """Header bytes one datagram of ``datagram_bytes`` carries down to the MAC."""
    if transport not in ("udp", "tcp") or ip not in ("ipv4", "ipv6"):
        raise ValueError(f"transport {transport!r} / ip {ip!r} (valid: udp, tcp / ipv4, ipv6)")
    above_mac = HEADER_BYTES[ip] + HEADER_BYTES[transport] + HEADER_BYTES["pdcp"]
    above_mac += HEADER_BYTES["rlc_um"]
    sdu = datagram_bytes + above_mac  # the MAC SDU the subheader's length field describes
    return above_mac + (2 if sdu < 128 else 3)


def bytes_on_air(
    payload_bytes: float, datagram_bytes: int, transport: str = "udp", ip: str = "ipv4"
) -> float:
    """Bytes a payload occupies on air: the payload plus every packet's headers."""
    if datagram_bytes < 1:
        raise ValueError(f"datagram_bytes: {datagram_bytes} must be at least 1")
    full, rest = divmod(payload_bytes, datagram_bytes)
    total = payload_bytes + full * packet_overhead_bytes(datagram_bytes, transport, ip)
    if rest > 0:
        total += packet_overhead_bytes(math.ceil(rest), transport, ip)
    return float(total)
