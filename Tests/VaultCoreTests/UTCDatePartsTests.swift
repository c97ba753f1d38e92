import Foundation
import Testing
import VaultCore

@Suite struct UTCDatePartsTests {
    @Test(arguments: [
        Int64(0), -1, 951_782_400, 951_868_799, 1_709_164_800, 4_107_542_399, -2_208_988_800, 1_767_225_599,
    ])
    func fieldsMatchFoundationsGregorianCalendar(seconds: Int64) {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let expected = calendar.dateComponents(
            [.year, .month, .day, .weekday, .hour, .minute, .second], from: Date(timeIntervalSince1970: Double(seconds))
        )
        let parts = UTCDateParts(unixSeconds: seconds)
        #expect(parts.year == expected.year && parts.month == expected.month && parts.day == expected.day)
        #expect(parts.weekday == expected.weekday! - 1)
        #expect(parts.secondOfDay == expected.hour! * 3600 + expected.minute! * 60 + expected.second!)
    }
}
