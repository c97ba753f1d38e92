import Foundation
import Testing

@testable import VaultCore

struct FakePAN: LogRedactable {
    let digits: String
    var redactedLogText: String { String(digits.prefix(6)) + "XXXXXX" + String(digits.suffix(4)) }
}

@Test func jsonLinesCarryLevelMessageAndSortedMetadata() {
    let handler = MemoryLogHandler()
    let clock = ManualClock(Date(timeIntervalSince1970: 1_767_225_600.25))
    let logger = Logger(handler: handler, clock: clock).with(["request_id": "r-1"])
    logger.info("served", ["status": 200, "route": "GET /health"])
    #expect(
        handler.renderedLines == [
            #"{"time":"2026-01-01T00:00:00.250Z","level":"info","msg":"served","request_id":"r-1","route":"GET /health","status":200}"#
        ])
}

@Test func levelsBelowTheMinimumAreDropped() {
    let handler = MemoryLogHandler()
    let logger = Logger(handler: handler, minimumLevel: .warning)
    logger.info("quiet")
    logger.error("loud")
    #expect(handler.all.map(\.message) == ["loud"])
}

@Test func secretsRenderMaskedEverywhere() {
    let secret = Redacted("4970107111111119")
    #expect("\(secret)" == "[REDACTED]")
    #expect(String(describing: secret) == "[REDACTED]")
    #expect(String(reflecting: secret) == "[REDACTED]")
    var dumped = ""
    dump(secret, to: &dumped)
    #expect(!dumped.contains("4970107111111119"))

    let handler = MemoryLogHandler()
    Logger(handler: handler).info(
        "card", ["pan": .masked(FakePAN(digits: "4970107111111119")), "key": .masked(secret)])
    let line = handler.renderedLines.joined()
    #expect(!line.contains("4970107111111119"))
    #expect(line.contains("497010XXXXXX1119"))
}

@Test func controlCharactersAreEscaped() {
    var out = ""
    JSONText.appendString("a\"b\\c\nd\u{1}", to: &out)
    #expect(out == #""a\"b\\c\nd\u0001""#)
}

@Test func byteStringsAreEscapedAsTheTextOnesWhereverTheCharacterFalls() {
    // The byte version skips eight bytes at a time: put each character to escape at every offset of a word and
    // past it, alone and beside others, and compare with the character-by-character `String` version.
    let specials = ["\"", "\\", "\n", "\r", "\t", "\u{0}", "\u{1}", "\u{1F}", "é", "\u{7F}", " ", "~", "☕"]
    for special in specials {
        for offset in 0..<20 {
            for text in [
                String(repeating: "a", count: offset) + special + String(repeating: "b", count: 19 - offset),
                String(repeating: special, count: offset + 1), String(repeating: "x", count: offset) + special,
            ] {
                var bytes: [UInt8] = []
                JSONText.appendString(text, to: &bytes)
                var expected = ""
                JSONText.appendString(text, to: &expected)
                #expect(String(decoding: bytes, as: UTF8.self) == expected, "\(Array(text.utf8))")
            }
        }
    }
}

@Test func aWordNeedsEscapingExactlyWhenOneOfItsBytesDoes() {
    // Every byte value at every place among bytes that need no escape, then every pair of bytes from around the three
    // boundaries (0x20, 0x22, 0x5C) and the high bit at every pair of places.
    func check(_ bytes: [UInt8]) {
        let word = bytes.enumerated().reduce(UInt64(0)) { $0 | UInt64($1.element) << UInt64(8 * $1.offset) }
        let expected = bytes.contains { $0 < 0x20 || $0 == 0x22 || $0 == 0x5C }
        #expect(JSONText.needsEscape(word) == expected, "\(String(word, radix: 16))")
    }
    for filler: UInt8 in [0x41, 0x5D, 0x80, 0xFF] {
        for place in 0..<8 {
            for byte in UInt8.min...UInt8.max {
                var bytes = [UInt8](repeating: filler, count: 8)
                bytes[place] = byte
                check(bytes)
            }
        }
    }
    let interesting: [UInt8] = [0x00, 0x1F, 0x20, 0x21, 0x22, 0x23, 0x5B, 0x5C, 0x5D, 0x7F, 0x80, 0xA2, 0xDC, 0xFF]
    for first in 0..<8 {
        for second in 0..<8 where second != first {
            for a in interesting {
                for b in interesting {
                    var bytes = [UInt8](repeating: 0x41, count: 8)
                    bytes[first] = a
                    bytes[second] = b
                    check(bytes)
                }
            }
        }
    }
}
