"""A dependency-free grayscale PNG encoder for image test cases (bytes in memory)."""

from __future__ import annotations

import struct
import zlib

import numpy as np


def to_gray8(image: np.ndarray, value_range: tuple[float, float] = (0.0, 1.0)) -> np.ndarray:
    """Scale a 2-D array from ``value_range`` to uint8."""
    lo, hi = value_range
    span = hi - lo if hi > lo else 1.0
    scaled = (np.asarray(image, np.float64) - lo) / span * 255.0
    return np.clip(np.round(scaled), 0, 255).astype(np.uint8)


def png_bytes(gray: np.ndarray, scale: int = 4) -> bytes:
    """A uint8 2-D array as an 8-bit grayscale PNG, each pixel ``scale`` x ``scale``."""
    gray = np.kron(np.asarray(gray, np.uint8), np.ones((scale, scale), np.uint8))
    height, width = gray.shape
    raw = b"".join(b"\x00" + gray[row].tobytes() for row in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data))
            + kind
            + data
            + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
        )

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(raw, 9))
        + chunk(b"IEND", b"")
    )


def side_by_side(
    seed: np.ndarray, case: np.ndarray, value_range: tuple[float, float]
) -> np.ndarray:
    """Seed, a 2-pixel gap, the case, and their absolute difference, as one uint8 image."""
    a, b = to_gray8(seed, value_range), to_gray8(case, value_range)
    diff = to_gray8(
        np.abs(np.asarray(case, float) - np.asarray(seed, float)),
        (0.0, value_range[1] - value_range[0]),
    )
    gap = np.full((a.shape[0], 2), 128, np.uint8)
    return np.concatenate([a, gap, b, gap, diff], axis=1)
