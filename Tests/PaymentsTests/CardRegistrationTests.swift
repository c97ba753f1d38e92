import CardKit
import Foundation
import Testing
import VaultCore
import VaultCrypto
import VaultStore

@testable import Payments

@Suite struct CardRegistrationTests {
    /// Creating a registration and completing it each read the store once before their commit (the user or the
    /// registration, with the hooks of the events they write: one round trip on PostgreSQL), and the completion's
    /// event is queued for delivery only when its type has a hook.
    @Test func creationAndCompletionEachReadTheStoreOnce() async throws {
        let store = RoundTripCountingStore()
        let services = WalletWritersTests.Shop.services(
            store: store, fingerprintKeys: DerivedFingerprintKeys(secret: .random()))
        let payer = try await WalletWritersTests.Shop.payer(services)
        try await store.commit([
            .put(
                collection: Collections.hooksByEvent,
                id: EventLog.hookKey(clientId: "shop", type: .cardRegistrationValidated), value: Array("hook_1".utf8),
                condition: .absent)
        ])
        store.reset()
        let registration = try await services.cardRegistrations.create(
            clientId: "shop", userId: payer.id, currency: "EUR", cardType: nil, tag: nil)
        #expect(store.counts.singleReads == [] && store.counts.manyReads == 1 && store.counts.commits == 1)
        let registrationData = try await WalletWritersTests.Shop.tokenize(registration, services)
        store.reset()
        let completed = try await services.cardRegistrations.update(
            clientId: "shop", id: registration.id, registrationData: registrationData, cardHolderName: nil, tag: nil)
        #expect(completed.status == .validated)
        #expect(store.counts.singleReads == [] && store.counts.manyReads == 1 && store.counts.commits == 1)
        let queued = try await store.scanAll(Collections.eventOutbox).map {
            try RecordCoding.decode(PaymentEvent.self, from: $0)
        }
        #expect(queued.map(\.eventType) == [.cardRegistrationValidated])
        #expect(queued.map(\.resourceId) == [registration.id])
    }

    @Test func createdRegistrationPointsAtTheVaultsTokenizationURL() async throws {
        let fixture = PaymentsFixture()
        let registration = try await fixture.registration()
        #expect(registration.status == .created)
        #expect(registration.cardType == "CB_VISA_MASTERCARD")
        #expect(registration.accessKey.count == 20)
        #expect(registration.preregistrationData.count == 64)
        #expect(
            fixture.services.cardRegistrations.tokenizationURL(clientId: "shop", id: registration.id)
                == "https://vault.example/tokenize/shop/\(registration.id)")
        let badType = await PaymentsError.from {
            try await fixture.services.cardRegistrations.create(
                clientId: "shop", userId: registration.userId, currency: "EUR", cardType: "PAYLIB", tag: nil)
        }
        #expect(badType?.fieldErrors["CardType"] != nil)
        let noUser = await PaymentsError.from {
            try await fixture.services.cardRegistrations.create(
                clientId: "shop", userId: "user_missing", currency: "EUR", cardType: nil, tag: nil)
        }
        #expect(noUser?.fieldErrors["UserId"] != nil)
        let missing = await PaymentsError.from {
            try await fixture.services.cardRegistrations.create(
                clientId: "shop", userId: nil, currency: nil, cardType: nil, tag: nil)
        }
        #expect(Set(missing?.fieldErrors.keys.map { $0 } ?? []) == ["UserId", "Currency"])
    }

    @Test func tokenizeThenCompleteCreatesTheCard() async throws {
        let fixture = PaymentsFixture()
        let registration = try await fixture.registration()
        let result = try await fixture.tokenize(registration, fixture.form(registration))
        guard case .success(let token, let reference) = result else {
            Issue.record("tokenization failed: \(result)")
            return
        }
        let attempt = try await fixture.services.cards.profilingAttempt(clientId: "shop", reference: reference)
        #expect(attempt.ipAddress == "192.0.2.1" && attempt.userAgent == "UA/1" && attempt.acceptLanguage == "fr-FR")
        #expect(attempt.device == ["screenWidth": "1024"])
        #expect(attempt.cardRegistrationId == registration.id)
        // Until the merchant sends it back, the one-time token exists only as a digest.
        let beforeCompletion = try await fixture.everyStoredValue(except: ["card-numbers"]).joined(separator: "\n")
        #expect(!beforeCompletion.contains(token.unsafeRevealed))

        let done = try await fixture.services.cardRegistrations.update(
            clientId: "shop", id: registration.id, registrationData: "data=" + token.unsafeRevealed,
            cardHolderName: "John Doe", tag: nil)
        #expect(done.status == .validated)
        #expect(done.result == .success)
        let cardId = try #require(done.cardId)
        #expect(cardId == attempt.cardId)
        let card = try await fixture.services.cards.get(clientId: "shop", id: cardId)
        #expect(card.alias == "497010XXXXXX1119")
        #expect(card.cardProvider == "VISA")
        #expect(card.cardType == "CB_VISA_MASTERCARD")
        #expect(card.expirationDate == "1229")
        #expect(card.active && card.validity == .unknown)
        #expect(card.currency == "EUR" && card.userId == registration.userId)
        #expect(card.cardHolderName == "John Doe")
        #expect(card.country == "FRA")
        #expect(card.fingerprint.count == 32 && card.fingerprint.allSatisfy(\.isHexDigit))

        // The number is in the vault record only; the security code in memory only.
        let (pan, expiry) = try await fixture.services.cards.vaultedNumber(clientId: "shop", cardId: cardId)
        #expect(pan.unmaskedDigits == PaymentsFixture.visa && expiry.mmyy == "1229")
        let elsewhere = try await fixture.everyStoredValue(except: ["card-numbers"]).joined(separator: "\n")
        #expect(!elsewhere.contains(PaymentsFixture.visa))
        #expect(fixture.services.securityCodes.isHeld(clientId: "shop", cardId: cardId))
        let cvx = try #require(fixture.services.securityCodes.take(clientId: "shop", cardId: cardId))
        #expect(cvx.withUnsafeBytes { Array($0) } == Array("123".utf8))
        #expect(fixture.services.securityCodes.take(clientId: "shop", cardId: cardId) == nil)
        // Logs name the card by alias only.
        let lines = fixture.logs.renderedLines.joined(separator: "\n")
        #expect(lines.contains("497010XXXXXX1119"))
        #expect(!lines.contains(PaymentsFixture.visa) && !lines.contains(registration.accessKey))

        // Sending the same data again changes nothing; other data is refused.
        let again = try await fixture.services.cardRegistrations.update(
            clientId: "shop", id: registration.id, registrationData: "data=" + token.unsafeRevealed,
            cardHolderName: nil, tag: nil)
        #expect(again == done)
        let other = await PaymentsError.from {
            try await fixture.services.cardRegistrations.update(
                clientId: "shop", id: registration.id, registrationData: "errorCode=02625", cardHolderName: nil,
                tag: nil)
        }
        #expect(other?.code == .invalidParameters)
    }

    @Test(arguments: [
        ("4970107111111118", "1229", "123", TokenizationErrorCode.invalidCardNumber, "105202"),
        ("4970 1071 1111 111x", "1229", "123", .invalidCardNumber, "105202"),
        ("49701071111", "1229", "123", .invalidCardNumber, "105202"),
        (PaymentsFixture.visa, "1329", "123", .invalidExpiry, "105203"),
        (PaymentsFixture.visa, "12/29", "123", .invalidExpiry, "105203"),
        (PaymentsFixture.visa, "1225", "123", .invalidExpiry, "105203"),
        (PaymentsFixture.visa, "1229", "1234", .invalidSecurityCode, "105204"),
        (PaymentsFixture.visa, "1229", "12a", .invalidSecurityCode, "105204"),
        (PaymentsFixture.amex, "1229", "123", .invalidCardNumber, "105202"),
    ])
    func invalidCardsAreRefusedAndMapToTheirResultCodes(
        number: String, expiry: String, cvx: String, code: TokenizationErrorCode, resultCode: String
    ) async throws {
        let fixture = PaymentsFixture()
        let registration = try await fixture.registration()
        let result = try await fixture.tokenize(
            registration, fixture.form(registration, number: number, expiry: expiry, cvx: cvx))
        #expect(result == .failure(code))
        let failed = try await fixture.services.cardRegistrations.update(
            clientId: "shop", id: registration.id, registrationData: "errorCode=" + code.rawValue, cardHolderName: nil,
            tag: nil)
        #expect(failed.status == .error)
        #expect(failed.result?.code == resultCode)
        #expect(failed.cardId == nil)
        #expect(try await fixture.store.scanAll("card-numbers").isEmpty)
        #expect(try await fixture.store.scanAll("cards").isEmpty)
    }

    @Test func registrationTypeDecidesWhichBrandsPass() async throws {
        let fixture = PaymentsFixture()
        let amex = try await fixture.registration(cardType: "AMEX")
        #expect(
            try await fixture.tokenize(amex, fixture.form(amex, number: PaymentsFixture.visa))
                == .failure(.invalidCardNumber))
        #expect(
            try await fixture.tokenize(amex, fixture.form(amex, number: PaymentsFixture.amex, cvx: "123"))
                == .failure(.invalidSecurityCode))
        guard
            case .success = try await fixture.tokenize(
                amex, fixture.form(amex, number: PaymentsFixture.amex, cvx: "1234"))
        else {
            Issue.record("AMEX card on an AMEX registration was refused")
            return
        }
    }

    @Test func accessKeyIsSingleUseAndChecked() async throws {
        let fixture = PaymentsFixture()
        let registration = try await fixture.registration()
        var wrongKey = fixture.form(registration)
        wrongKey.accessKeyRef = "wrong"
        #expect(try await fixture.tokenize(registration, wrongKey) == .failure(.accessDenied))
        var wrongData = fixture.form(registration)
        wrongData.data = "wrong"
        #expect(try await fixture.tokenize(registration, wrongData) == .failure(.accessDenied))
        guard case .success = try await fixture.tokenize(registration, fixture.form(registration)) else {
            Issue.record("valid tokenization refused")
            return
        }
        #expect(try await fixture.tokenize(registration, fixture.form(registration)) == .failure(.accessDenied))
        #expect(try await fixture.store.scanAll("card-numbers").count == 1)
        let unknown = try await fixture.services.cardRegistrations.tokenize(
            clientId: "shop", id: "cardreg_missing", form: fixture.form(registration), signals: DeviceSignals())
        #expect(unknown == .failure(.accessDenied))
        let otherClient = try await fixture.services.cardRegistrations.tokenize(
            clientId: "other", id: registration.id, form: fixture.form(registration), signals: DeviceSignals())
        #expect(otherClient == .failure(.accessDenied))
    }

    @Test func accessKeyExpiresAfterTwentyMinutes() async throws {
        let fixture = PaymentsFixture()
        let registration = try await fixture.registration()
        fixture.clock.advance(by: 20 * 60 + 1)
        #expect(try await fixture.tokenize(registration, fixture.form(registration)) == .failure(.delayExceeded))
        let failed = try await fixture.services.cardRegistrations.update(
            clientId: "shop", id: registration.id, registrationData: "errorCode=02631", cardHolderName: nil, tag: nil)
        #expect(failed.result?.code == "105299")
    }

    @Test func repeatedFailuresLockTheRegistration() async throws {
        let fixture = PaymentsFixture()
        let registration = try await fixture.registration()
        for _ in 0..<5 {
            #expect(
                try await fixture.tokenize(registration, fixture.form(registration, number: "4970107111111118"))
                    == .failure(.invalidCardNumber))
        }
        #expect(try await fixture.tokenize(registration, fixture.form(registration)) == .failure(.locked))
        #expect(try await fixture.store.scanAll("card-numbers").isEmpty)
        let lines = fixture.logs.renderedLines.joined(separator: "\n")
        #expect(lines.contains("locked") && !lines.contains("4970107111111118"))
    }

    @Test func perAddressRateLimitAnswersRetryAfter() async throws {
        var configuration = PaymentsConfiguration()
        configuration.tokenizationsPerMinutePerAddress = 3
        let fixture = PaymentsFixture(configuration: configuration)
        let registration = try await fixture.registration()
        var wrong = fixture.form(registration)
        wrong.accessKeyRef = "nope"
        for _ in 0..<3 {
            #expect(try await fixture.tokenize(registration, wrong, ip: "198.51.100.7") == .failure(.accessDenied))
        }
        let limited = try await fixture.tokenize(registration, fixture.form(registration), ip: "198.51.100.7")
        #expect(limited == .rateLimited(retryAfter: 20))
        // Another address is not affected, and the first recovers with time.
        #expect(try await fixture.tokenize(registration, wrong, ip: "198.51.100.8") == .failure(.accessDenied))
        fixture.clock.advance(by: 20)
        guard case .success = try await fixture.tokenize(registration, fixture.form(registration), ip: "198.51.100.7")
        else {
            Issue.record("address still limited after refill")
            return
        }
    }

    @Test func aDeviceCompletesOnlyWithItsOwnTokenizationsDataOnceAndInTime() async throws {
        let fixture = PaymentsFixture()
        let registrations = fixture.services.cardRegistrations
        let registration = try await fixture.registration()
        let other = try await fixture.registration()
        guard case .success(let token, _) = try await fixture.tokenize(registration, fixture.form(registration)),
            case .success(let otherToken, _) = try await fixture.tokenize(other, fixture.form(other))
        else {
            Issue.record("valid tokenization refused")
            return
        }
        let data = "data=" + token.unsafeRevealed
        let refusals: [(String, String)] = [
            (registration.id, "data=forged"), (registration.id, "data=" + otherToken.unsafeRevealed),
            (registration.id, "errorCode=02625"), (registration.id, ""), ("cardreg_unknown", data),
        ]
        for (id, registrationData) in refusals {
            let refused = await PaymentsError.from {
                try await registrations.completeFromDevice(clientId: "shop", id: id, registrationData: registrationData)
            }
            #expect(refused?.fieldErrors == CardRegistrationService.deviceRefusal.fieldErrors, "\(registrationData)")
        }
        // The refusals changed nothing: the data the tokenization answered completes it, once.
        #expect(try await registrations.get(clientId: "shop", id: registration.id).status == .created)
        let done = try await registrations.completeFromDevice(
            clientId: "shop", id: registration.id, registrationData: data)
        #expect(done.status == .validated && done.cardId != nil)
        let replayed = await PaymentsError.from {
            try await registrations.completeFromDevice(clientId: "shop", id: registration.id, registrationData: data)
        }
        #expect(replayed?.fieldErrors == CardRegistrationService.deviceRefusal.fieldErrors)
        // Past the access key's lifetime the other registration's own data no longer completes it.
        fixture.clock.advance(by: 20 * 60 + 1)
        let late = await PaymentsError.from {
            try await registrations.completeFromDevice(
                clientId: "shop", id: other.id, registrationData: "data=" + otherToken.unsafeRevealed)
        }
        #expect(late?.fieldErrors == CardRegistrationService.deviceRefusal.fieldErrors)
        #expect(try await registrations.get(clientId: "shop", id: other.id).status == .created)
    }

    @Test(arguments: ["data=forged", "garbage", "", "errorCode=abc", "data="])
    func garbledRegistrationDataGivesError105206(data: String) async throws {
        let fixture = PaymentsFixture()
        let registration = try await fixture.registration()
        guard case .success = try await fixture.tokenize(registration, fixture.form(registration)) else {
            Issue.record("valid tokenization refused")
            return
        }
        let failed = try await fixture.services.cardRegistrations.update(
            clientId: "shop", id: registration.id, registrationData: data, cardHolderName: nil, tag: nil)
        #expect(failed.status == .error && failed.result == .invalidRegistrationData)
        // The vaulted number of the abandoned tokenization is gone.
        #expect(try await fixture.store.scanAll("card-numbers").isEmpty)
    }

    @Test func securityCodeIsForgottenAfterAnHour() async throws {
        let fixture = PaymentsFixture()
        let card = try await fixture.registeredCard()
        #expect(fixture.services.securityCodes.isHeld(clientId: "shop", cardId: card.id))
        fixture.clock.advance(by: 3600)
        #expect(!fixture.services.securityCodes.isHeld(clientId: "shop", cardId: card.id))
        #expect(fixture.services.securityCodes.purgeExpired() == 0)
        #expect(fixture.services.securityCodes.take(clientId: "shop", cardId: card.id) == nil)
    }
}
