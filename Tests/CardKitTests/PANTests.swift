import CardKit
import Testing

@Suite struct PANTests {
    @Test(arguments: [
        "4970107111111119", "4970 1071 1111 1119", "4970-1071-1111-1119", " 4970 1071-1111 1119 ",
        "4970--10711111 1119",
    ])
    func stripsSpacesAndDashes(text: String) throws {
        let pan = try PAN(text)
        #expect(pan.brand == .visa)
        #expect(pan.length == 16)
        #expect(pan.unmaskedDigits == "4970107111111119")
        #expect(pan.alias == "497010XXXXXX1119")
        #expect(pan.bin == "497010")
        #expect(pan.bin8 == "49701071")
        #expect(pan.last4 == "1119")
    }

    @Test(
        arguments: [
            ("4970.1071.1111.1119", CardValidationError.Code.invalidCharacter),
            ("4970\t1071111111119", .invalidCharacter),
            ("4970107111111119\n", .invalidCharacter),
            ("4970１071111111119", .invalidCharacter),
            ("+4970107111111119", .invalidCharacter),
            ("", .invalidLength),
            ("  -- ", .invalidLength),
            ("49701071111", .invalidLength),  // 11 digits
            ("49701071111111111119", .invalidLength),  // 20 digits
            ("4970107111111111111111111111119", .invalidLength),
            ("4970107111111118", .luhnFailed),
            ("4970107111111191", .luhnFailed),
            ("7000000000000005", .unknownBrand),  // Luhn-valid, no brand issues 7
            ("1234567812345670", .unknownBrand),
            ("411111111111116", .invalidLength),  // Luhn-valid 15-digit Visa: Visa issues 16, 18, 19
            ("4222222222222", .invalidLength),  // the old 13-digit Visa test number
            ("37828224631000", .luhnFailed),  // Amex cut short
            ("3782822463100003", .invalidLength),  // Luhn-valid 16-digit Amex
            ("55555555555544441", .luhnFailed),
            ("5555555555554444000", .invalidLength),  // Luhn-valid, Mastercard issues 16 only
        ] as [(String, CardValidationError.Code)])
    func refusesWithACode(text: String, code: CardValidationError.Code) {
        #expect(throws: CardValidationError(code, "")) { try PAN(text) }
        do {
            _ = try PAN(text)
        } catch {
            #expect(error.code == code)
            let digits = text.filter(\.isNumber)
            #expect(digits.count < 6 || !error.message.contains(digits))
            #expect(!error.description.contains("4970"))
        }
    }

    @Test(arguments: numbersByBrand.flatMap { brand, numbers in numbers.map { (brand, $0) } })
    func parsesEveryBrand(brand: CardBrand, number: String) throws {
        let pan = try PAN(number)
        #expect(pan.brand == brand)
        #expect(pan.unmaskedDigits == number)
        #expect(pan.length == number.count)
        #expect(pan.alias.count == number.count)
        #expect(pan.alias.hasPrefix(String(number.prefix(6))))
        #expect(pan.alias.hasSuffix(String(number.suffix(4))))
        #expect(pan.alias.dropFirst(6).dropLast(4).allSatisfy { $0 == "X" })
        #expect(pan.bin8 == (number.count >= 16 ? String(number.prefix(8)) : nil))
    }

    @Test func masksInEveryTextForm() throws {
        let number = "4970107111111119"
        let pan = try PAN(number)
        let forms = [
            "\(pan)", String(describing: pan), String(reflecting: pan), pan.description, pan.debugDescription,
            {
                var out = ""
                dump(pan, to: &out)
                return out
            }(),
            "\([pan])", "\(Optional(pan) as Any)", "\(["card": pan])",
        ]
        for form in forms {
            #expect(!form.contains(number))
            #expect(!form.contains("07111111"))
            #expect(form.contains("497010XXXXXX1119"))
        }
    }

    @Test func shortestAndLongestNumbers() throws {
        let maestro12 = try PAN("630467127688")
        #expect(maestro12.alias == "630467XX7688")
        #expect(maestro12.bin8 == nil)
        let maestro19 = try PAN("6799990100000000019")
        #expect(maestro19.alias == "679999XXXXXXXXX0019")
        #expect(maestro19.unmaskedDigits == "6799990100000000019")
        let amex = try PAN("3782 822463 10005")
        #expect(amex.alias == "378282XXXXX0005")
        #expect(amex.bin8 == nil)
    }

    @Test func keepsLeadingZeros() throws {
        let catalog = BrandCatalog(ranges: [BrandRange(.maestro, "0")])
        let pan = try PAN("0000 0000 0000 0000", catalog: catalog)
        #expect(pan.unmaskedDigits == "0000000000000000")
        #expect(pan.length == 16)
        let other = try PAN("000000000000", catalog: catalog)
        #expect(other != pan)
        #expect(other.unmaskedDigits == "000000000000")
    }

    @Test func equalityFollowsTheDigits() throws {
        #expect(try PAN("4970 1071 1111 1119") == PAN("4970107111111119"))
        #expect(try PAN("4970107111111119") != PAN("4970105181818183"))
        #expect(Set([try PAN("4111111111111111"), try PAN("4111-1111-1111-1111")]).count == 1)
    }

    @Test func asciiDigitsRoundTrip() throws {
        let pan = try PAN("5555555555554444")
        let bytes = pan.withASCIIDigits { Array($0) }
        #expect(bytes == Array("5555555555554444".utf8))
        let again = try bytes.withUnsafeBufferPointer { try PAN(validating: $0) }
        #expect(again == pan)
    }

    @Test func checkReportsEveryField() {
        let luhnFail = CardNumberCheck(asciiDigits: "4970107111111118")
        #expect(luhnFail.brand == .visa && !luhnFail.luhnValid && luhnFail.lengthValid)
        #expect(luhnFail.failure == .luhnFailed && !luhnFail.isValid)
        let tooShortAmex = CardNumberCheck(asciiDigits: "3400000000009")
        #expect(tooShortAmex.brand == .amex && tooShortAmex.luhnValid && !tooShortAmex.lengthValid)
        #expect(tooShortAmex.failure == .invalidLength)
        let short = CardNumberCheck(asciiDigits: "4111")
        #expect(short.failure == .invalidLength && !short.lengthValid && short.brand == .visa)
        let letters = CardNumberCheck(asciiDigits: "4111abcd11111111")
        #expect(letters.failure == .invalidCharacter && letters.brand == nil && !letters.luhnValid)
        let unknown = CardNumberCheck(asciiDigits: "7000000000000005")
        #expect(unknown.failure == .unknownBrand && unknown.luhnValid && unknown.lengthValid && unknown.brand == nil)
        let good = CardNumberCheck(asciiDigits: "375989111111119")
        #expect(good.isValid && good.brand == .amex && good.length == 15)
    }

    @Test func errorsAreEqualByCode() {
        #expect(CardValidationError(.luhnFailed, "a") == CardValidationError(.luhnFailed, "b"))
        #expect(CardValidationError(.luhnFailed, "a") != CardValidationError(.invalidLength, "a"))
        #expect(CardValidationError.Code.luhnFailed.description == "luhnFailed")
    }
}
