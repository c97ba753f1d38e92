import CardKit
import Testing

@Suite struct WireMappingTests {
    @Test(arguments: [
        (MangopayCardType.cbVisaMastercard, [CardBrand.visa, .mastercard]),
        (.amex, [.amex]), (.maestro, [.maestro]), (.bcmc, [.maestro]), (.diners, [.diners]), (.jcb, [.jcb]),
        (.masterpass, []), (.p24, []), (.ideal, []), (.paylib, []),
    ])
    func cardTypeAcceptsItsBrands(type: MangopayCardType, brands: [CardBrand]) {
        #expect(type.acceptedBrands == Set(brands))
        for brand in CardBrand.allCases {
            #expect(type.accepts(brand) == brands.contains(brand))
        }
    }

    @Test func cardTypeWireNames() {
        #expect(
            MangopayCardType.allCases.map(\.rawValue) == [
                "CB_VISA_MASTERCARD", "AMEX", "MAESTRO", "BCMC", "DINERS", "JCB", "MASTERPASS", "P24", "IDEAL",
                "PAYLIB",
            ])
        #expect(MangopayCardType.default == .cbVisaMastercard)
        #expect(MangopayCardType(rawValue: "cb_visa_mastercard") == nil)
    }

    /// Mangopay's sandbox cards register under the types their docs name.
    @Test func sandboxCardsMatchTheirTypes() throws {
        #expect(MangopayCardType.cbVisaMastercard.accepts(try PAN("4970107111111119").brand))
        #expect(MangopayCardType.cbVisaMastercard.accepts(try PAN("4970105181818183").brand))
        #expect(MangopayCardType.maestro.accepts(try PAN("5033951000000004").brand))
        #expect(MangopayCardType.bcmc.accepts(try PAN("5033951000000004").brand))
        #expect(MangopayCardType.amex.accepts(try PAN("375989111111119").brand))
        #expect(!MangopayCardType.cbVisaMastercard.accepts(try PAN("375989111111119").brand))
    }

    @Test(arguments: [
        (CardBrand.visa, "VISA"), (.mastercard, "MASTERCARD"), (.amex, "AMEX"), (.maestro, "MAESTRO"),
        (.diners, "DINERS"), (.jcb, "JCB"), (.discover, "DISCOVER"),
    ])
    func providerForBrand(brand: CardBrand, provider: String) {
        #expect(MangopayCardProvider(brand: brand)?.rawValue == provider)
    }

    @Test func brandsWithoutAProvider() {
        for brand in [CardBrand.unionpay, .mir, .elo, .hiper, .hipercard, .troy, .verve, .rupay, .naranja] {
            #expect(MangopayCardProvider(brand: brand) == nil)
            #expect(MasterpassCardType(brand: brand) == nil)
        }
        #expect(
            Set(MangopayCardProvider.allCases.map(\.rawValue)) == [
                "CB", "VISA", "MASTERCARD", "AMEX", "MAESTRO", "BCMC", "DINERS", "JCB", "DISCOVER",
            ])
    }

    @Test func masterpassCardTypesRoundTrip() {
        #expect(
            MasterpassCardType.allCases.map(\.rawValue) == [
                "master", "visa", "amex", "discover", "diners", "maestro", "jcb",
            ])
        for type in MasterpassCardType.allCases {
            #expect(MasterpassCardType(brand: type.brand) == type)
        }
        #expect(MasterpassCardType(brand: .mastercard) == .master)
    }

    @Test func masterpassListsParse() {
        #expect(MasterpassCardType.parseList(["master", "visa"]) == [.master, .visa])
        #expect(
            MasterpassCardType.parseList(["master,amex,diners,discover,jcb,maestro,visa"])
                == Set(MasterpassCardType.allCases))
        #expect(MasterpassCardType.parseList(["Master, AMEX"]) == [.master, .amex])
        #expect(MasterpassCardType.parseList(["master", "mastercard"]) == nil)
        #expect(MasterpassCardType.parseList(["master,,visa"]) == nil)
        #expect(MasterpassCardType.parseList([]) == nil)
    }
}
