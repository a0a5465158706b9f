#!/usr/bin/env python3
"""tests/chaos/keygen.py N [SEED_HEX_PREFIX]: N Ed25519 keys as Stellar strkeys.

One line per key: "<S... seed> <G... address> <raw seed hex> <raw seed base64>".
The chaos scenarios need all four spellings: the seed for the keys file, the
address for stellar-sim and the enqueues, and the raw forms for the secrets
scan (which looks for every way a seed could leak). Plain python3 (RFC 8032
scalar multiplication; strkey = base32(version | key | CRC16-XModem)), so the
scenarios need no tool the demo does not already need.

With SEED_HEX_PREFIX the seeds are deterministic (sha256(prefix || index)):
the secrets scenario uses known seeds so a failure can name what leaked.
"""
import base64
import hashlib
import os
import sys

P = 2**255 - 19
D = -121665 * pow(121666, P - 2, P) % P


def add(a, b):
    x1, y1, z1, t1 = a
    x2, y2, z2, t2 = b
    A = (y1 - x1) * (y2 - x2) % P
    B = (y1 + x1) * (y2 + x2) % P
    C = 2 * t1 * t2 * D % P
    E = 2 * z1 * z2 % P
    e, f, g, h = B - A, E - C, E + C, B + A
    return (e * f % P, g * h % P, f * g % P, e * h % P)


BY = 4 * pow(5, P - 2, P) % P
XX = (BY * BY - 1) * pow(D * BY * BY + 1, P - 2, P) % P
BX = pow(XX, (P + 3) // 8, P)
if (BX * BX - XX) % P:
    BX = BX * pow(2, (P - 1) // 4, P) % P
if BX & 1:
    BX = P - BX


def public(seed):
    a = int.from_bytes(hashlib.sha512(seed).digest()[:32], "little")
    a = a & ((1 << 254) - 8) | (1 << 254)
    q, r = (0, 1, 1, 0), (BX, BY, 1, BX * BY % P)
    while a:
        if a & 1:
            q = add(q, r)
        r = add(r, r)
        a >>= 1
    zi = pow(q[2], P - 2, P)
    x, y = q[0] * zi % P, q[1] * zi % P
    return (y | (x & 1) << 255).to_bytes(32, "little")


def strkey(version, raw):
    b, crc = bytes([version]) + raw, 0
    for c in b:
        crc ^= c << 8
        for _ in range(8):
            crc = (crc << 1 ^ 0x1021 if crc & 0x8000 else crc << 1) & 0xFFFF
    return base64.b32encode(b + crc.to_bytes(2, "little")).decode()


def main():
    if len(sys.argv) not in (2, 3) or not sys.argv[1].isdigit():
        sys.exit("usage: keygen.py N [SEED_HEX_PREFIX]")
    prefix = bytes.fromhex(sys.argv[2]) if len(sys.argv) == 3 else None
    for i in range(int(sys.argv[1])):
        seed = hashlib.sha256(prefix + i.to_bytes(4, "big")).digest() if prefix else os.urandom(32)
        print(strkey(18 << 3, seed), strkey(6 << 3, public(seed)), seed.hex(),
              base64.b64encode(seed).decode())


if __name__ == "__main__":
    main()
