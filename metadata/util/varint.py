"""Base-128 varints, as protobuf (HFile trailers) and Avro (zig-zag longs) write them."""

from __future__ import annotations


def decode_varint(data: bytes, pos: int) -> tuple[int, int]:
    """An unsigned varint at `pos`: (value, position after it)."""
    result = shift = 0
    while True:
        if pos >= len(data):
            raise ValueError("varint runs past the end of its buffer")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise ValueError("varint longer than 10 bytes")


def decode_zigzag_long(data: bytes, pos: int) -> tuple[int, int]:
    """An Avro long (a zig-zag varint) at `pos`: (value, position after it)."""
    value, pos = decode_varint(data, pos)
    return (value >> 1) ^ -(value & 1), pos
