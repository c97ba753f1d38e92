import Testing

@testable import MangopayAPI
@testable import Payments

/// The sandbox ACS page's texts: the amount, merchant and language of the flow that reached it, and correct
/// sentences for every outcome.
@Suite struct SandboxACSPageTests {
    static func view(
        amount: Int64 = 0, display: ChallengeDisplay? = nil, culture: String? = nil, validation: Bool = false,
        status: String = "CREATED", final: Bool = false, descriptor: String? = nil
    ) -> ChallengeView {
        ChallengeView(
            transactionId: "val_1", amount: Funds(currency: "EUR", amount: amount), cardAlias: "503395XXXXXX0004",
            statementDescriptor: descriptor, isFinal: final, status: status, display: display, culture: culture,
            isCardValidation: validation)
    }

    static func html(_ view: ChallengeView) -> String {
        SandboxACSPage.challengeHTML(view, action: "/acs/v/c/val_1", secret: "s", challengeCode: "123456")
    }

    @Test func aFrenchCheckoutsValidationShowsTheCartInFrench() {
        let html = Self.html(
            Self.view(
                display: ChallengeDisplay(
                    amount: Funds(currency: "EUR", amount: 12_000), merchantName: "Fancy Shop", locale: "fr_FR"),
                validation: true))
        #expect(html.contains(#"<html lang="fr">"#))
        #expect(html.contains("Confirmez votre paiement"))
        #expect(html.contains("120,00\u{00A0}EUR"))
        #expect(html.contains(#"<dd id="acs-merchant">Fancy Shop</dd>"#))
        #expect(!html.contains("0.00") && !html.contains("CardVault sandbox merchant"))
    }

    @Test func aPayInUsesItsAmountDescriptorAndCulture() {
        let english = Self.html(Self.view(amount: 4990, descriptor: "SHOP 42"))
        #expect(english.contains(#"<html lang="en">"#) && english.contains("49.90\u{00A0}EUR"))
        #expect(english.contains("SHOP 42 asks your bank to confirm this payment"))
        let french = Self.html(Self.view(amount: 4990, culture: "FR"))
        #expect(french.contains("49,90\u{00A0}EUR") && french.contains("Marchand de test CardVault"))
    }

    @Test func aCardCheckWithoutAnAmountSaysNothingIsCharged() {
        let html = Self.html(Self.view(validation: true))
        #expect(html.contains("Confirm your card") && html.contains("No amount is charged (card check)"))
    }

    @Test func finishedAuthenticationsReadAsSentences() {
        let cases: [(String, Bool, String, String)] = [
            ("SUCCEEDED", false, "Your payment was confirmed.", "Votre paiement a été confirmé."),
            ("SUCCEEDED", true, "Your card was confirmed.", "Votre carte a été confirmée."),
            (
                "FAILED", false, "The authentication did not succeed, so nothing was charged.",
                "L&#39;authentification n&#39;a pas abouti : rien n&#39;a été débité."
            ),
        ]
        for (status, validation, english, french) in cases {
            let en = Self.html(Self.view(amount: 100, validation: validation, status: status, final: true))
            #expect(en.contains(english), "\(status)")
            #expect(!en.contains("This payment is"))
            let fr = Self.html(
                Self.view(amount: 100, culture: "fr", validation: validation, status: status, final: true))
            #expect(fr.contains(french), "\(status)")
        }
    }

    @Test func escapesTheMerchantName() {
        let html = Self.html(Self.view(display: ChallengeDisplay(merchantName: "<b>x</b>")))
        #expect(!html.contains("<b>x</b>") && html.contains("&lt;b&gt;x&lt;/b&gt;"))
    }
}
