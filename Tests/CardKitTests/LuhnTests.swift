import CardKit
import Testing

@Suite struct LuhnTests {
    // Published vectors: Wikipedia "Luhn algorithm" (79927398713), network test card numbers.
    @Test(arguments: [
        "79927398713", "4111111111111111", "5555555555554444", "378282246310005", "6011111111111117",
        "30569309025904", "3530111333300000", "6200000000000005", "0", "00", "18", "059",
    ])
    func acceptsValidNumbers(_ digits: String) {
        #expect(Luhn.isValid(digits))
    }

    @Test(arguments: [
        "79927398710", "79927398711", "79927398712", "79927398714", "4111111111111112", "4111111111111121",
        "1", "5", "", "4111-1111-1111-1111", "4111 1111 1111 1111", "41111111111111a1", "١٢",
    ])
    func refusesInvalidNumbersAndNonDigits(_ digits: String) {
        #expect(!Luhn.isValid(digits))
    }

    @Test func everySingleDigitErrorIsCaught() {
        let valid = Array("4970107111111119".utf8)
        for position in valid.indices {
            for replacement in UInt8(0x30)...UInt8(0x39) where replacement != valid[position] {
                var changed = valid
                changed[position] = replacement
                #expect(!changed.withUnsafeBufferPointer { Luhn.isValid($0) })
            }
        }
    }

    @Test func adjacentTranspositionsAreCaughtExceptNineZero() {
        let valid = Array("4970107111111119".utf8)
        for position in valid.indices.dropLast() where valid[position] != valid[position + 1] {
            var swapped = valid
            swapped.swapAt(position, position + 1)
            let pair = Set([valid[position], valid[position + 1]])
            let expected = pair == Set([UInt8(ascii: "0"), UInt8(ascii: "9")])
            #expect(swapped.withUnsafeBufferPointer { Luhn.isValid($0) } == expected)
        }
    }

    @Test func checkDigitCompletesPayload() {
        #expect(Luhn.checkDigit(for: "7992739871") == 3)
        #expect(Luhn.checkDigit(for: "497010711111111") == 9)
        #expect(Luhn.checkDigit(for: "37828224631000") == 5)
        #expect(Luhn.checkDigit(for: "") == nil)
        #expect(Luhn.checkDigit(for: "12x") == nil)
        for payload in ["1", "42", "520000000000000", "999999999999999999"] {
            let digit = Luhn.checkDigit(for: payload)!
            #expect(Luhn.isValid(payload + String(digit)))
        }
    }
}
