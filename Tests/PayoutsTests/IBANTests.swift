import Testing

@testable import Payouts

@Suite struct IBANTests {
    @Test(arguments: [
        ("FR7630004000031234567890143", "FR7630004000031234567890143"),
        ("fr76 3000 4000 0312 3456 7890 143", "FR7630004000031234567890143"),
        ("GB60BARC20000055779911", "GB60BARC20000055779911"),
        ("DE89370400440532013000", "DE89370400440532013000"),
        ("NO9386011117947", "NO9386011117947"),
    ])
    func validIBANsAreNormalized(text: String, expected: String) throws {
        #expect(try IBAN.normalized(text) == expected)
    }

    @Test func wrongCheckDigitsAreRefused() {
        #expect(throws: IBAN.Problem.checkDigits) { try IBAN.normalized("FR7630004000031234567890144") }
        #expect(throws: IBAN.Problem.checkDigits) { try IBAN.normalized("FR7730004000031234567890143") }
        // Two digits swapped: mod 97 catches every transposition of adjacent characters.
        #expect(throws: IBAN.Problem.checkDigits) { try IBAN.normalized("FR7630004000031234567809143") }
    }

    @Test func theCountrysLengthIsRequired() {
        #expect(throws: IBAN.Problem.length(expected: 27)) { try IBAN.normalized("FR763000400003123456789014") }
        #expect(throws: IBAN.Problem.length(expected: 22)) { try IBAN.normalized("GB60BARC200000557799111") }
    }

    @Test func unknownCountriesAndStrayCharactersAreRefused() {
        #expect(throws: IBAN.Problem.country) { try IBAN.normalized("US7630004000031234567890143") }
        #expect(throws: IBAN.Problem.characters) { try IBAN.normalized("FR76-3000-4000-0312-3456-7890-143") }
        #expect(throws: IBAN.Problem.characters) { try IBAN.normalized("7630004000031234567890143FR") }
        #expect(throws: IBAN.Problem.characters) { try IBAN.normalized("") }
        #expect(throws: IBAN.Problem.characters) { try IBAN.normalized("FRÉ630004000031234567890143") }
    }

    @Test func problemsNeverRepeatTheNumber() {
        for problem in [IBAN.Problem.characters, .country, .length(expected: 27), .checkDigits] {
            #expect(!problem.message.contains("3000"))
        }
        #expect(IBAN.masked("FR7630004000031234567890143") == "FR**…0143")
    }

    @Test func bicShape() {
        let country = { (code: String) in ["FR", "GB", "DE"].contains(code) }
        #expect(BIC.isValid("BNPAFRPP", isCountry: country))
        #expect(BIC.isValid("BARCGB22XXX", isCountry: country))
        #expect(!BIC.isValid("BNPAFRP", isCountry: country))
        #expect(!BIC.isValid("BNPAZZPP", isCountry: country))
        #expect(!BIC.isValid("BNP1FRPP", isCountry: country))
        #expect(!BIC.isValid("bnpafrpp", isCountry: country))
        #expect(!BIC.isValid("BNPAFRPP1", isCountry: country))
    }
}
