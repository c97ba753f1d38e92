import Foundation
import Testing
import VaultStore

@testable import VaultStorePostgres

/// Statement parameters go to libpq in PostgreSQL's binary wire form, written into one buffer sized beforehand
/// (`PostgresValue.encodedCount`): integers big-endian, text as its UTF-8 bytes, arrays as `array_send` writes them.
/// And the authenticated data of a sealed value keeps its layout.
@Suite struct PostgresWireFormTests {
    private func int32(_ value: Int32) -> [UInt8] { PostgresValue.bigEndian(value) }
    private func int64(_ value: Int64) -> [UInt8] { PostgresValue.bigEndian(value) }

    /// An `array_send` head: one dimension (none when empty), no nulls, the element type, then length and lower
    /// bound 1.
    private func arrayHead(type: Int32, count: Int32) -> [UInt8] {
        count == 0
            ? int32(0) + int32(0) + int32(type)
            : int32(1) + int32(0) + int32(type) + int32(count) + int32(1)
    }

    @Test func eachKindHasPostgreSQLsBinaryForm() {
        let cases: [(PostgresValue, [UInt8])] = [
            (.int32(-2), [0xFF, 0xFF, 0xFF, 0xFE]),
            (.int64(0x0102_0304_0506_0708), [1, 2, 3, 4, 5, 6, 7, 8]),
            (.text("café"), Array("café".utf8)),
            (.text(""), []),
            (.bytes([0, 255, 7]), [0, 255, 7]),
            (.textArray(["ab", "é"]), arrayHead(type: 25, count: 2) + int32(2) + [97, 98] + int32(2) + [0xC3, 0xA9]),
            (.textArray([]), arrayHead(type: 25, count: 0)),
            (.int64Array([1, -1]), arrayHead(type: 20, count: 2) + int32(8) + int64(1) + int32(8) + int64(-1)),
            (.byteaArray([[9], []]), arrayHead(type: 17, count: 2) + int32(1) + [9] + int32(0)),
            (.byteaArray([]), arrayHead(type: 17, count: 0)),
        ]
        for (value, expected) in cases {
            #expect(value.encoded == expected, "\(expected.count) bytes expected")
            #expect(value.encodedCount == expected.count)
        }
    }

    /// Text longer than Swift's small-string form (held on the heap, not inline) is copied whole, alone and in arrays.
    @Test func longTextIsCopiedWhole() {
        let long = String(repeating: "0123456789", count: 40) + "ü"
        #expect(PostgresValue.text(long).encoded == Array(long.utf8))
        #expect(
            PostgresValue.textArray([long, "x"]).encoded == arrayHead(type: 25, count: 2)
                + int32(Int32(long.utf8.count)) + Array(long.utf8) + int32(1) + [120])
    }

    /// The authenticated data every sealed value is bound to: fixed bytes, so that what an older daemon sealed still
    /// opens. "cvp1", the data key version (4 bytes, little-endian), the record version (8), then collection and id
    /// each after its length.
    @Test func sealedValuesAreBoundToAFixedLayout() {
        let aad = PostgresRecordStore.authenticatedData(
            collection: "regs", id: "r1", keyVersion: 0x0102, recordVersion: 0x0304_0506)
        let expected: [UInt8] =
            Array("cvp1".utf8) + [0x02, 0x01, 0, 0] + [0x06, 0x05, 0x04, 0x03, 0, 0, 0, 0] + [4] + Array("regs".utf8)
            + [2] + Array("r1".utf8)
        #expect(aad == expected)
    }

    /// The server reads every kind back as it was sent, several parameters in one statement (each at its own
    /// offset of the shared buffer).
    @Test func theServerReadsEveryKindBackAsSent() async throws {
        let sandbox = try PostgresSandbox(options: { PostgresStoreOptions(uri: $0, poolSize: 1) })
        let rows = try await sandbox.store.store.pool.session { connection in
            try connection.prepare(
                "cv_test_wire",
                """
                SELECT $1::text = 'café ü', $2::bigint = -5, $3::integer = 7, $4::bytea = '\\x00ff',
                       $5::text[] = ARRAY['a', 'é', '']::text[], $6::bigint[] = ARRAY[1, 9007199254740993]::bigint[],
                       $7::bytea[] = ARRAY['\\x01'::bytea, '\\x'::bytea], cardinality($8::text[]) = 0
                """)
            return try connection.run(
                "cv_test_wire",
                [
                    .text("café ü"), .int64(-5), .int32(7), .bytes([0, 255]), .textArray(["a", "é", ""]),
                    .int64Array([1, 9_007_199_254_740_993]), .byteaArray([[1], []]), .textArray([]),
                ])
        }
        #expect(rows.rows.count == 1)
        #expect(rows.rows.first?.map { $0 == [1] } == Array(repeating: true, count: 8))
    }
}

extension PostgresValue {
    /// The binary wire form in a buffer of its own.
    fileprivate var encoded: [UInt8] {
        [UInt8](unsafeUninitializedCapacity: encodedCount) { buffer, count in
            var writer = WireWriter(buffer)
            encode(into: &writer)
            count = writer.offset
        }
    }
}
