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
    var generator = SplitMix64(seed: 0x5EED)
    // Bytes drawn mostly from around the three boundaries (0x20, 0x22, 0x5C) and the high bit.
    let interesting: [UInt8] = [0x00, 0x1F, 0x20, 0x21, 0x22, 0x23, 0x5B, 0x5C, 0x5D, 0x7F, 0x80, 0xA2, 0xDC, 0xFF]
    for _ in 0..<20_000 {
        var word: UInt64 = 0
        var expected = false
        for shift in stride(from: 0, to: 64, by: 8) {
            let byte =
                Bool.random(using: &generator)
                ? interesting.randomElement(using: &generator)! : UInt8.random(in: 0...255, using: &generator)
            word |= UInt64(byte) << UInt64(shift)
            expected = expected || byte < 0x20 || byte == 0x22 || byte == 0x5C
        }
        #expect(JSONText.needsEscape(word) == expected, "\(String(word, radix: 16))")
    }
}

/// A seeded generator (SplitMix64), so that a failing word is met again on the next run.
private struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
