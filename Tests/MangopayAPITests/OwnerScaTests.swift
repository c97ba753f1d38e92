import Foundation
import HTTPServer
import OwnerAccounts
import Testing
import VaultCore

@testable import MangopayAPI
@testable import Payments

/// SCA of OWNER users: the enrollment record's states, the wire (user status, enrollment, the wallet-access
/// gate and its window on the injected clock) and the sandbox SCA page.
@Suite struct OwnerScaTests {
    @Test func enrollmentStates() {
        let start = ScaEnrollment(clientId: "shop", userId: "user_1")
        #expect(!start.enrolled && !start.grantsAccess(at: 1_000) && start.openSession(at: 1_000) == nil)
        let open = start.opening(secret: "s3cret", at: 1_000)
        #expect(open.openSession(at: 1_599) == "s3cret")
        #expect(open.openSession(at: 1_600) == nil)  // sessions last 10 minutes
        #expect(open.passing(secret: "other", at: 1_100, matches: ==) == nil)
        #expect(open.passing(secret: "s3cret", at: 1_600, matches: ==) == nil)
        let passed = try! #require(open.passing(secret: "s3cret", at: 1_100, matches: ==))
        #expect(passed.enrolled && passed.openSession(at: 1_100) == nil)  // the link works once
        #expect(passed.passing(secret: "s3cret", at: 1_101, matches: ==) == nil)
        #expect(passed.grantsAccess(at: 1_100 + ScaEnrollment.accessWindowSeconds - 1))
        #expect(!passed.grantsAccess(at: 1_100 + ScaEnrollment.accessWindowSeconds))
    }

    @Test func companyNumberFormats() throws {
        let french = try CompanyNumberFormat.validate(companyNumber: "123 456 789", countryCode: "fr")
        #expect(french.isValid && french.countryCode == "FR" && french.companyNumber == "123 456 789")
        #expect(try !CompanyNumberFormat.validate(companyNumber: "AB123456", countryCode: "IT").isValid)
        #expect(try CompanyNumberFormat.validate(companyNumber: "SC123456", countryCode: "GB").isValid)
        #expect(throws: PaymentsError.self) { try CompanyNumberFormat.validate(companyNumber: "123", countryCode: nil) }
        #expect(throws: PaymentsError.self) { try CompanyNumberFormat.validate(companyNumber: "1", countryCode: "ZZ") }
    }

    static let owner =
        #"{"FirstName":"Ann","LastName":"Owner","Email":"ann@example.com","Birthday":188352000,"Nationality":"FR","CountryOfResidence":"FR","TermsAndConditionsAccepted":true,"UserCategory":"OWNER","PhoneNumber":"+33611111111","PhoneNumberCountry":"FR"}"#

    @Test func ownerEnrollsThenReadsWalletsForTheWindow() async throws {
        let harness = try await MangopayHarness.make()
        let created = await harness.send("POST", harness.api("/sca/users/natural"), body: Self.owner)
        #expect(created.status.code == 200)
        #expect(created.json["UserStatus"]?.stringValue == "PENDING_USER_ACTION")
        let userId = try #require(created.json["Id"]?.stringValue)
        let redirect = try #require(created.json["PendingUserAction"]?["RedirectUrl"]?.stringValue)
        let wallet = await harness.send(
            "POST", harness.api("/wallets"),
            body: #"{"Owners":[""# + userId + #""],"Currency":"EUR","Description":"w"}"#)
        let walletId = try #require(wallet.json["Id"]?.stringValue)

        // Merchant-side reads without ScaContext are unchanged; USER_PRESENT needs SCA first.
        #expect(await harness.send("GET", harness.api("/wallets/" + walletId)).status.code == 200)
        for path in ["/wallets/\(walletId)", "/users/\(userId)/wallets"] {
            let refused = await harness.send("GET", harness.api(path + "?ScaContext=USER_PRESENT"))
            #expect(refused.status.code == 401, "\(path)")
            #expect(refused.headers["WWW-Authenticate"]?.hasPrefix("PendingUserAction RedirectUrl=http") == true)
        }
        #expect(await harness.send("GET", harness.api("/wallets/\(walletId)?ScaContext=MAYBE")).status.code == 400)

        // The sandbox page: a forged secret is refused; the real one completes once.
        let target = String(redirect.drop(while: { $0 != "/" }).dropFirst(2).drop(while: { $0 != "/" }))
        let path = String(target.prefix(while: { $0 != "?" }))
        let secret = String(target.split(separator: "=").last ?? "")
        #expect(await harness.send("GET", target, authorized: false).status.code == 200)
        #expect(await harness.send("GET", path + "?s=forged", authorized: false).status.code == 404)
        let form = ["Content-Type": "application/x-www-form-urlencoded"]
        #expect(
            await harness.send("POST", path, body: "s=" + secret, headers: form, authorized: false).status.code == 200)
        #expect(
            await harness.send("POST", path, body: "s=" + secret, headers: form, authorized: false).status.code == 404)

        let user = await harness.send("GET", harness.api("/sca/users/" + userId))
        #expect(user.json["UserStatus"]?.stringValue == "ACTIVE")
        #expect(
            await harness.send("GET", harness.api("/wallets/\(walletId)?ScaContext=USER_PRESENT")).status.code == 200)
        harness.clock.advance(by: Double(ScaEnrollment.accessWindowSeconds))
        #expect(
            await harness.send("GET", harness.api("/wallets/\(walletId)?ScaContext=USER_PRESENT")).status.code == 401)
    }

    @Test func enrollmentAndConsentAnswerARedirectForOwnersOnly() async throws {
        let harness = try await MangopayHarness.make()
        let payer = try await harness.createUser()
        let refused = await harness.send("POST", harness.api("/sca/users/\(payer)/enrollment"))
        #expect(refused.status.code == 400)
        let owner = await harness.send("POST", harness.api("/users/natural"), body: Self.owner)
        let ownerId = try #require(owner.json["Id"]?.stringValue)
        #expect(owner.json["UserStatus"]?.stringValue == "ACTIVE")  // legacy endpoint: status unchanged
        for action in ["enrollment", "consent"] {
            let answer = await harness.send("POST", harness.api("/sca/users/\(ownerId)/\(action)"))
            #expect(answer.json["PendingUserAction"]?["RedirectUrl"]?.stringValue?.contains("/sca/") == true)
        }
    }
}
