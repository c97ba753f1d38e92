import Foundation
import VaultCrypto

/// The on-disk frame of one record write in a segment file (all integers little-endian):
///
///     0   u32  frame length (header to trailer inclusive)
///     4   u8   kind: 1 put, 2 delete
///     5   u8   flags: bit 0 = last frame of its atomic batch, bit 1 = first frame of it
///     6   u8   collection length      7  u8  id length
///     8   u32  data key version (0 for a delete)
///     12  u64  record version
///     20  u32  header CRC-32C over bytes 0..<20 and the names
///     24  collection, id (ASCII)
///     ..  sealed value: nonce (12) || ciphertext || tag (16)       (puts only)
///     end u32  frame CRC-32C over everything before it
///
/// The value is sealed with AES-256-GCM under the data key of that version, with the kind,
/// collection, id, key version and record version in the AAD, so a frame moved to another id,
/// collection or version fails authentication. The CRCs only tell torn or damaged bytes apart
/// from good ones during recovery; they protect nothing against an attacker.
enum RecordFrame {
    static let fixedHeaderSize = 24
    static let trailerSize = 4
    /// The largest value the store accepts (bigger ones are refused with `.invalidArgument`).
    static let maximumValueSize = 16 << 20
    static let maximumFrameSize = maximumValueSize + 1024

    enum Kind: UInt8 {
        case put = 1
        case delete = 2
    }

    static let endOfBatch: UInt8 = 1
    /// Lets recovery find the next whole batch after damage (see ``SegmentScanner``).
    static let startOfBatch: UInt8 = 2

    /// A parsed frame header.
    struct Header {
        var length: Int
        var kind: Kind
        var flags: UInt8
        var collectionLength: Int
        var idLength: Int
        var keyVersion: UInt32
        var recordVersion: UInt64

        var namesEnd: Int { RecordFrame.fixedHeaderSize + collectionLength + idLength }
        var sealedRange: Range<Int> { namesEnd..<length - RecordFrame.trailerSize }
    }

    /// The additional authenticated data of a record's sealed value.
    static func authenticatedData(
        kind: Kind, collection: UnsafeRawBufferPointer, id: UnsafeRawBufferPointer, keyVersion: UInt32,
        recordVersion: UInt64
    ) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: authenticatedDataSize(collection: collection, id: id)) { buffer, count in
            writeAuthenticatedData(
                into: UnsafeMutableRawBufferPointer(buffer), kind: kind, collection: collection, id: id,
                keyVersion: keyVersion, recordVersion: recordVersion)
            count = buffer.count
        }
    }

    static func authenticatedDataSize(collection: UnsafeRawBufferPointer, id: UnsafeRawBufferPointer) -> Int {
        19 + collection.count + id.count
    }

    /// Appends a complete frame to `output`. `sealed` is empty for a delete.
    static func append(
        to output: inout [UInt8], kind: Kind, flags: UInt8, collection: UnsafeRawBufferPointer,
        id: UnsafeRawBufferPointer, keyVersion: UInt32, recordVersion: UInt64, sealed: UnsafeRawBufferPointer
    ) {
        appendFrame(
            to: &output, kind: kind, flags: flags, collection: collection, id: id, keyVersion: keyVersion,
            recordVersion: recordVersion, sealedCount: sealed.count
        ) { body in
            body.copyMemory(from: sealed)
        }
    }

    /// Appends the complete frame of a put, sealing `value` straight into it (the AAD is built on
    /// the stack), so that sealing allocates nothing beyond the growth of `output`.
    static func appendPut(
        to output: inout [UInt8], flags: UInt8, collection: UnsafeRawBufferPointer, id: UnsafeRawBufferPointer,
        keyVersion: UInt32, recordVersion: UInt64, value: UnsafeRawBufferPointer, key: SymmetricKey,
        random: RandomPool = .shared
    ) throws {
        try appendFrame(
            to: &output, kind: .put, flags: flags, collection: collection, id: id, keyVersion: keyVersion,
            recordVersion: recordVersion, sealedCount: AESGCM.overhead + value.count
        ) { sealed in
            let nonce = UnsafeMutableRawBufferPointer(rebasing: sealed[0..<AESGCM.nonceSize])
            random.fill(nonce)
            let tagStart = AESGCM.nonceSize + value.count
            try withUnsafeTemporaryAllocation(
                byteCount: authenticatedDataSize(collection: collection, id: id), alignment: 8
            ) { aad in
                writeAuthenticatedData(
                    into: aad, kind: .put, collection: collection, id: id, keyVersion: keyVersion,
                    recordVersion: recordVersion)
                try AESGCM.sealDetached(
                    value, key: key, nonce: UnsafeRawBufferPointer(nonce), aad: UnsafeRawBufferPointer(aad),
                    ciphertext: UnsafeMutableRawBufferPointer(rebasing: sealed[AESGCM.nonceSize..<tagStart]),
                    tag: UnsafeMutableRawBufferPointer(rebasing: sealed[tagStart..<tagStart + AESGCM.tagSize]))
            }
        }
    }

    /// Grows `output` by one frame: writes its header and names, lets `fill` write the
    /// `sealedCount` bytes of the sealed value, then the frame CRC.
    private static func appendFrame(
        to output: inout [UInt8], kind: Kind, flags: UInt8, collection: UnsafeRawBufferPointer,
        id: UnsafeRawBufferPointer, keyVersion: UInt32, recordVersion: UInt64, sealedCount: Int,
        fill: (UnsafeMutableRawBufferPointer) throws -> Void
    ) rethrows {
        let start = output.count
        let namesEnd = fixedHeaderSize + collection.count + id.count
        let length = namesEnd + sealedCount + trailerSize
        output.append(contentsOf: repeatElement(0, count: length))
        do {
            try output.withUnsafeMutableBytes { whole in
                let frame = UnsafeMutableRawBufferPointer(rebasing: whole[start..<start + length])
                frame.storeBytes(of: UInt32(length).littleEndian, toByteOffset: 0, as: UInt32.self)
                frame[4] = kind.rawValue
                frame[5] = flags
                frame[6] = UInt8(collection.count)
                frame[7] = UInt8(id.count)
                frame.storeBytes(of: keyVersion.littleEndian, toByteOffset: 8, as: UInt32.self)
                frame.storeBytes(of: recordVersion.littleEndian, toByteOffset: 12, as: UInt64.self)
                UnsafeMutableRawBufferPointer(rebasing: frame[fixedHeaderSize...]).copyMemory(from: collection)
                UnsafeMutableRawBufferPointer(rebasing: frame[(fixedHeaderSize + collection.count)...]).copyMemory(
                    from: id)
                let headerCRC = headerChecksum(UnsafeRawBufferPointer(frame), namesLength: collection.count + id.count)
                frame.storeBytes(of: headerCRC.littleEndian, toByteOffset: 20, as: UInt32.self)
                try fill(UnsafeMutableRawBufferPointer(rebasing: frame[namesEnd..<namesEnd + sealedCount]))
                let body = UnsafeRawBufferPointer(rebasing: frame[0..<length - trailerSize])
                frame.storeBytes(
                    of: CRC32C.checksum(body).littleEndian, toByteOffset: length - trailerSize, as: UInt32.self)
            }
        } catch {
            output.removeLast(length)
            throw error
        }
    }

    /// Writes the AAD of ``authenticatedData(kind:collection:id:keyVersion:recordVersion:)`` into
    /// `output`, which holds exactly ``authenticatedDataSize(collection:id:)`` bytes:
    /// "cvr1", kind, key version (u32), record version (u64), then each name after its length.
    static func writeAuthenticatedData(
        into output: UnsafeMutableRawBufferPointer, kind: Kind, collection: UnsafeRawBufferPointer,
        id: UnsafeRawBufferPointer, keyVersion: UInt32, recordVersion: UInt64
    ) {
        output.storeBytes(of: UInt32(0x3172_7663).littleEndian, toByteOffset: 0, as: UInt32.self)  // "cvr1"
        output[4] = kind.rawValue
        output.storeBytes(of: keyVersion.littleEndian, toByteOffset: 5, as: UInt32.self)
        output.storeBytes(of: recordVersion.littleEndian, toByteOffset: 9, as: UInt64.self)
        output[17] = UInt8(collection.count)
        UnsafeMutableRawBufferPointer(rebasing: output[18...]).copyMemory(from: collection)
        output[18 + collection.count] = UInt8(id.count)
        UnsafeMutableRawBufferPointer(rebasing: output[(19 + collection.count)...]).copyMemory(from: id)
    }

    /// Sets the flags of a complete frame held in `frame` and recomputes both CRCs.
    static func reflag(_ frame: inout [UInt8], flags: UInt8) {
        frame.withUnsafeMutableBytes { bytes in
            bytes[5] = flags
            let namesLength = Int(bytes[6]) + Int(bytes[7])
            bytes.storeBytes(
                of: headerChecksum(UnsafeRawBufferPointer(bytes), namesLength: namesLength).littleEndian,
                toByteOffset: 20,
                as: UInt32.self)
            let body = UnsafeRawBufferPointer(rebasing: bytes[0..<bytes.count - trailerSize])
            bytes.storeBytes(
                of: CRC32C.checksum(body).littleEndian, toByteOffset: bytes.count - trailerSize, as: UInt32.self)
        }
    }

    private static func headerChecksum(_ frame: UnsafeRawBufferPointer, namesLength: Int) -> UInt32 {
        let fixed = CRC32C.checksum(UnsafeRawBufferPointer(rebasing: frame[0..<20]))
        return CRC32C.checksum(
            UnsafeRawBufferPointer(rebasing: frame[fixedHeaderSize..<fixedHeaderSize + namesLength]), seed: fixed)
    }

    /// What a look at `bytes` (starting at a supposed frame) finds.
    enum Parse {
        /// Header and frame checks pass.
        case valid(Header)
        /// The header checks pass but the body's CRC does not: a damaged record.
        case damagedBody(Header)
        /// The bytes end before the frame does.
        case incomplete
        /// The header is not a frame header (damaged, zeros, garbage).
        case invalid
    }

    /// Examines the frame at the start of `bytes`.
    static func parse(_ bytes: UnsafeRawBufferPointer) -> Parse {
        guard bytes.count >= fixedHeaderSize else { return .incomplete }
        let length = Int(UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: 0, as: UInt32.self)))
        guard let kind = Kind(rawValue: bytes[4]), bytes[5] & ~(endOfBatch | startOfBatch) == 0 else { return .invalid }
        let header = Header(
            length: length, kind: kind, flags: bytes[5], collectionLength: Int(bytes[6]), idLength: Int(bytes[7]),
            keyVersion: UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: 8, as: UInt32.self)),
            recordVersion: UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: 12, as: UInt64.self)))
        let minimum = header.namesEnd + trailerSize + (kind == .put ? AESGCM.overhead : 0)
        guard header.collectionLength > 0, header.idLength > 0, length >= minimum, length <= maximumFrameSize,
            kind == .put || length == minimum
        else { return .invalid }
        guard bytes.count >= header.namesEnd else { return .incomplete }
        let storedHeaderCRC = UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: 20, as: UInt32.self))
        guard headerChecksum(bytes, namesLength: header.collectionLength + header.idLength) == storedHeaderCRC,
            isUTF8(UnsafeRawBufferPointer(rebasing: bytes[fixedHeaderSize..<header.namesEnd]))
        else {
            // The writer only writes UTF-8 names: other bytes are no frame of ours (and ``names(_:_:)`` would
            // change them, so the index would hold names that are not the frame's).
            return .invalid
        }
        guard bytes.count >= length else { return .incomplete }
        let storedCRC = UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: length - trailerSize, as: UInt32.self))
        guard CRC32C.checksum(UnsafeRawBufferPointer(rebasing: bytes[0..<length - trailerSize])) == storedCRC else {
            return .damagedBody(header)
        }
        return .valid(header)
    }

    private static func isUTF8(_ bytes: UnsafeRawBufferPointer) -> Bool {
        if !bytes.contains(where: { $0 >= 0x80 }) { return true }
        return String(validating: bytes, as: UTF8.self) != nil
    }

    /// The collection and id of a frame whose header passed its check.
    static func names(_ frame: UnsafeRawBufferPointer, _ header: Header) -> (collection: String, id: String) {
        let collectionEnd = fixedHeaderSize + header.collectionLength
        return (
            String(decoding: frame[fixedHeaderSize..<collectionEnd], as: UTF8.self),
            String(decoding: frame[collectionEnd..<header.namesEnd], as: UTF8.self)
        )
    }

    static func appendInteger<T: FixedWidthInteger>(_ output: inout [UInt8], _ value: T) {
        withUnsafeBytes(of: value.littleEndian) { output.append(contentsOf: $0) }
    }
}
