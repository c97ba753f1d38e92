import Foundation
import Testing

@testable import VaultCore

@Suite struct ISO8601TimestampTests {
    /// The same instant formatted by Foundation, the reference.
    static func reference(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyy-MM-dd'T'HH:mm:ss.SSS'Z'"
        return formatter.string(from: date)
    }

    @Test(arguments: [
        0.0, 951_782_400.0, 951_868_799.5, 1_767_225_600.0, 1_709_164_800.5, 4_107_542_400.0, 4_102_444_799.125,
        1_234_567_890.375, 253_402_300_799.0,
    ])
    func matchesFoundationOnCalendarEdges(seconds: Double) {
        let date = Date(timeIntervalSince1970: seconds)
        #expect(ISO8601Timestamp.format(date) == Self.reference(date))
    }

    @Test func matchesFoundationAcrossManyDays() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2000 {
            // Whole seconds plus an exactly representable fraction, so rounding cannot differ.
            let seconds = Double(Int64.random(in: 0...7_000_000_000, using: &generator))
            let date = Date(timeIntervalSince1970: seconds + [0, 0.25, 0.5, 0.75].randomElement(using: &generator)!)
            #expect(ISO8601Timestamp.format(date) == Self.reference(date))
        }
    }

    @Test func rendersKnownInstants() {
        #expect(ISO8601Timestamp.format(Date(timeIntervalSince1970: 1_767_225_600)) == "2026-01-01T00:00:00.000Z")
        #expect(ISO8601Timestamp.format(Date(timeIntervalSince1970: 951_825_600.25)) == "2000-02-29T12:00:00.250Z")
    }
}
