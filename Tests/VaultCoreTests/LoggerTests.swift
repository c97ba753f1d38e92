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
