"""XXH3's secret and the host-side constants of the hashing kernels (no Numba, no CuPy).

Shared by the CPU kernels (``cpu/transforms.py``) and the CUDA launchers
(``cuda/transforms.py``), so the launchers import neither Numba nor the CPU kernels. The
hash is XXH3-64 (``XXH3_64bits_withSeed`` of Yann Collet's xxHash,
https://github.com/Cyan4973/xxHash, v0.8).
"""

from __future__ import annotations

import numpy as np

__all__ = ["K_4TO8", "MASK64", "SECRET", "divider", "int_bitflip", "long_secret", "secret64"]

MASK64 = (1 << 64) - 1

#: XXH3's default 192-byte secret (``XXH3_kSecret``).
SECRET = np.frombuffer(bytes.fromhex(
    "b8fe6c3923a44bbe7c01812cf721ad1cded46de9839097db7240a4a4b7b3671f"
    "cb79e64eccc0e578825ad07dccff7221b8084674f743248ee03590e6813a264c"
    "3c2852bb91c300cb88d0658b1b532ea371644897a20df94e3819ef46a9deacd8"
    "a8fa763fe39c343ff9dcbbc7c70b4f1d8a51e04bcdb45931c89f7ec9d9787364"
    "eac5ac8334d3ebc3c581a0fffa1363eb170ddd51b7f0da49d316552629d4689e"
    "2b16be587d47a1fc8ff8b8d17ad031ce45cb3a8f95160428afd7fbcabb4b407e"), dtype=np.uint8)


def secret64(i: int) -> int:
    """Return the little-endian 8 bytes of :data:`SECRET` at byte ``i`` as an int."""
    return int.from_bytes(SECRET[i:i + 8].tobytes(), "little")


#: The secret word of the 4-8 byte path (bytes 8 and 16 combined).
K_4TO8 = secret64(8) ^ secret64(16)


def int_bitflip(seed: int) -> np.uint64:
    """Return the seed-dependent constant of XXH3's 4-8 byte path for 8-byte inputs."""
    swapped = int.from_bytes((seed & 0xFFFFFFFF).to_bytes(4, "little"), "big")
    seed ^= swapped << 32
    return np.uint64((K_4TO8 - seed) & MASK64)


def long_secret(seed: int) -> np.ndarray:
    """Return the secret XXH3 uses for inputs above 240 bytes (derived from the seed)."""
    words = SECRET.view("<u8").astype(object)
    words[0::2] = [(int(w) + seed) & MASK64 for w in words[0::2]]
    words[1::2] = [(int(w) - seed) & MASK64 for w in words[1::2]]
    return np.array(words, dtype="<u8").view(np.uint8)


def divider(n: int) -> tuple[np.uint64, np.uint64, np.uint64, int]:
    """``(n, magic, shift, mode)`` with which the kernels compute ``h % n`` exactly.

    libdivide's unsigned 64-bit scheme, without a division instruction: mode 0 when
    ``n`` is a power of two (``h & (n - 1)``); mode 1, ``q = mulhi(magic, h) >> shift``;
    mode 2, the "add" variant ``q = (((h - t) >> 1) + t) >> shift`` with ``t =
    mulhi(magic, h)``; then ``h - q * n``.
    """
    zero = np.uint64(0)
    if n & (n - 1) == 0:
        return np.uint64(n), zero, zero, 0
    log2 = n.bit_length() - 1
    magic, rem = divmod(1 << (64 + log2), n)
    if n - rem < (1 << log2):
        return np.uint64(n), np.uint64(magic + 1), np.uint64(log2), 1
    magic = 2 * magic + (1 if 2 * rem >= n else 0)
    return np.uint64(n), np.uint64((magic + 1) & MASK64), np.uint64(log2), 2
