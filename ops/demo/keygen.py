#!/usr/bin/env python3
# ops/demo/keygen.py N - N fresh Ed25519 key pairs as Stellar strkeys, one
# "S...seed G...address" pair a line, from os.urandom. Plain python3 (RFC 8032
# scalar multiplication; strkey = base32(version | key | CRC16-XModem)) so the
# demo needs no Stellar SDK.
import base64, hashlib, os, sys
P = 2**255 - 19
D = -121665 * pow(121666, P - 2, P) % P
def add(a, b):
    x1, y1, z1, t1 = a; x2, y2, z2, t2 = b
    A = (y1 - x1) * (y2 - x2) % P; B = (y1 + x1) * (y2 + x2) % P
    C = 2 * t1 * t2 * D % P; E = 2 * z1 * z2 % P
    e, f, g, h = B - A, E - C, E + C, B + A
    return (e * f % P, g * h % P, f * g % P, e * h % P)
by = 4 * pow(5, P - 2, P) % P
xx = (by * by - 1) * pow(D * by * by + 1, P - 2, P) % P
bx = pow(xx, (P + 3) // 8, P)
if (bx * bx - xx) % P: bx = bx * pow(2, (P - 1) // 4, P) % P
if bx & 1: bx = P - bx
def public(seed):
    a = int.from_bytes(hashlib.sha512(seed).digest()[:32], "little")
    a = a & ((1 << 254) - 8) | (1 << 254)
    q, r = (0, 1, 1, 0), (bx, by, 1, bx * by % P)
    while a:
        if a & 1: q = add(q, r)
        r = add(r, r); a >>= 1
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
if len(sys.argv) != 2 or not sys.argv[1].isdigit() or not 1 <= int(sys.argv[1]) <= 10000:
    sys.exit("usage: keygen.py N (1..10000 key pairs)")
for _ in range(int(sys.argv[1])):
    seed = os.urandom(32)
    print(strkey(18 << 3, seed), strkey(6 << 3, public(seed)))
