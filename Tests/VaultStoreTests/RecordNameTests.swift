import Testing

@testable import VaultStore

@Suite struct RecordNameTests {
    static func plain(_ byte: UInt8) -> Bool { byte > 0x20 && byte < 0x7F && byte != 0x2F }

    /// The word test against the byte rule: every byte value at every place of a word of valid bytes, and every pair
    /// of byte values in the two places where a borrow or carry crosses into the neighbour (the lowest two bytes and
    /// the highest two).
    @Test func theWordTestAgreesWithTheByteRule() {
        let filler: [UInt8] = Array("abcdefgh".utf8)
        for place in 0..<8 {
            for value in 0...255 {
                var bytes = filler
                bytes[place] = UInt8(value)
                let word = bytes.withUnsafeBytes { $0.loadUnaligned(as: UInt64.self) }
                #expect(RecordName.isPrintableWithoutSlash(word: word) == Self.plain(UInt8(value)), "\(place) \(value)")
            }
        }
        for (low, high) in [(0, 1), (6, 7)] {
            for first in 0...255 {
                for second in 0...255 {
                    var bytes = filler
                    bytes[low] = UInt8(first)
                    bytes[high] = UInt8(second)
                    let word = bytes.withUnsafeBytes { $0.loadUnaligned(as: UInt64.self) }
                    let expected = Self.plain(UInt8(first)) && Self.plain(UInt8(second))
                    if RecordName.isPrintableWithoutSlash(word: word) != expected {
                        Issue.record("bytes \(low)=\(first) \(high)=\(second)")
                        return
                    }
                }
            }
        }
    }

    @Test func namesOfEveryLengthAreCheckedToTheirLastByte() throws {
        for length in 1...RecordName.maximumLength {
            let name = String(repeating: "k", count: length)
            try RecordName.validate(name, what: "id")
            for place in [0, length / 2, length - 1] {
                for bad: UInt8 in [0x00, 0x20, 0x2F, 0x7F, 0x80, 0xFF] {
                    var bytes = Array(name.utf8)
                    bytes[place] = bad
                    #expect(throws: StoreError.self) {
                        try RecordName.validate(String(decoding: bytes, as: UTF8.self), what: "id")
                    }
                }
            }
        }
        #expect(throws: StoreError.self) { try RecordName.validate("", what: "id") }
        #expect(throws: StoreError.self) {
            try RecordName.validate(String(repeating: "k", count: RecordName.maximumLength + 1), what: "id")
        }
        #expect(throws: StoreError.self) { try RecordName.validate("cardé", what: "id") }
        try RecordName.validate("cli_1:card:0123456789abcdef:000001733300000:payin_42~!", what: "id")
    }
}
