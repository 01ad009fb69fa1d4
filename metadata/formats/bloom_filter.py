"""Hudi's bloom filters of record keys, as every base file Hudi writes
carries one in its Parquet footer (`org.apache.hudi.bloomfilter`, type in
`hoodie_bloom_filter_type_code`): `SIMPLE` (one filter) and `DYNAMIC_V0`
(Hudi's bounded dynamic filter, rows of filters), each Base64 of Hadoop's
Writable layout. Keys hash with Hadoop's MurmurHash 2 (Hudi's
`org.apache.hudi.common.util.hash.MurmurHash`), `nbHash` rounds each seeded
with the last, taken modulo the vector size. A filter that cannot be read
answers "might contain" for every key: a file is never ruled out by a
filter this module does not understand.
"""

from __future__ import annotations

import base64
import binascii
import math
import struct
from collections.abc import Mapping
from dataclasses import dataclass

from metadata.errors import HudiFormatError
from metadata.util.text_enum import TextEnum

FOOTER_KEY = b"org.apache.hudi.bloomfilter"
FOOTER_TYPE_KEY = b"hoodie_bloom_filter_type_code"
_VERSION = -1  # Hadoop's Filter.VERSION
_MURMUR = 1  # Hadoop's Hash.MURMUR_HASH (Jenkins, 0, is not read: its files are kept)
_BIT_VALUES = (0x01, 0x02, 0x04, 0x08, 0x10, 0x20, 0x40, 0x80)


class BloomFilterType(TextEnum):
    SIMPLE = "SIMPLE"
    DYNAMIC_V0 = "DYNAMIC_V0"


def _int32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - 0x100000000 if value & 0x80000000 else value


def murmur_hash(data: bytes, seed: int) -> int:
    """Hadoop's MurmurHash.hash(data, data.length, seed): Java int arithmetic,
    tail bytes sign-extended as Java's `(int) byte` does."""
    m, length = 0x5BD1E995, len(data)
    h = (seed ^ length) & 0xFFFFFFFF
    whole = length >> 2
    for i in range(whole):
        k = int.from_bytes(data[4 * i:4 * i + 4], "little")
        k = (k * m) & 0xFFFFFFFF
        k ^= k >> 24
        k = (k * m) & 0xFFFFFFFF
        h = (h * m) & 0xFFFFFFFF
        h ^= k
    left = length - (whole << 2)
    if left:
        signed = [b - 256 if b > 127 else b for b in data[length - left:]]
        if left >= 3:
            h ^= (signed[-3] << 16) & 0xFFFFFFFF
        if left >= 2:
            h ^= (signed[-2] << 8) & 0xFFFFFFFF
        h ^= signed[-1] & 0xFFFFFFFF
        h = (h * m) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * m) & 0xFFFFFFFF
    h ^= h >> 15
    return _int32(h)


@dataclass(frozen=True)
class _Bits:
    nb_hash: int
    vector_size: int
    bits: bytes

    def might_contain(self, key: bytes) -> bool:
        seed = 0
        for _ in range(self.nb_hash):
            seed = murmur_hash(key, seed)
            position = abs(int(seed - int(seed / self.vector_size) * self.vector_size))  # Java's % truncates toward zero
            if not self.bits[position >> 3] & _BIT_VALUES[position & 7]:
                return False
        return True


@dataclass(frozen=True)
class BloomFilter:
    """One file's record-key filter: a key it says is absent is absent."""

    rows: tuple[_Bits, ...]  # a dynamic filter's rows; a key may be in any

    def might_contain(self, key: str) -> bool:
        data = key.encode("utf-8")
        return not data or any(row.might_contain(data) for row in self.rows)


class _Reader:
    def __init__(self, data: bytes, where: str) -> None:
        self.data, self.offset, self.where = data, 0, where

    def take(self, size: int) -> bytes:
        if self.offset + size > len(self.data):
            raise HudiFormatError(self.where, f"bloom filter ends at byte {len(self.data)}, {size} more needed at {self.offset}")
        chunk = self.data[self.offset:self.offset + size]
        self.offset += size
        return chunk

    def int32(self) -> int:
        return int(struct.unpack(">i", self.take(4))[0])

    def filter_header(self) -> tuple[int, int, int]:
        """(nbHash, hashType, vectorSize) of Hadoop's Filter.write."""
        version = self.int32()
        if version > 0:  # the old unversioned layout: Jenkins hash
            return version, 0, self.int32()
        if version != _VERSION:
            raise HudiFormatError(self.where, f"bloom filter version {version} is not known")
        nb_hash = self.int32()
        hash_type = self.take(1)[0]
        return nb_hash, hash_type, self.int32()

    def bits(self) -> _Bits | None:
        nb_hash, hash_type, vector_size = self.filter_header()
        if nb_hash <= 0 or vector_size <= 0:
            raise HudiFormatError(self.where, f"bloom filter with {nb_hash} hashes over {vector_size} bits")
        bits = self.take((vector_size + 7) // 8)
        return _Bits(nb_hash, vector_size, bits) if hash_type == _MURMUR else None


def decode_bloom_filter(text: str | bytes, type_code: str | None, where: str) -> BloomFilter | None:
    """The filter Hudi serialised (Base64 text), or None where its hash is not
    Murmur (the file is then kept). Damage is an error naming `where`."""
    try:
        data = base64.b64decode(text, validate=False)
    except (binascii.Error, ValueError) as exc:
        raise HudiFormatError(where, f"bloom filter is not Base64 ({exc})") from None
    reader = _Reader(data, where)
    kind = (type_code or BloomFilterType.SIMPLE.value).strip().upper()
    if kind == BloomFilterType.SIMPLE.value:
        row = reader.bits()
        return None if row is None else BloomFilter((row,))
    if kind.startswith("DYNAMIC"):
        _, hash_type, _ = reader.filter_header()
        reader.int32()  # nr: keys per row
        reader.int32()  # keys in the current row
        count = reader.int32()
        if count <= 0:
            raise HudiFormatError(where, f"dynamic bloom filter with {count} rows")
        rows = [reader.bits() for _ in range(count)]
        if hash_type != _MURMUR or any(r is None for r in rows):
            return None
        return BloomFilter(tuple(r for r in rows if r is not None))
    raise HudiFormatError(where, f"bloom filter type {type_code!r} is not known (SIMPLE, DYNAMIC_V0)")


@dataclass(frozen=True)
class SerializedBloomFilter:
    """A filter as Hudi serialised it: its type code and Base64 text."""

    type_code: str
    text: str

    def decode(self, where: str) -> BloomFilter | None:
        return decode_bloom_filter(self.text, self.type_code, where)


# Hudi's defaults: hoodie.index.bloom.num_entries, hoodie.index.bloom.fpp, hoodie.bloom.index.filter.dynamic.max.entries.
DEFAULT_ENTRIES = 60_000
DEFAULT_ERROR_RATE = 0.000000001
DEFAULT_MAX_ENTRIES = 100_000


def build_bloom_filter(keys: list[str], entries: int = DEFAULT_ENTRIES, error_rate: float = DEFAULT_ERROR_RATE,
                       kind: BloomFilterType = BloomFilterType.DYNAMIC_V0) -> SerializedBloomFilter:
    """The filter Hudi's writer puts in a base file's footer for these keys,
    serialised as Hudi does: sized as Hudi's SimpleBloomFilter /
    HoodieDynamicBoundedBloomFilter size theirs, Hadoop's Writable layout, Base64."""
    vector_size = math.ceil(entries * (-math.log(error_rate) / (math.log(2) ** 2)))
    nb_hash = math.ceil(math.log(2) * vector_size / entries)
    rows = [bytearray((vector_size + 7) // 8)]
    in_row = 0
    for key in keys:
        if kind is BloomFilterType.DYNAMIC_V0 and in_row >= entries:
            rows.append(bytearray((vector_size + 7) // 8))
            in_row = 0
        seed, data = 0, key.encode("utf-8")
        for _ in range(nb_hash):
            seed = murmur_hash(data, seed)
            position = abs(int(seed - int(seed / vector_size) * vector_size))
            rows[-1][position >> 3] |= _BIT_VALUES[position & 7]
        in_row += 1

    def filter_bytes(bits: bytearray) -> bytes:
        return struct.pack(">iibi", _VERSION, nb_hash, _MURMUR, vector_size) + bytes(bits)

    if kind is BloomFilterType.SIMPLE:
        data = filter_bytes(rows[0])
    else:
        data = (struct.pack(">iibi", _VERSION, nb_hash, _MURMUR, vector_size) + struct.pack(">iii", entries, in_row, len(rows))
                + b"".join(filter_bytes(r) for r in rows))
    return SerializedBloomFilter(kind.value, base64.b64encode(data).decode("ascii"))


def footer_filter_text(footer: Mapping[bytes, bytes] | None) -> SerializedBloomFilter | None:
    """The filter in a Parquet footer's key-value metadata as stored, or None
    without one. A footer without a type code holds a SIMPLE filter (Hudi's
    ParquetUtils reads it so)."""
    if not footer or FOOTER_KEY not in footer:
        return None
    type_code = footer.get(FOOTER_TYPE_KEY)
    return SerializedBloomFilter(type_code.decode("utf-8", "replace").strip() if type_code else BloomFilterType.SIMPLE.value,
                                 footer[FOOTER_KEY].decode("utf-8", "replace"))


def footer_bloom_filter(footer: Mapping[bytes, bytes] | None, where: str) -> BloomFilter | None:
    """The filter in a Parquet footer's key-value metadata, or None without one."""
    found = footer_filter_text(footer)
    return None if found is None else found.decode(where)
