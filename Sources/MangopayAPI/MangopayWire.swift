import Foundation
import Payments
import VaultCore

/// Renders domain values as Mangopay v2.01 JSON objects: PascalCase keys in the real API's order, every key
/// present (null when unset), dates as Unix seconds, amounts in minor units.
enum MangopayWire {
    static func address(_ address: Address?) -> MangopayJSON {
        guard let address else { return .null }
        return .object([
            ("AddressLine1", .text(address.addressLine1)), ("AddressLine2", .text(address.addressLine2)),
            ("City", .text(address.city)), ("Region", .text(address.region)),
            ("PostalCode", .text(address.postalCode)), ("Country", .text(address.country)),
        ])
    }

    /// - Parameters:
    ///   - status: the `UserStatus` when SCA decides it (`PENDING_USER_ACTION` until an OWNER enrolls).
    ///   - redirectURL: the open SCA session's page, shown as `PendingUserAction.RedirectUrl`.
    static func user(_ user: User, status: String? = nil, redirectURL: String? = nil) -> MangopayJSON {
        let fields = user.fields
        var members: [(String, MangopayJSON)] = [
            ("Id", .string(user.id)), ("Tag", .text(fields.tag)), ("CreationDate", .int(user.creationDate)),
            ("PersonType", .string(user.personType.rawValue)), ("Email", .text(fields.email)),
            ("KYCLevel", .string(user.kycLevel)),
            ("TermsAndConditionsAccepted", .bool(fields.termsAndConditionsAccepted ?? false)),
            ("TermsAndConditionsAcceptedDate", .integer(user.termsAndConditionsAcceptedDate)),
            ("UserCategory", .string(user.userCategory)), ("UserStatus", .string(status ?? user.userStatus)),
        ]
        switch user.personType {
        case .natural:
            members += [
                ("FirstName", .text(fields.firstName)), ("LastName", .text(fields.lastName)),
                ("Address", address(fields.address)), ("Birthday", .integer(fields.birthday)),
                ("Nationality", .text(fields.nationality)), ("CountryOfResidence", .text(fields.countryOfResidence)),
                ("Occupation", .text(fields.occupation)), ("IncomeRange", .text(fields.incomeRange)),
                ("ProofOfIdentity", .null), ("ProofOfAddress", .null),
                ("Capacity", .string(fields.capacity ?? "NORMAL")),
                ("PhoneNumber", .text(fields.phoneNumber)), ("PhoneNumberCountry", .text(fields.phoneNumberCountry)),
            ]
        case .legal:
            members += [
                ("Name", .text(fields.name)), ("LegalPersonType", .text(fields.legalPersonType)),
                ("HeadquartersAddress", address(fields.headquartersAddress)),
                ("LegalRepresentativeAddress", address(fields.legalRepresentativeAddress)),
                ("CompanyNumber", .text(fields.companyNumber)),
                ("ProofOfRegistration", .null), ("ShareholderDeclaration", .null), ("Statute", .null),
            ]
            if user.sca {
                members.append(
                    (
                        "LegalRepresentative",
                        .object([
                            ("FirstName", .text(fields.legalRepresentativeFirstName)),
                            ("LastName", .text(fields.legalRepresentativeLastName)),
                            ("Birthday", .integer(fields.legalRepresentativeBirthday)),
                            ("Nationality", .text(fields.legalRepresentativeNationality)),
                            ("CountryOfResidence", .text(fields.legalRepresentativeCountryOfResidence)),
                            ("Email", .text(fields.legalRepresentativeEmail)),
                            ("PhoneNumber", .text(fields.phoneNumber)),
                            ("PhoneNumberCountry", .text(fields.phoneNumberCountry)),
                        ])
                    ))
            } else {
                members += [
                    ("LegalRepresentativeFirstName", .text(fields.legalRepresentativeFirstName)),
                    ("LegalRepresentativeLastName", .text(fields.legalRepresentativeLastName)),
                    ("LegalRepresentativeEmail", .text(fields.legalRepresentativeEmail)),
                    ("LegalRepresentativeBirthday", .integer(fields.legalRepresentativeBirthday)),
                    ("LegalRepresentativeNationality", .text(fields.legalRepresentativeNationality)),
                    ("LegalRepresentativeCountryOfResidence", .text(fields.legalRepresentativeCountryOfResidence)),
                    ("LegalRepresentativeProofOfIdentity", .null),
                ]
            }
        }
        if user.sca {
            // The key's presence is what makes the Python SDK read the answer as an SCA user.
            members.append(("PendingUserAction", redirectURL.map(pendingUserAction) ?? .null))
        }
        return .object(members)
    }

    /// `{"RedirectUrl": url}`: where the user completes SCA.
    static func pendingUserAction(_ url: String) -> MangopayJSON { .object([("RedirectUrl", .string(url))]) }

    static func wallet(_ wallet: Wallet) -> MangopayJSON {
        .object([
            ("Id", .string(wallet.id)), ("Tag", .text(wallet.tag)), ("CreationDate", .int(wallet.creationDate)),
            ("Owners", .array([.string(wallet.ownerId)])), ("Description", .string(wallet.description)),
            ("Balance", .object([("Currency", .string(wallet.currency)), ("Amount", .int(wallet.balance))])),
            ("Currency", .string(wallet.currency)), ("FundsType", .string(wallet.fundsType)),
        ])
    }

    static func cardRegistration(_ registration: CardRegistration, url: String) -> MangopayJSON {
        .object([
            ("Id", .string(registration.id)), ("Tag", .text(registration.tag)),
            ("CreationDate", .int(registration.creationDate)), ("UserId", .string(registration.userId)),
            ("AccessKey", .string(registration.accessKey)),
            ("PreregistrationData", .string(registration.preregistrationData)),
            ("RegistrationData", .text(registration.registrationData)), ("CardId", .text(registration.cardId)),
            ("CardType", .string(registration.cardType)), ("CardRegistrationURL", .string(url)),
            ("ResultCode", .text(registration.result?.code)), ("ResultMessage", .text(registration.result?.message)),
            ("Currency", .string(registration.currency)), ("Status", .string(registration.status.rawValue)),
        ])
    }

    static func card(_ card: Card) -> MangopayJSON {
        .object([
            ("ExpirationDate", .string(card.expirationDate)), ("Alias", .string(card.alias)),
            ("CardType", .string(card.cardType)), ("CardProvider", .string(card.cardProvider)),
            ("Country", .text(card.country)), ("Product", .null), ("BankCode", .string("unknown")),
            ("Active", .bool(card.active)), ("Currency", .string(card.currency)),
            ("Validity", .string(card.validity.rawValue)), ("UserId", .string(card.userId)), ("Id", .string(card.id)),
            ("Tag", .text(card.tag)), ("CreationDate", .int(card.creationDate)),
            ("Fingerprint", .string(card.fingerprint)), ("CardHolderName", .text(card.cardHolderName)),
        ])
    }

    /// A profiling attempt with the risk verdict of every pay-in that used it (`PayIns`).
    static func profilingAttempt(_ attempt: ProfilingAttempt, assessments: [PayInAssessment] = []) -> MangopayJSON {
        .object([
            ("Reference", .string(attempt.reference)), ("CreationDate", .int(attempt.creationDate)),
            ("CardRegistrationId", .string(attempt.cardRegistrationId)), ("CardId", .string(attempt.cardId)),
            ("IpAddress", .text(attempt.ipAddress)), ("UserAgent", .text(attempt.userAgent)),
            ("AcceptLanguage", .text(attempt.acceptLanguage)),
            ("DeviceData", .object(attempt.device.keys.sorted().map { ($0, .string(attempt.device[$0]!)) })),
            ("PayIns", .array(assessments.map(assessment))),
        ])
    }

    static func storedResponse(_ stored: StoredResponse) -> MangopayJSON {
        let resource = (try? MangopayJSON.parse(stored.body)) ?? .null
        return .object([
            ("StatusCode", .string(String(stored.statusCode))), ("ContentLength", .string(String(stored.body.count))),
            ("ContentType", .string(stored.contentType)), ("Date", .string(httpDate(stored.date))),
            ("RequestURL", .string(stored.requestURL)), ("Resource", resource),
        ])
    }

    /// An IMF-fixdate (`Wed, 13 Jan 2016 22:25:56 GMT`) from Unix seconds, without `DateFormatter`.
    static func httpDate(_ seconds: Int64) -> String {
        let parts = UTCDateParts(unixSeconds: seconds)
        let weekdays = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        func two(_ value: Int) -> String { value < 10 ? "0" + String(value) : String(value) }
        let time = parts.secondOfDay
        return weekdays[parts.weekday] + ", " + two(parts.day) + " " + months[parts.month - 1] + " "
            + String(parts.year)
            + " " + two(time / 3600) + ":" + two(time / 60 % 60) + ":" + two(time % 60) + " GMT"
    }
}
