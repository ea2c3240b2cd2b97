"""A dependency-free grayscale PNG encoder for image test cases (bytes in memory)."""

from __future__ import annotations

import struct
import zlib

import numpy as np

#: A small image's panel is scaled up by an integer factor (nearest neighbour: each pixel
#: becomes a square block, no blur) until its shorter side is at least this many pixels...
PANEL_MIN = 96
#: ... unless that would take its longer side past this; an image this big is not scaled.
PANEL_MAX = 512
#: Pixels of mid-grey between the panels of a seed | case | difference strip.
GAP = 4


def to_gray8(image: np.ndarray, value_range: tuple[float, float] = (0.0, 1.0)) -> np.ndarray:
    """Scale a 2-D array from ``value_range`` to uint8."""
    lo, hi = value_range
    span = hi - lo if hi > lo else 1.0
    scaled = (np.asarray(image, np.float64) - lo) / span * 255.0
    return np.clip(np.round(scaled), 0, 255).astype(np.uint8)


def upscale_factor(shape: tuple[int, ...]) -> int:
    """The integer factor a panel of ``shape`` (height, width) is drawn at: the smallest that
    makes its shorter side at least PANEL_MIN, capped so its longer side stays within
    PANEL_MAX (at least 1: a big image keeps its size)."""
    short, long = max(1, min(shape[:2])), max(1, max(shape[:2]))
    return max(1, min(-(-PANEL_MIN // short), PANEL_MAX // long))


def upscale(gray: np.ndarray, factor: int) -> np.ndarray:
    """Each pixel as a ``factor`` x ``factor`` block (nearest neighbour)."""
    gray = np.asarray(gray)
    return gray if factor == 1 else gray.repeat(factor, axis=0).repeat(factor, axis=1)


def png_bytes(gray: np.ndarray, scale: int = 1, level: int = 6) -> bytes:
    """A uint8 2-D array as an 8-bit grayscale PNG, each pixel ``scale`` x ``scale``,
    compressed at zlib ``level`` (6, zlib's default: 9 took 6x the time for 6% less)."""
    gray = upscale(np.asarray(gray, np.uint8), scale)
    height, width = gray.shape
    raw = np.pad(gray, ((0, 0), (1, 0))).tobytes()  # each row after its filter byte, 0

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
        + chunk(b"IDAT", zlib.compress(raw, level))
        + chunk(b"IEND", b"")
    )


def side_by_side(
    seed: np.ndarray, case: np.ndarray, value_range: tuple[float, float]
) -> np.ndarray:
    """Seed, the case and their absolute difference as one uint8 image, GAP grey pixels
    apart, each panel scaled up by ``upscale_factor`` (an 8x8 image: 96x96 panels, a
    28x28 one: 112x112)."""
    a, b = to_gray8(seed, value_range), to_gray8(case, value_range)
    diff = to_gray8(
        np.abs(np.asarray(case, float) - np.asarray(seed, float)),
        (0.0, value_range[1] - value_range[0]),
    )
    factor = upscale_factor(a.shape)
    a, b, diff = (upscale(panel, factor) for panel in (a, b, diff))
    gap = np.full((a.shape[0], GAP), 128, np.uint8)
    return np.concatenate([a, gap, b, gap, diff], axis=1)
