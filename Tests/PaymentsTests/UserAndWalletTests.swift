import Foundation
import Testing
import VaultCore

@testable import Payments

@Suite struct UserAndWalletTests {
    @Test func naturalPayerNeedsNamesAndAValidEmail() async throws {
        let fixture = PaymentsFixture()
        let user = try await fixture.payer()
        #expect(user.personType == .natural)
        #expect(user.userCategory == "PAYER")
        #expect(user.kycLevel == "LIGHT")
        #expect(user.id.hasPrefix("user_"))
        #expect(try await fixture.services.users.get(clientId: "shop", id: user.id) == user)

        var fields = UserFields()
        fields.email = "not-an-email"
        fields.nationality = "XX"
        let error = await PaymentsError.from {
            try await fixture.services.users.create(clientId: "shop", type: .natural, sca: false, fields: fields)
        }
        #expect(error?.code == .invalidParameters)
        #expect(Set(error?.fieldErrors.keys.map { $0 } ?? []) == ["FirstName", "LastName", "Email", "Nationality"])
    }

    @Test(arguments: [
        ("a@b.co", true), ("john.doe+tag@example.com", true), ("@example.com", false), ("john@", false),
        ("john@example", false), ("jo hn@example.com", false), ("a@b@c.com", false), ("john@exa..mple.com", false),
    ])
    func emailRule(address: String, valid: Bool) {
        #expect(FieldRules.isEmail(address) == valid)
    }

    @Test(arguments: ["4970107111111119", "4970.1073.6205.4174", "4970 1071 1111 1119", "4970-1071-1111-1119"])
    func quotedValuesHideCardNumbersWithOrWithoutSeparators(value: String) {
        #expect(FieldRules.quote(value) == "'(hidden)'")
        #expect(FieldRules.quote("EURO") == "'EURO'")
    }

    @Test func ownersNeedBirthdayNationalityResidenceAndTerms() async throws {
        let fixture = PaymentsFixture()
        var fields = UserFields()
        fields.firstName = "Ann"
        fields.lastName = "Lee"
        fields.email = "ann@example.com"
        fields.userCategory = "OWNER"
        let error = await PaymentsError.from {
            try await fixture.services.users.create(clientId: "shop", type: .natural, sca: false, fields: fields)
        }
        #expect(
            Set(error?.fieldErrors.keys.map { $0 } ?? [])
                == ["Birthday", "Nationality", "CountryOfResidence", "TermsAndConditionsAccepted"])
        fields.birthday = 188_352_000
        fields.nationality = "FR"
        fields.countryOfResidence = "FR"
        fields.termsAndConditionsAccepted = true
        let owner = try await fixture.services.users.create(
            clientId: "shop", type: .natural, sca: false, fields: fields)
        #expect(owner.termsAndConditionsAcceptedDate == Int64(fixture.clock.now.timeIntervalSince1970))
        fields.birthday = Int64(fixture.clock.now.timeIntervalSince1970) + 86_400
        let future = await PaymentsError.from {
            try await fixture.services.users.create(clientId: "shop", type: .natural, sca: false, fields: fields)
        }
        #expect(future?.fieldErrors["Birthday"] != nil)
    }

    @Test func scaEndpointsRequireCategoryAndTerms() async throws {
        let fixture = PaymentsFixture()
        var fields = UserFields()
        fields.firstName = "John"
        fields.lastName = "Doe"
        fields.email = "john@example.com"
        let error = await PaymentsError.from {
            try await fixture.services.users.create(clientId: "shop", type: .natural, sca: true, fields: fields)
        }
        #expect(Set(error?.fieldErrors.keys.map { $0 } ?? []) == ["UserCategory", "TermsAndConditionsAccepted"])
        fields.userCategory = "PAYER"
        fields.termsAndConditionsAccepted = true
        let user = try await fixture.services.users.create(clientId: "shop", type: .natural, sca: true, fields: fields)
        #expect(user.sca)
        #expect(user.userStatus == "ACTIVE")
    }

    @Test func legalUsersNeedTheirOwnFields() async throws {
        let fixture = PaymentsFixture()
        var fields = UserFields()
        fields.email = "corp@example.com"
        fields.legalPersonType = "COMPANY"
        let error = await PaymentsError.from {
            try await fixture.services.users.create(clientId: "shop", type: .legal, sca: false, fields: fields)
        }
        #expect(
            Set(error?.fieldErrors.keys.map { $0 } ?? [])
                == ["Name", "LegalPersonType", "LegalRepresentativeFirstName", "LegalRepresentativeLastName"])
        fields.name = "Corp"
        fields.legalPersonType = "BUSINESS"
        fields.legalRepresentativeFirstName = "Ann"
        fields.legalRepresentativeLastName = "Lee"
        fields.headquartersAddress = Address(addressLine1: "1 rue", city: "Paris", postalCode: "75001", country: "FR")
        let legal = try await fixture.services.users.create(clientId: "shop", type: .legal, sca: false, fields: fields)
        #expect(legal.personType == .legal)
        // Reading a legal user as a natural one finds nothing.
        let wrongType = await PaymentsError.from {
            try await fixture.services.users.get(clientId: "shop", id: legal.id, type: .natural)
        }
        #expect(wrongType?.code == .notFound)
        fields.headquartersAddress?.country = "FRA"
        let badAddress = await PaymentsError.from {
            try await fixture.services.users.create(clientId: "shop", type: .legal, sca: false, fields: fields)
        }
        #expect(badAddress?.fieldErrors["HeadquartersAddress.Country"] != nil)
    }

    @Test func updateMergesAndRevalidates() async throws {
        let fixture = PaymentsFixture()
        let user = try await fixture.payer()
        var changes = UserFields()
        changes.firstName = "Johnny"
        let updated = try await fixture.services.users.update(
            clientId: "shop", id: user.id, type: .natural, changes: changes)
        #expect(updated.fields.firstName == "Johnny")
        #expect(updated.fields.lastName == "Doe")
        #expect(updated.creationDate == user.creationDate)
        var bad = UserFields()
        bad.email = "broken"
        let error = await PaymentsError.from {
            try await fixture.services.users.update(clientId: "shop", id: user.id, type: .natural, changes: bad)
        }
        #expect(error?.fieldErrors.keys.first == "Email")
        #expect(try await fixture.services.users.get(clientId: "shop", id: user.id).fields.email == "john@example.com")
    }

    @Test func oneClientNeverSeesAnothersUsers() async throws {
        let fixture = PaymentsFixture()
        let user = try await fixture.payer("shop")
        let error = await PaymentsError.from { try await fixture.services.users.get(clientId: "other", id: user.id) }
        #expect(error?.code == .notFound)
        #expect(error?.fieldErrors["RessourceNotFound"] == "Cannot found the ressource User with the id=\(user.id) ")
    }

    @Test func walletsValidateOwnerAndCurrencyAndStartAtZero() async throws {
        let fixture = PaymentsFixture()
        let user = try await fixture.payer()
        let wallet = try await fixture.services.wallets.create(
            clientId: "shop", owners: [user.id], description: "Main", currency: "EUR", tag: "t")
        #expect(wallet.balance == 0)
        #expect(wallet.fundsType == "DEFAULT")
        #expect(try await fixture.services.wallets.get(clientId: "shop", id: wallet.id) == wallet)

        let badCurrency = await PaymentsError.from {
            try await fixture.services.wallets.create(
                clientId: "shop", owners: [user.id], description: "W", currency: "XPX", tag: nil)
        }
        #expect(badCurrency?.fieldErrors["Currency"]?.contains("ISO 4217") == true)
        let twoOwners = await PaymentsError.from {
            try await fixture.services.wallets.create(
                clientId: "shop", owners: [user.id, user.id], description: "W", currency: "EUR", tag: nil)
        }
        #expect(twoOwners?.fieldErrors["Owners"] != nil)
        let unknownOwner = await PaymentsError.from {
            try await fixture.services.wallets.create(
                clientId: "other", owners: [user.id], description: "W", currency: "EUR", tag: nil)
        }
        #expect(unknownOwner?.fieldErrors["Owners"] != nil)
        let updated = try await fixture.services.wallets.update(
            clientId: "shop", id: wallet.id, description: "New", tag: nil)
        #expect(updated.description == "New" && updated.tag == "t" && updated.currency == "EUR")
    }

    @Test func walletListsPageAndSortByCreationDate() async throws {
        let fixture = PaymentsFixture()
        let user = try await fixture.payer()
        var created: [String] = []
        for index in 0..<5 {
            let wallet = try await fixture.services.wallets.create(
                clientId: "shop", owners: [user.id], description: "W\(index)", currency: "EUR", tag: nil)
            created.append(wallet.id)
            fixture.clock.advance(by: 10)
        }
        let first = try await fixture.services.wallets.list(
            clientId: "shop", userId: user.id, page: PageRequest(page: 1, perPage: 2))
        #expect(first.items.map(\.id) == Array(created[0..<2]))
        #expect(first.totalItems == 5 && first.totalPages == 3)
        let last = try await fixture.services.wallets.list(
            clientId: "shop", userId: user.id, page: PageRequest(page: 3, perPage: 2))
        #expect(last.items.map(\.id) == [created[4]])
        let newest = try await fixture.services.wallets.list(
            clientId: "shop", userId: user.id,
            page: try PageRequest(page: nil, perPage: "10", sort: "CreationDate:DESC"))
        #expect(newest.items.map(\.id) == created.reversed())
        let beyond = try await fixture.services.wallets.list(
            clientId: "shop", userId: user.id, page: PageRequest(page: 9, perPage: 2))
        #expect(beyond.items.isEmpty)
        let missing = await PaymentsError.from {
            try await fixture.services.wallets.list(clientId: "shop", userId: "user_nobody", page: PageRequest())
        }
        #expect(missing?.code == .notFound)
    }

    @Test func pageParametersAreChecked() throws {
        #expect(
            try PageRequest(page: "2", perPage: "100", sort: "creationdate:asc") == PageRequest(page: 2, perPage: 100))
        for (page, perPage, sort) in [
            ("0", nil, nil), ("x", nil, nil), (nil, "101", nil), (nil, "0", nil),
            (nil, nil, "Name:ASC"), (nil, nil, "CreationDate"),
        ] as [(String?, String?, String?)] {
            #expect(throws: PaymentsError.self) { try PageRequest(page: page, perPage: perPage, sort: sort) }
        }
    }
}
