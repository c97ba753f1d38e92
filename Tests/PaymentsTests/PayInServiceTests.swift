import CardKit
import Foundation
import Risk
import Testing
import VaultCore
import VaultCrypto
import VaultStore

@testable import Payments

/// A fixture with a pay-in service, a payer with a EUR wallet, and cards registered for that payer.
struct PayInFixture {
    let base = PaymentsFixture()
    let payIns: PayInService
    let payer: User
    let wallet: Wallet

    static let frictionless = "4970107111111119"
    static let challenged = "4970105181818183"

    init() async throws {
        payIns = PayInService(environment: base.services.environment, securityCodes: base.services.securityCodes)
        payer = try await base.payer()
        wallet = try await base.services.wallets.create(
            clientId: "shop", owners: [payer.id], description: "main", currency: "EUR", tag: nil)
    }

    /// Registers `number` for the payer; returns the card and its profiling attempt reference.
    func card(
        _ number: String = frictionless, device: [String: String] = ["screenWidth": "1024"], userAgent: String = "UA/1"
    )
        async throws -> (Card, String)
    {
        let registration = try await base.services.cardRegistrations.create(
            clientId: "shop", userId: payer.id, currency: "EUR", cardType: nil, tag: nil)
        let result = try await base.services.cardRegistrations.tokenize(
            clientId: "shop", id: registration.id, form: base.form(registration, number: number),
            signals: DeviceSignals(
                ipAddress: "192.0.2.7", userAgent: userAgent, acceptLanguage: "fr-FR", device: device))
        guard case .success(let token, let reference) = result else {
            throw PaymentsError(.invalidState, "tokenization")
        }
        let done = try await base.services.cardRegistrations.update(
            clientId: "shop", id: registration.id, registrationData: "data=" + token.unsafeRevealed,
            cardHolderName: "John Doe", tag: nil)
        return (try await base.services.cards.get(clientId: "shop", id: done.cardId!), reference)
    }

    func request(
        card: Card, amount: Int64 = 1000, fees: Int64 = 100, secureMode: String? = nil, reference: String? = nil
    )
        -> PayInRequest
    {
        var request = PayInRequest()
        request.authorId = payer.id
        request.creditedWalletId = wallet.id
        request.debitedFunds = Funds(currency: "EUR", amount: amount)
        request.fees = Funds(currency: "EUR", amount: fees)
        request.cardId = card.id
        request.secureModeReturnURL = "https://shop.example/return?order=7#/done"
        request.secureMode = secureMode
        request.ipAddress = "192.0.2.7"
        request.browserInfo = BrowserInfo(
            acceptHeader: "text/html", javaEnabled: false, javascriptEnabled: true, language: "fr-FR", colorDepth: 24,
            screenHeight: 800, screenWidth: 1024, timeZoneOffset: "+60", userAgent: "UA/1")
        request.profilingAttemptReference = reference
        return request
    }

    func balance() async throws -> Int64 {
        try await base.services.wallets.get(clientId: "shop", id: wallet.id).balance
    }

    /// The secret in a challenge URL.
    static func secret(_ url: String) -> String {
        String(url[url.range(of: "?s=")!.upperBound...])
    }
}

@Suite struct PayInServiceTests {
    @Test func frictionlessPayInSucceedsCreditsTheWalletAndWipesTheSecurityCode() async throws {
        let f = try await PayInFixture()
        let (card, _) = try await f.card()
        #expect(f.base.services.securityCodes.isHeld(clientId: "shop", cardId: card.id))
        let payIn = try await f.payIns.create(clientId: "shop", request: f.request(card: card))
        #expect(payIn.status == "SUCCEEDED")
        #expect(payIn.result == .success)
        #expect(payIn.secureModeNeeded == false)
        #expect(payIn.creditedFunds == Funds(currency: "EUR", amount: 900))
        #expect(payIn.executionDate != nil)
        #expect(try await f.balance() == 900)
        #expect(try await f.base.services.cards.get(clientId: "shop", id: card.id).validity == .valid)
        #expect(!f.base.services.securityCodes.isHeld(clientId: "shop", cardId: card.id))
        #expect(try await f.payIns.get(clientId: "shop", id: payIn.id) == payIn)
        #expect(
            try await f.payIns.transactions(clientId: "shop", cardId: card.id, page: PageRequest()).items.map(\.id) == [
                payIn.id
            ])
    }

    @Test func challengedPayInSucceedsOnceWithTheSandboxCode() async throws {
        let f = try await PayInFixture()
        let (card, _) = try await f.card(PayInFixture.challenged)
        let created = try await f.payIns.create(clientId: "shop", request: f.request(card: card))
        #expect(created.status == "CREATED")
        #expect(created.secureModeNeeded)
        let url = try #require(f.payIns.challengeURL(for: created))
        #expect(url.hasPrefix("https://vault.example/acs/p/shop/\(created.id)?s="))
        #expect(try await f.balance() == 0)

        let view = try await f.payIns.challenge(
            kind: "p", clientId: "shop", id: created.id, secret: PayInFixture.secret(url))
        #expect(view.cardAlias == "497010XXXXXX8183")
        #expect(view.amount.amount == 1000)

        let (done, returnURL) = try await f.payIns.answerChallenge(
            kind: "p", clientId: "shop", id: created.id, secret: PayInFixture.secret(url), code: "123456")
        #expect(done.status == "SUCCEEDED")
        #expect(returnURL == "https://shop.example/return?order=7&transactionId=\(created.id)#/done")
        #expect(try await f.balance() == 900)

        // A replayed or different second answer changes nothing and repeats the final answer.
        let (again, _) = try await f.payIns.answerChallenge(
            kind: "p", clientId: "shop", id: created.id, secret: PayInFixture.secret(url), code: "000000")
        #expect(again.status == "SUCCEEDED")
        #expect(try await f.balance() == 900)
    }

    @Test func wrongCodeOrCancelFailsWith101301AndMarksTheCardInvalid() async throws {
        let f = try await PayInFixture()
        let (card, _) = try await f.card(PayInFixture.challenged)
        let created = try await f.payIns.create(clientId: "shop", request: f.request(card: card))
        let secret = PayInFixture.secret(f.payIns.challengeURL(for: created)!)
        let (failed, _) = try await f.payIns.answerChallenge(
            kind: "p", clientId: "shop", id: created.id, secret: secret, code: "999999")
        #expect(failed.status == "FAILED")
        #expect(failed.result?.code == "101301")
        #expect(try await f.base.services.cards.get(clientId: "shop", id: card.id).validity == .invalid)

        let (card2, _) = try await f.card(PayInFixture.challenged)
        let second = try await f.payIns.create(clientId: "shop", request: f.request(card: card2))
        let (cancelled, _) = try await f.payIns.answerChallenge(
            kind: "p", clientId: "shop", id: second.id,
            secret: PayInFixture.secret(f.payIns.challengeURL(for: second)!), code: nil)
        #expect(cancelled.result?.code == "101301")
        #expect(try await f.balance() == 0)
    }

    @Test func aFailedTransactionCountsOnceAmongTheFailuresBefore() async throws {
        let f = try await PayInFixture()
        let (card, _) = try await f.card(PayInFixture.challenged)
        let created = try await f.payIns.create(clientId: "shop", request: f.request(card: card))
        _ = try await f.payIns.answerChallenge(
            kind: "p", clientId: "shop", id: created.id,
            secret: PayInFixture.secret(f.payIns.challengeURL(for: created)!),
            code: "999999")
        // Same card and same user: indexed twice, still one failure.
        let next = try await f.payIns.create(clientId: "shop", request: f.request(card: card))
        let reason = try #require(next.risk.reasons.first { $0.rule == "failures.before" })
        #expect(reason.detail.hasPrefix("1 failed"))
        #expect(reason.points == RiskPolicy().pointsPerFailure)
    }

    @Test func wrongSecretsAndOtherClientsSeeNothing() async throws {
        let f = try await PayInFixture()
        let (card, _) = try await f.card(PayInFixture.challenged)
        let created = try await f.payIns.create(clientId: "shop", request: f.request(card: card))
        for (kind, client, secret) in [
            ("p", "shop", "wrong"), ("v", "shop", PayInFixture.secret(f.payIns.challengeURL(for: created)!)),
            ("p", "other", PayInFixture.secret(f.payIns.challengeURL(for: created)!)),
        ] {
            let error = await PaymentsError.from {
                try await f.payIns.answerChallenge(
                    kind: kind, clientId: client, id: created.id, secret: secret, code: "123456")
            }
            #expect(error?.code == .notFound)
        }
        #expect(
            await PaymentsError.from { try await f.payIns.get(clientId: "other", id: created.id) }?.code == .notFound)
        #expect(try await f.payIns.get(clientId: "shop", id: created.id).status == "CREATED")
    }

    @Test func abandonedChallengeExpiresWith101304EvenAcrossARestart() async throws {
        let f = try await PayInFixture()
        let (card, _) = try await f.card(PayInFixture.challenged)
        let created = try await f.payIns.create(clientId: "shop", request: f.request(card: card))
        f.base.clock.advance(by: 599)
        #expect(try await f.payIns.expireDueChallenges() == 0)
        f.base.clock.advance(by: 1)
        // A new service over the same store: what a restarted daemon sees.
        let restarted = PayInService(
            environment: f.base.services.environment, securityCodes: SecurityCodeHold(clock: f.base.clock))
        #expect(try await restarted.expireDueChallenges() == 1)
        let expired = try await restarted.get(clientId: "shop", id: created.id)
        #expect(expired.status == "FAILED")
        #expect(expired.result?.code == "101304")
        #expect(try await restarted.expireDueChallenges() == 0)
        // Answering after expiry cannot succeed.
        let (late, _) = try await restarted.answerChallenge(
            kind: "p", clientId: "shop", id: created.id,
            secret: PayInFixture.secret(f.payIns.challengeURL(for: created)!), code: "123456")
        #expect(late.result?.code == "101304")
        #expect(try await f.balance() == 0)
    }

    @Test func aStaleExpiryEntryDoesNotHoldBackTheSweep() async throws {
        let f = try await PayInFixture()
        let (card, _) = try await f.card(PayInFixture.challenged)
        let created = try await f.payIns.create(clientId: "shop", request: f.request(card: card))
        // An entry whose transaction does not exist, sorted before the real one.
        try await f.base.store.commit([
            .put(
                collection: "challenges-awaiting", id: "p:shop:payin_0", value: Array("0".utf8),
                condition: .unconditional)
        ])
        f.base.clock.advance(by: 600)
        #expect(try await f.payIns.expireDueChallenges() == 1)
        #expect(try await f.payIns.get(clientId: "shop", id: created.id).result?.code == "101304")
        #expect(try await f.base.store.scanAll("challenges-awaiting").isEmpty)
    }

    @Test func concurrentCompletionsCreditOnce() async throws {
        let f = try await PayInFixture()
        let (card, _) = try await f.card(PayInFixture.challenged)
        let created = try await f.payIns.create(clientId: "shop", request: f.request(card: card))
        let secret = PayInFixture.secret(f.payIns.challengeURL(for: created)!)
        let statuses = try await withThrowingTaskGroup(of: String.self) { group in
            for index in 0..<12 {
                group.addTask {
                    try await f.payIns.answerChallenge(
                        kind: "p", clientId: "shop", id: created.id, secret: secret,
                        code: index % 3 == 0 ? "123456" : "123456"
                    ).0.status
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(statuses == Array(repeating: "SUCCEEDED", count: 12))
        #expect(try await f.balance() == 900)
    }

    @Test func forceAndLargeAmountsAreChallenged() async throws {
        let f = try await PayInFixture()
        let (card, _) = try await f.card()
        #expect(
            try await f.payIns.create(clientId: "shop", request: f.request(card: card, secureMode: "FORCE"))
                .secureModeNeeded)
        #expect(
            try await f.payIns.create(clientId: "shop", request: f.request(card: card, amount: 5001)).secureModeNeeded)
        #expect(
            try await f.payIns.create(clientId: "shop", request: f.request(card: card, amount: 5000)).status
                == "SUCCEEDED")
    }

    @Test func manyCardsFromOneDeviceAreChallengedThenBlockedWithReasons() async throws {
        let f = try await PayInFixture()
        var decisions: [String] = []
        var lastReference = ""
        for index in 0..<6 {
            // Six different cards, all from the same device signals.
            let payload = "49701071" + String(1_000_000 + index).suffix(7)
            let (card, reference) = try await f.card(payload + String(Luhn.checkDigit(for: payload)!))
            let payIn = try await f.payIns.create(
                clientId: "shop", request: f.request(card: card, reference: reference))
            decisions.append(payIn.risk.decision.rawValue + ":" + payIn.status)
            lastReference = reference
        }
        #expect(decisions.prefix(2).allSatisfy { $0 == "allow:SUCCEEDED" })
        #expect(decisions[2] == "challenge:CREATED")
        #expect(decisions.last == "block:FAILED")
        let assessments = try await f.payIns.assessments(clientId: "shop", reference: lastReference)
        #expect(assessments.count == 1)
        #expect(assessments[0].decision == .block)
        #expect(assessments[0].reasons.contains { $0.rule == "device.cards" })
        let blocked = try await f.payIns.get(clientId: "shop", id: assessments[0].transactionId)
        #expect(blocked.result?.code == "008500")
    }

    @Test func aMissingOrUnknownProfilingReferenceIsNeverRejected() async throws {
        let f = try await PayInFixture()
        let (card, _) = try await f.card()
        #expect(
            try await f.payIns.create(clientId: "shop", request: f.request(card: card, reference: nil)).status
                == "SUCCEEDED")
        #expect(
            try await f.payIns.create(clientId: "shop", request: f.request(card: card, reference: "unknown-ref")).status
                == "SUCCEEDED")
    }

    @Test func invalidRequestsNameEveryWrongField() async throws {
        let f = try await PayInFixture()
        let (card, _) = try await f.card()
        var request = f.request(card: card, amount: 100, fees: 200)
        request.browserInfo = nil
        request.secureMode = "SOMETIMES"
        request.secureModeReturnURL = "javascript:alert(1)"
        request.statementDescriptor = "far too long descriptor"
        let error = await PaymentsError.from { try await f.payIns.create(clientId: "shop", request: request) }
        #expect(error?.code == .invalidParameters)
        #expect(
            Set(error?.fieldErrors.keys.map { $0 } ?? []) == [
                "BrowserInfo", "SecureMode", "SecureModeReturnURL", "StatementDescriptor",
            ])

        var currency = f.request(card: card, amount: 100, fees: 200)
        currency.debitedFunds = Funds(currency: "USD", amount: 100)
        currency.fees = Funds(currency: "USD", amount: 200)
        let mismatch = await PaymentsError.from { try await f.payIns.create(clientId: "shop", request: currency) }
        #expect(Set(mismatch?.fieldErrors.keys.map { $0 } ?? []) == ["DebitedFunds.Currency", "Fees.Amount"])

        var unknown = f.request(card: card)
        unknown.creditedWalletId = "wlt_nope"
        #expect(
            await PaymentsError.from { try await f.payIns.create(clientId: "shop", request: unknown) }?.fieldErrors.keys
                .first == "CreditedWalletId")

        _ = try await f.base.services.cards.update(clientId: "shop", id: card.id, active: false)
        let inactive = await PaymentsError.from {
            try await f.payIns.create(clientId: "shop", request: f.request(card: card))
        }
        #expect(inactive?.fieldErrors["CardId"] == "The card is not active.")

        let stranger = try await f.base.payer(email: "jane@example.com")
        let (card2, _) = try await f.card()
        var notTheirs = f.request(card: card2)
        notTheirs.authorId = stranger.id
        #expect(
            await PaymentsError.from { try await f.payIns.create(clientId: "shop", request: notTheirs) }?.fieldErrors[
                "CardId"] != nil)
        #expect(try await f.balance() == 0)
    }

    @Test func cardValidationMovesNoFunds() async throws {
        let f = try await PayInFixture()
        let (card, _) = try await f.card()
        var request = f.request(card: card)
        request.creditedWalletId = nil
        request.debitedFunds = nil
        request.fees = nil
        let validation = try await f.payIns.create(clientId: "shop", request: request, purpose: .cardValidation)
        #expect(validation.status == "SUCCEEDED")
        #expect(validation.id.hasPrefix("val_"))
        #expect(try await f.balance() == 0)
        #expect(try await f.payIns.get(clientId: "shop", id: validation.id, purpose: .cardValidation) == validation)
        #expect(
            await PaymentsError.from { try await f.payIns.get(clientId: "shop", id: validation.id) }?.code == .notFound)
    }

    @Test func returnURLKeepsQueryAndFragment() {
        #expect(
            PayInService.returnURL("https://a.example/r", transactionId: "p1") == "https://a.example/r?transactionId=p1"
        )
        #expect(
            PayInService.returnURL("https://a.example/#/page", transactionId: "p1")
                == "https://a.example/?transactionId=p1#/page")
        #expect(
            PayInService.returnURL("https://a.example/r?x=1&", transactionId: "p1")
                == "https://a.example/r?x=1&transactionId=p1")
    }
}

@Suite struct RefundTests {
    @Test func partialAndFullRefundsDebitTheWalletAndNeverExceedThePayIn() async throws {
        let f = try await PayInFixture()
        let (card, _) = try await f.card()
        let payIn = try await f.payIns.create(clientId: "shop", request: f.request(card: card, amount: 1000, fees: 0))
        let partial = try await f.payIns.refund(
            clientId: "shop", payInId: payIn.id,
            request: RefundRequest(debitedFunds: Funds(currency: "EUR", amount: 300)))
        #expect(partial.status == "SUCCEEDED")
        #expect(try await f.balance() == 700)
        let over = await PaymentsError.from {
            try await f.payIns.refund(
                clientId: "shop", payInId: payIn.id,
                request: RefundRequest(debitedFunds: Funds(currency: "EUR", amount: 701)))
        }
        #expect(over?.fieldErrors["DebitedFunds.Amount"] != nil)
        let rest = try await f.payIns.refund(clientId: "shop", payInId: payIn.id, request: RefundRequest())
        #expect(rest.debitedFunds.amount == 700)
        #expect(try await f.balance() == 0)
        #expect(try await f.payIns.refunds(clientId: "shop", payInId: payIn.id, page: PageRequest()).items.count == 2)
        #expect(try await f.payIns.refund(clientId: "shop", id: partial.id) == partial)
        #expect(
            await PaymentsError.from {
                try await f.payIns.refund(clientId: "shop", payInId: payIn.id, request: RefundRequest())
            } != nil)
    }

    @Test func refundFeesAreKeptWhenPositiveAndGivenBackAtMostOnceWhenNegative() async throws {
        let f = try await PayInFixture()
        let (card, _) = try await f.card()
        let payIn = try await f.payIns.create(clientId: "shop", request: f.request(card: card, amount: 1000, fees: 100))
        #expect(try await f.balance() == 900)
        func refund(_ amount: Int64?, _ fees: Int64?) async throws -> Refund {
            try await f.payIns.refund(
                clientId: "shop", payInId: payIn.id,
                request: RefundRequest(
                    debitedFunds: amount.map { Funds(currency: "EUR", amount: $0) },
                    fees: fees.map { Funds(currency: "EUR", amount: $0) }))
        }
        // The SDK's own test: DebitedFunds 15, Fees 4. The platform keeps 4, the card gets 11.
        let kept = try await refund(15, 4)
        #expect(kept.status == "SUCCEEDED" && kept.creditedFunds.amount == 11 && kept.fees.amount == 4)
        #expect(try await f.balance() == 885)
        // More fees back than the pay-in took: FAILED with 005404, nothing moves.
        let tooMuch = try await refund(10, -101)
        #expect(tooMuch.status == "FAILED" && tooMuch.result == .refundedFeesAboveInitialFees)
        #expect(try await f.balance() == 885)
        let back = try await refund(10, -60)
        #expect(back.status == "SUCCEEDED" && back.creditedFunds.amount == 70)
        // 40 of the fees are left to give back: 41 fails, and the full refund gives exactly those 40.
        #expect(try await refund(10, -41).result == .refundedFeesAboveInitialFees)
        let rest = try await refund(nil, nil)
        #expect(rest.debitedFunds.amount == 875 && rest.fees.amount == -40 && rest.creditedFunds.amount == 915)
        #expect(try await f.balance() == 0)
        let stored = try await f.payIns.get(clientId: "shop", id: payIn.id)
        #expect(stored.refunded == 900 && stored.refundedFees == 100)
        // Fees above the refunded amount would credit the card a negative amount.
        let other = try await f.payIns.create(clientId: "shop", request: f.request(card: card, amount: 500, fees: 0))
        let negative = await PaymentsError.from {
            try await f.payIns.refund(
                clientId: "shop", payInId: other.id,
                request: RefundRequest(
                    debitedFunds: Funds(currency: "EUR", amount: 5), fees: Funds(currency: "EUR", amount: 6)))
        }
        #expect(negative?.fieldErrors["Fees.Amount"] != nil)
    }

    @Test func extremeRefundAmountsAreFieldErrorsNotTraps() async throws {
        let f = try await PayInFixture()
        let (card, _) = try await f.card()
        let payIn = try await f.payIns.create(clientId: "shop", request: f.request(card: card, amount: 1000, fees: 100))
        for (debited, fees, field) in [
            (Int64(15), Int64.min, "Fees.Amount"), (15, Int64.max, "Fees.Amount"),
            (Int64.min, 0, "DebitedFunds.Amount"),
            (Int64.max, 0, "DebitedFunds.Amount"), (Funds.maximumAmount + 1, 0, "DebitedFunds.Amount"),
            (15, -Funds.maximumAmount - 1, "Fees.Amount"),
        ] {
            let error = await PaymentsError.from {
                try await f.payIns.refund(
                    clientId: "shop", payInId: payIn.id,
                    request: RefundRequest(
                        debitedFunds: Funds(currency: "EUR", amount: debited),
                        fees: Funds(currency: "EUR", amount: fees)))
            }
            #expect(error?.fieldErrors[field] != nil, "\(debited) \(fees)")
        }
        #expect(try await f.balance() == 900)
        // Pay-in amounts at and beyond the limit.
        for amount in [Int64.max, Int64.min, Funds.maximumAmount + 1] {
            let error = await PaymentsError.from {
                try await f.payIns.create(clientId: "shop", request: f.request(card: card, amount: amount, fees: 0))
            }
            #expect(error?.fieldErrors["DebitedFunds.Amount"] != nil, "\(amount)")
        }
    }

    @Test func onlySucceededPayInsCanBeRefunded() async throws {
        let f = try await PayInFixture()
        let (card, _) = try await f.card(PayInFixture.challenged)
        let pending = try await f.payIns.create(clientId: "shop", request: f.request(card: card))
        #expect(
            await PaymentsError.from {
                try await f.payIns.refund(clientId: "shop", payInId: pending.id, request: RefundRequest())
            }?.code == .invalidParameters)
    }

    @Test func moneyIsConservedOverARandomisedRun() async throws {
        let f = try await PayInFixture()
        let (card, _) = try await f.card()
        var generator = SystemRandomNumberGenerator()
        var succeeded: [PayIn] = []
        var expected: Int64 = 0
        for _ in 0..<40 {
            if !succeeded.isEmpty, Bool.random(using: &generator) {
                let target = succeeded.randomElement(using: &generator)!
                let current = try await f.payIns.get(clientId: "shop", id: target.id)
                let left = current.creditedFunds.amount - current.refunded
                guard left > 0 else { continue }
                let amount = Int64.random(in: 1...left, using: &generator)
                let refund = try await f.payIns.refund(
                    clientId: "shop", payInId: target.id,
                    request: RefundRequest(debitedFunds: Funds(currency: "EUR", amount: amount)))
                if refund.status == "SUCCEEDED" { expected -= amount }
            } else {
                let amount = Int64.random(in: 1...5000, using: &generator)
                let fees = Int64.random(in: 0...amount, using: &generator)
                let payIn = try await f.payIns.create(
                    clientId: "shop", request: f.request(card: card, amount: amount, fees: fees))
                if payIn.status == "SUCCEEDED" {
                    succeeded.append(payIn)
                    expected += amount - fees
                }
            }
        }
        #expect(try await f.balance() == expected)
        #expect(expected >= 0)
    }
}
