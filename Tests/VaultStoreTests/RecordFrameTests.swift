import Testing
import VaultCrypto

@testable import VaultStore

/// The frame and AAD layouts are an on-disk format: stores written by earlier builds must keep
/// opening. These tests pin the bytes the layout in ``RecordFrame`` documents.
@Suite struct RecordFrameTests {
    @Test func theAuthenticatedDataHasTheDocumentedBytes() {
        let aad = withBytes("cards") { collection in
            withBytes("c_1") { id in
                RecordFrame.authenticatedData(
                    kind: .put, collection: collection, id: id, keyVersion: 0x0102_0304, recordVersion: 0x0A0B)
            }
        }
        let expected: [UInt8] =
            Array("cvr1".utf8) + [1] + [4, 3, 2, 1] + [0x0B, 0x0A, 0, 0, 0, 0, 0, 0] + [5] + Array("cards".utf8) + [3]
            + Array("c_1".utf8)
        #expect(aad == expected)
    }

    @Test func aSealedPutFrameHasTheDocumentedHeaderAndOpensWithItsAAD() throws {
        let key = SymmetricKey(copying: [UInt8](repeating: 7, count: 32))
        let value: [UInt8] = Array("a record value".utf8)
        var bytes: [UInt8] = [0xEE]  // a frame is appended after what the buffer already holds
        try withBytes("cards") { collection in
            try withBytes("c_1") { id in
                try value.withUnsafeBytes { valueBytes in
                    try RecordFrame.appendPut(
                        to: &bytes, flags: RecordFrame.startOfBatch | RecordFrame.endOfBatch, collection: collection,
                        id: id, keyVersion: 3, recordVersion: 9, value: valueBytes, key: key)
                }
            }
        }
        #expect(bytes[0] == 0xEE)
        let frame = Array(bytes[1...])
        let length = RecordFrame.fixedHeaderSize + 5 + 3 + AESGCM.overhead + value.count + RecordFrame.trailerSize
        #expect(frame.count == length)
        #expect(Array(frame[0..<20]) == [UInt8(length), 0, 0, 0, 1, 3, 5, 3, 3, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0])
        #expect(Array(frame[24..<32]) == Array("cardsc_1".utf8))

        let header = try frame.withUnsafeBytes { raw -> RecordFrame.Header in
            guard case .valid(let header) = RecordFrame.parse(raw) else {
                Issue.record("the frame does not parse")
                throw StoreError(.corrupted, "unparsable")
            }
            return header
        }
        #expect(header.kind == .put && header.keyVersion == 3 && header.recordVersion == 9)
        let aad = withBytes("cards") { collection in
            withBytes("c_1") { id in
                RecordFrame.authenticatedData(
                    kind: .put, collection: collection, id: id, keyVersion: 3, recordVersion: 9)
            }
        }
        let opened = try AESGCM.open(Array(frame[header.sealedRange]), using: key, authenticating: aad)
        #expect(opened.withUnsafeBytes { Array($0) } == value)
        // The same bytes under another record version do not open.
        let otherAAD = withBytes("cards") { collection in
            withBytes("c_1") { id in
                RecordFrame.authenticatedData(
                    kind: .put, collection: collection, id: id, keyVersion: 3, recordVersion: 10)
            }
        }
        #expect(throws: (any Error).self) {
            try AESGCM.open(Array(frame[header.sealedRange]), using: key, authenticating: otherAAD)
        }
    }

    /// Same cause as the fuzz-index-checkpoint finding: a frame whose CRCs hold but whose id is not UTF-8 was
    /// taken in with its id decoded to replacement characters (another id than the frame's, and up to three
    /// times longer). The writer writes UTF-8 only, so such bytes are no frame: recovery treats them as damage.
    @Test func aFrameWhoseNamesAreNotUTF8IsInvalid() throws {
        func frame(id: [UInt8]) -> [UInt8] {
            var bytes: [UInt8] = []
            withBytes("cards") { collection in
                id.withUnsafeBytes { id in
                    RecordFrame.append(
                        to: &bytes, kind: .delete, flags: RecordFrame.startOfBatch | RecordFrame.endOfBatch,
                        collection: collection, id: id, keyVersion: 0, recordVersion: 1,
                        sealed: UnsafeRawBufferPointer(start: nil, count: 0))
                }
            }
            return bytes
        }
        let good = frame(id: Array("c_é".utf8))
        guard case .valid = good.withUnsafeBytes({ RecordFrame.parse($0) }) else {
            Issue.record("a UTF-8 id does not parse")
            return
        }
        for id: [UInt8] in [[0xFF], [0x63, 0xC3], [0xED, 0xA0, 0x80]] {
            let bad = frame(id: id)
            guard case .invalid = bad.withUnsafeBytes({ RecordFrame.parse($0) }) else {
                Issue.record("id \(id) is taken as a frame")
                continue
            }
        }
    }
}
