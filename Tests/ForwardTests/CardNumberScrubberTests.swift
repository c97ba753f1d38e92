import CardKit
import OutboundHTTP
import Testing

@testable import Forward

@Suite struct CardNumberScrubberTests {
    static let visa = "4970107111111119"
    static let mastercard = "5555555555554444"

    private func scrub(_ text: String, sent: [String], vaulted: Set<String> = []) throws -> String {
        let pans = try sent.map { try PAN($0) }
        let bytes = Array(text.utf8)
        return bytes.withUnsafeBufferPointer { buffer in
            var matches = CardNumberScrubber.knownMatches(in: buffer, numbers: pans)
            for candidate in CardNumberScrubber.candidates(in: buffer)
            where vaulted.contains(candidate.pan.unmaskedDigits) || pans.contains(candidate.pan) {
                matches.append(candidate)
            }
            let output = CardNumberScrubber.replacing(matches, in: buffer)
            return output.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
        }
    }

    @Test(arguments: [
        "4970107111111119", "4970 1071 1111 1119", "4970-1071-1111-1119", "4970.1071.1111.1119",
        "4970_1071_1111_1119", "497010 711111 1119",
    ])
    func masksTheSentNumberWithOrWithoutSeparators(_ written: String) throws {
        let answer = #"{"echo":"\#(written)","ok":true}"#
        let scrubbed = try scrub(answer, sent: [Self.visa])
        #expect(scrubbed == #"{"echo":"497010XXXXXX1119","ok":true}"#)
    }

    @Test func masksTheSentNumberInsideALongerDigitRun() throws {
        #expect(try scrub("ref0049701071111111190077", sent: [Self.visa]) == "ref00497010XXXXXX11190077")
    }

    @Test func masksEveryOccurrence() throws {
        #expect(
            try scrub("a=4970107111111119;b=4970 1071 1111 1119", sent: [Self.visa])
                == "a=497010XXXXXX1119;b=497010XXXXXX1119")
    }

    @Test func masksOtherVaultedNumbersFoundAsDigitGroups() throws {
        let scrubbed = try scrub(
            "other card 5555-5555-5555-4444 here", sent: [Self.visa], vaulted: [Self.mastercard])
        #expect(scrubbed == "other card 555555XXXXXX4444 here")
    }

    @Test func leavesNumbersTheVaultDoesNotHold() throws {
        let text = "order 5555555555554444 amount 1000 id 123456789012"
        #expect(try scrub(text, sent: [Self.visa]) == text)
    }

    @Test func candidatesAreLuhnValidBrandNumbersOfWholeGroups() {
        let text = Array("x 4970107111111119 y 4970107111111118 z 1234 5678 9012 3456 w 5555 5555 5555 4444".utf8)
        let found = text.withUnsafeBufferPointer { CardNumberScrubber.candidates(in: $0) }
        let aliases = found.map(\.pan.alias)
        #expect(aliases.contains("497010XXXXXX1119"))
        #expect(aliases.contains("555555XXXXXX4444"))
        #expect(!aliases.contains("497010XXXXXX1118"))
        #expect(found.first.map { Array(text[$0.range]) } == Array("4970107111111119".utf8))
    }

    @Test func separatorsMustBeSingle() throws {
        let text = "4970  1071  1111  1119"
        #expect(try scrub(text, sent: [], vaulted: [Self.visa]) == text)
    }

    @Test func nothingFoundLeavesTheBytesAlone() throws {
        #expect(try scrub("", sent: [Self.visa]) == "")
        #expect(try scrub("no numbers at all", sent: [Self.visa]) == "no numbers at all")
    }
}
