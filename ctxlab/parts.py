"""Content parts: which ones a message may hold, and what each costs in tokens.

A message's ``content`` is a string or a list of parts. Validation (:mod:`ctxlab.messages`)
and counting (:mod:`ctxlab.tokens`) both ask this module, so they accept exactly the same
parts:

========================  ==================  ===============================================
part                      roles               tokens
========================  ==================  ===============================================
``text``                  every role          the tokens of ``text``
``refusal``               assistant           the tokens of ``refusal``
``image_url``             user                OpenAI's published rule for the gpt-4o family
                                              (:func:`image_tokens`): ``detail="low"`` is
                                              85; ``"high"`` and ``"auto"`` are 85 + 170 per
                                              512-pixel tile of the image scaled to fit
                                              2048 x 2048 and then to a shortest side of 768.
                                              ``image_url`` may also be the URL alone.
                                              The size is read from a ``data:`` URL (PNG,
                                              JPEG, GIF, WebP); for any other URL it is not
                                              known and the part costs ``unknown_image``
                                              (default :data:`UNKNOWN_IMAGE_TOKENS`, the
                                              most an image can cost by this rule: 8 tiles)
``input_audio``           user                10 tokens per second of audio (an estimate:
                                              the rate is not published); the length is read
                                              from a WAV header, else estimated from the
                                              data's size at 128 kbit/s
========================  ==================  ===============================================

``file`` parts are refused by both: a document's cost cannot be known offline; put its text in
a ``text`` part instead.

>>> image_tokens(1024, 1024), image_tokens(1024, 1024, detail="low"), image_tokens(2048, 4096)
(765, 85, 1105)
"""

from __future__ import annotations

import base64
import binascii
import math
import struct
from collections.abc import Callable, Mapping
from typing import Any

from .errors import ConfigError
from .images import image_cost, image_cost_ceiling

__all__ = [
    "PART_ROLES",
    "UNKNOWN_IMAGE_TOKENS",
    "AUDIO_TOKENS_PER_SECOND",
    "image_tokens",
    "image_reference",
    "image_size",
    "part_problem",
    "part_tokens",
]

PART_ROLES: dict[str, tuple[str, ...]] = {
    "text": ("system", "developer", "user", "assistant", "tool"),
    "refusal": ("assistant",),
    "image_url": ("user",),
    "input_audio": ("user",),
}
"""Each content part type ctxlab accepts, and the roles whose messages may hold it."""

UNKNOWN_IMAGE_TOKENS = 1445
"""What an image of unknown size costs at high or auto detail: the most any image can cost by
the gpt-4o rule (85 + 170 x 8 tiles, as a 768 x 2048 image), so that a budget stays safe."""

AUDIO_TOKENS_PER_SECOND = 10
"""The estimate for audio input, in tokens per second."""

IMAGE_BASE_TOKENS = 85
IMAGE_TILE_TOKENS = 170
_DETAILS = ("auto", "low", "high")
_AUDIO_FORMATS = ("wav", "mp3")


def image_tokens(width: int, height: int, detail: str = "auto") -> int:
    """Tokens of one image of ``width`` x ``height`` pixels, by OpenAI's rule for gpt-4o.

    ``detail="low"`` costs 85 whatever the size. Otherwise the image is scaled down to fit in
    2048 x 2048, then down so its shortest side is at most 768, and costs 85 plus 170 for each
    512 x 512 tile it covers (``"auto"`` is counted as ``"high"``, the most it can cost).

    >>> image_tokens(512, 512), image_tokens(4096, 8192)
    (255, 1105)
    """
    if detail not in _DETAILS:
        raise ConfigError(f"detail must be one of {', '.join(_DETAILS)}, got {detail!r}")
    if width <= 0 or height <= 0:
        raise ConfigError(f"an image needs a positive size, got {width} x {height}")
    if detail == "low":
        return IMAGE_BASE_TOKENS
    scale = min(1.0, 2048 / max(width, height))
    w, h = width * scale, height * scale
    scale = min(1.0, 768 / min(w, h))
    w, h = w * scale, h * scale
    tiles = math.ceil(w / 512) * math.ceil(h / 512)
    return IMAGE_BASE_TOKENS + IMAGE_TILE_TOKENS * tiles


def _data_bytes(url: str, limit: int | None = None) -> bytes | None:
    """The bytes of a base64 ``data:`` URL (the first ``limit`` of them), else ``None``."""
    if not url.startswith("data:"):
        return None
    header, _, payload = url.partition(",")
    if ";base64" not in header:
        return None
    if limit is not None:
        payload = payload[: (limit // 3 + 1) * 4]
    try:
        return base64.b64decode(payload + "=" * (-len(payload) % 4))
    except (binascii.Error, ValueError):
        return None


def _jpeg_size(data: bytes) -> tuple[int, int] | None:
    at = 2
    while at + 9 < len(data):
        if data[at] != 0xFF:
            return None
        marker = data[at + 1]
        length = struct.unpack(">H", data[at + 2 : at + 4])[0]
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            height, width = struct.unpack(">HH", data[at + 5 : at + 9])
            return width, height
        at += 2 + length
    return None


def image_size(url: str) -> tuple[int, int] | None:
    """``(width, height)`` of the image in a ``data:`` URL (PNG, JPEG, GIF, WebP), else ``None``.

    >>> png = "data:image/png;base64," + base64.b64encode(
    ...     b"\\x89PNG\\r\\n\\x1a\\n" + b"\\0\\0\\0\\rIHDR" + struct.pack(">II", 640, 480)).decode()
    >>> image_size(png), image_size("https://example.com/cat.png")
    ((640, 480), None)
    """
    data = _data_bytes(url, limit=1 << 16)
    if not data:
        return None
    if data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) >= 24:
        return struct.unpack(">II", data[16:24])
    if data[:6] in (b"GIF87a", b"GIF89a") and len(data) >= 10:
        return struct.unpack("<HH", data[6:10])
    if data[:2] == b"\xff\xd8":
        return _jpeg_size(data)
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP" and len(data) >= 30:
        kind = data[12:16]
        if kind == b"VP8X":
            return 1 + int.from_bytes(data[24:27], "little"), 1 + int.from_bytes(data[27:30], "little")
        if kind == b"VP8 ":
            width, height = struct.unpack("<HH", data[26:30])
            return width & 0x3FFF, height & 0x3FFF
        if kind == b"VP8L":
            bits = int.from_bytes(data[21:25], "little")
            return 1 + (bits & 0x3FFF), 1 + ((bits >> 14) & 0x3FFF)
    return None


def _audio_seconds(data: str, fmt: str) -> float:
    raw = _data_bytes("data:;base64," + data, limit=64) or b""
    if fmt == "wav" and raw[:4] == b"RIFF" and raw[8:12] == b"WAVE" and len(raw) >= 44:
        byte_rate = struct.unpack("<I", raw[28:32])[0]
        if byte_rate:
            size = len(data) * 3 // 4 - 44
            return max(0, size) / byte_rate
    return (len(data) * 3 / 4) / (128_000 / 8)


def part_problem(part: Any, role: str, where: str = "part") -> str | None:
    """What is wrong with one content part of a ``role`` message, or ``None``.

    >>> part_problem({"type": "refusal", "refusal": "I can't help with that."}, "assistant") is None
    True
    >>> part_problem({"type": "image_url", "image_url": {"url": "https://x/y.png"}}, "tool")
    "part: a tool message cannot hold an 'image_url' part (only text); describe the image in a text part"
    """
    if not isinstance(part, Mapping) or not isinstance(part.get("type"), str):
        return f"{where} must be a dict with a 'type', such as {{'type': 'text', 'text': '...'}}"
    kind = part["type"]
    if kind == "file":
        return (
            f"{where}: a 'file' part cannot be counted offline (a document's tokens depend on the "
            "model's own parser); put the document's text in a text part instead"
        )
    if kind not in PART_ROLES:
        return f"{where}: unknown part type {kind!r}; use one of {', '.join(PART_ROLES)}"
    if role not in PART_ROLES[kind]:
        allowed = [k for k, roles in PART_ROLES.items() if role in roles]
        return (
            f"{where}: a {role} message cannot hold an {kind!r} part (only {', '.join(allowed)}); "
            "describe the image in a text part" if kind == "image_url" else
            f"{where}: a {role} message cannot hold an {kind!r} part (only {', '.join(allowed)})"
        )
    if kind in ("text", "refusal") and not isinstance(part.get(kind), str):
        return f"{where}: a {kind} part needs a {kind!r} string"
    if kind == "image_url":
        image = part.get("image_url")
        if isinstance(image, str):  # the shorthand the API also takes: the URL alone, at detail "auto"
            return None
        if not isinstance(image, Mapping) or not isinstance(image.get("url"), str):
            return f"{where}: an image_url part needs 'image_url': {{'url': str, 'detail': 'auto'|'low'|'high'}}"
        if image.get("detail", "auto") not in _DETAILS:
            return f"{where}: image detail must be one of {', '.join(_DETAILS)}, got {image.get('detail')!r}"
    if kind == "input_audio":
        audio = part.get("input_audio")
        if not isinstance(audio, Mapping) or not isinstance(audio.get("data"), str):
            return f"{where}: an input_audio part needs 'input_audio': {{'data': base64 str, 'format': 'wav'|'mp3'}}"
        if audio.get("format") not in _AUDIO_FORMATS:
            return f"{where}: audio format must be one of {', '.join(_AUDIO_FORMATS)}, got {audio.get('format')!r}"
    return None


def image_reference(part: Mapping[str, Any]) -> Mapping[str, Any]:
    """An ``image_url`` part's ``{"url": ..., "detail": ...}``, also when the part gives the URL
    alone (``{"type": "image_url", "image_url": "https://..."}``, a shorthand the API takes).

    >>> image_reference({"type": "image_url", "image_url": "https://x/y.png"})
    {'url': 'https://x/y.png'}
    """
    image = part["image_url"]
    return {"url": image} if isinstance(image, str) else image


def part_tokens(
    part: Mapping[str, Any], encode: Callable[[str], int], unknown_image: int | None = None, model: str | None = None
) -> int:
    """Tokens of one valid content part (the module docstring gives the rule for each type).

    With ``model`` named, an image costs what that model's own rate says
    (:func:`ctxlab.images.image_cost`), and one of unknown size the most it can cost that model
    (:func:`ctxlab.images.image_cost_ceiling`) unless ``unknown_image`` is given.

    >>> part_tokens({"type": "image_url", "image_url": {"url": "https://x/y.png", "detail": "low"}}, len)
    85
    >>> part_tokens({"type": "image_url", "image_url": {"url": "https://x/y.png"}}, len, unknown_image=1_000)
    1000
    >>> part_tokens({"type": "image_url", "image_url": {"url": "https://x/y.png"}}, len, model="gpt-4.1-mini")
    2489
    """
    kind = part.get("type")
    if kind in ("text", "refusal"):
        return encode(part.get(kind, ""))
    if kind == "image_url":
        image = image_reference(part)
        detail = image.get("detail") or "auto"
        if model is not None:
            size = image_size(image["url"])
            if size is None:
                return image_cost_ceiling(model, detail) if unknown_image is None else unknown_image
            return image_cost(model, *size, detail=detail)
        if detail == "low":
            return IMAGE_BASE_TOKENS
        size = image_size(image["url"])
        if size is None:
            return UNKNOWN_IMAGE_TOKENS if unknown_image is None else unknown_image
        return image_tokens(*size, detail=detail)
    if kind == "input_audio":
        audio = part["input_audio"]
        return math.ceil(_audio_seconds(audio["data"], audio.get("format", "wav")) * AUDIO_TOKENS_PER_SECOND)
    raise ConfigError(f"part type {kind!r} cannot be counted; check it with part_problem first")
