import CardKit
import Testing
import VaultCrypto

@testable import Checkout

@Suite struct MasterpassCryptogramsTests {
    let cryptograms = MasterpassCryptograms(key: SymmetricKey(copying: [UInt8](repeating: 1, count: 32)))

    @Test func networkTokensLookLikeCardNumbersButAreNot() throws {
        for (bin, length, last4) in [("555555", 16, "4444"), ("411111", 16, "1111"), ("378282", 15, "0005")] {
            let token = cryptograms.networkToken(
                clientId: "shop", cardId: "card1", bin: bin, length: length, cardLastFour: last4)
            #expect(token.count == length)
            #expect(token.hasPrefix(bin))
            #expect(Luhn.isValid(token))
            #expect(!token.hasSuffix(last4))
            #expect(BrandCatalog.standard.brand(forDigits: token) == BrandCatalog.standard.brand(forDigits: bin))
            #expect(
                token
                    == cryptograms.networkToken(
                        clientId: "shop", cardId: "card1", bin: bin, length: length, cardLastFour: last4))
        }
        let other = cryptograms.networkToken(
            clientId: "rival", cardId: "card1", bin: "555555", length: 16, cardLastFour: "4444")
        #expect(
            other
                != cryptograms.networkToken(
                    clientId: "shop", cardId: "card1", bin: "555555", length: 16, cardLastFour: "4444"))
    }

    @Test func cryptogramsBindTheTransactionFields() {
        let fields = MasterpassCryptogramFields(
            transactionId: "mptx1", accountNumber: "5555551234567890", amount: Money(minorUnits: 1122, currency: .usd),
            unpredictableNumber: "AAECAw==", cryptoType: .icc, eci: "02", expiresAt: 1_800_000_000)
        let value = cryptograms.cryptogram(for: fields)
        #expect(value.count == 44)  // 32 bytes, base64
        #expect(cryptograms.isValid(value, for: fields))
        var ucaf = fields
        ucaf.cryptoType = .ucaf
        #expect(cryptograms.cryptogram(for: ucaf).count == 28)  // 20 bytes, base64, like an AAV
        for change in [
            { (f: inout MasterpassCryptogramFields) in f.transactionId = "mptx2" },
            { $0.amount = Money(minorUnits: 1123, currency: .usd) },
            { $0.unpredictableNumber = "AAECBA==" },
            { $0.eci = "05" },
            { $0.expiresAt += 1 },
            { $0.accountNumber = "5555551234567891" },
        ] {
            var altered = fields
            change(&altered)
            #expect(!cryptograms.isValid(value, for: altered))
        }
        let otherKey = MasterpassCryptograms(key: SymmetricKey(copying: [UInt8](repeating: 2, count: 32)))
        #expect(!otherKey.isValid(value, for: fields))
    }

    @Test func eciPerBrandAndAuthentication() {
        #expect(MasterpassECI.value(for: .master, status: .authenticated) == "02")
        #expect(MasterpassECI.value(for: .maestro, status: .attempted) == "01")
        #expect(MasterpassECI.value(for: .master, status: nil) == "00")
        #expect(MasterpassECI.value(for: .visa, status: .authenticated) == "05")
        #expect(MasterpassECI.value(for: .amex, status: .attempted) == "06")
        #expect(MasterpassECI.value(for: .visa, status: nil) == "07")
    }

    @Test func unpredictableNumbersAreFourRandomBytes() {
        let a = MasterpassCryptograms.unpredictableNumber(random: RandomPool())
        let b = MasterpassCryptograms.unpredictableNumber(random: RandomPool())
        #expect(a.count == 8)
        #expect(a != b)
    }
}
