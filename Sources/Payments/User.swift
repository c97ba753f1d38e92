/// A postal address as the Mangopay API carries it; every key is always present on the wire (null allowed).
public struct Address: Sendable, Equatable, Codable {
    public var addressLine1: String?
    public var addressLine2: String?
    public var city: String?
    public var region: String?
    public var postalCode: String?
    public var country: String?

    public init(
        addressLine1: String? = nil, addressLine2: String? = nil, city: String? = nil, region: String? = nil,
        postalCode: String? = nil, country: String? = nil
    ) {
        self.addressLine1 = addressLine1
        self.addressLine2 = addressLine2
        self.city = city
        self.region = region
        self.postalCode = postalCode
        self.country = country
    }

    func validate(_ rules: inout FieldRules, prefix: String) {
        rules.length(addressLine1, prefix + ".AddressLine1")
        rules.length(addressLine2, prefix + ".AddressLine2")
        rules.length(city, prefix + ".City")
        rules.length(region, prefix + ".Region")
        rules.length(postalCode, prefix + ".PostalCode", maximum: 50)
        rules.country(country, prefix + ".Country")
    }
}

/// Natural person or legal entity.
public enum PersonType: String, Sendable, Codable {
    case natural = "NATURAL"
    case legal = "LEGAL"
}

/// The fields a merchant may set on a user, all optional: creation and update requests fill what they carry.
///
/// Read-only fields of the wire object (`Id`, `CreationDate`, `KYCLevel`, `UserStatus`, …) have no place here,
/// so a client sending the whole object back cannot change them.
public struct UserFields: Sendable, Equatable, Codable {
    public var tag: String?
    public var email: String?
    public var userCategory: String?
    public var termsAndConditionsAccepted: Bool?
    // Natural persons.
    public var firstName: String?
    public var lastName: String?
    public var address: Address?
    public var birthday: Int64?
    public var nationality: String?
    public var countryOfResidence: String?
    public var occupation: String?
    public var incomeRange: String?
    public var capacity: String?
    public var phoneNumber: String?
    public var phoneNumberCountry: String?
    // Legal entities.
    public var name: String?
    public var legalPersonType: String?
    public var headquartersAddress: Address?
    public var legalRepresentativeFirstName: String?
    public var legalRepresentativeLastName: String?
    public var legalRepresentativeEmail: String?
    public var legalRepresentativeBirthday: Int64?
    public var legalRepresentativeNationality: String?
    public var legalRepresentativeCountryOfResidence: String?
    public var legalRepresentativeAddress: Address?
    public var companyNumber: String?

    public init() {}

    /// Copies every field `other` sets onto this one.
    mutating func merge(_ other: UserFields) {
        func take<T>(_ path: WritableKeyPath<UserFields, T?>) {
            if let value = other[keyPath: path] { self[keyPath: path] = value }
        }
        take(\.tag)
        take(\.email)
        take(\.userCategory)
        take(\.termsAndConditionsAccepted)
        take(\.firstName)
        take(\.lastName)
        take(\.address)
        take(\.birthday)
        take(\.nationality)
        take(\.countryOfResidence)
        take(\.occupation)
        take(\.incomeRange)
        take(\.capacity)
        take(\.phoneNumber)
        take(\.phoneNumberCountry)
        take(\.name)
        take(\.legalPersonType)
        take(\.headquartersAddress)
        take(\.legalRepresentativeFirstName)
        take(\.legalRepresentativeLastName)
        take(\.legalRepresentativeEmail)
        take(\.legalRepresentativeBirthday)
        take(\.legalRepresentativeNationality)
        take(\.legalRepresentativeCountryOfResidence)
        take(\.legalRepresentativeAddress)
        take(\.companyNumber)
    }
}

/// A user (natural or legal) of a client.
public struct User: Sendable, Equatable, Codable {
    public var id: String
    public var clientId: String
    public var personType: PersonType
    /// Created through the `/sca/` endpoints.
    public var sca: Bool
    public var creationDate: Int64
    public var termsAndConditionsAcceptedDate: Int64?
    public var fields: UserFields
    /// When the user was closed (Unix seconds): their cards are deactivated and their card numbers erased.
    public var closedAt: Int64? = nil

    /// `LIGHT` until KYC documents exist (they do not, in CardVault).
    public var kycLevel: String { "LIGHT" }
    /// SCA enrolment is not simulated: every user is active.
    public var userStatus: String { closedAt == nil ? "ACTIVE" : "CLOSED" }
    /// `PAYER` unless set.
    public var userCategory: String { fields.userCategory ?? "PAYER" }
}

/// Validation of user fields, as the real API does it: required fields by person type and category, formats of
/// emails, country codes and dates.
enum UserRules {
    static let categories = ["PAYER", "OWNER", "PLATFORM"]
    static let legalPersonTypes = ["BUSINESS", "ORGANIZATION", "SOLETRADER", "PARTNERSHIP"]
    static let capacities = ["NORMAL", "DECLARATIVE"]
    static let incomeRanges = ["1", "2", "3", "4", "5", "6"]

    static func validate(_ fields: inout UserFields, type: PersonType, sca: Bool, now: Int64) throws {
        var rules = FieldRules()
        if sca, fields.userCategory == nil { rules.fail("UserCategory", "The UserCategory field is required.") }
        rules.oneOf(fields.userCategory, categories, "UserCategory")
        rules.required(fields.email, "Email", maximum: 254)
        rules.email(fields.email, "Email")
        rules.length(fields.tag, "Tag")
        let owner = fields.userCategory == "OWNER"
        if owner || sca, fields.termsAndConditionsAccepted != true {
            rules.fail(
                "TermsAndConditionsAccepted", "The terms and conditions must be accepted for this user category.")
        }
        switch type {
        case .natural:
            rules.required(fields.firstName, "FirstName", maximum: 100)
            rules.required(fields.lastName, "LastName", maximum: 100)
            if owner {
                if fields.birthday == nil { rules.fail("Birthday", "The Birthday field is required.") }
                rules.required(fields.nationality, "Nationality")
                rules.required(fields.countryOfResidence, "CountryOfResidence")
            }
            rules.country(fields.nationality, "Nationality")
            rules.country(fields.countryOfResidence, "CountryOfResidence")
            if let birthday = fields.birthday, birthday > now || birthday < -5_000_000_000 {
                rules.fail("Birthday", "The Birthday must be a date in the past.")
            }
            rules.length(fields.occupation, "Occupation")
            rules.oneOf(fields.capacity, capacities, "Capacity")
            rules.oneOf(fields.incomeRange, incomeRanges, "IncomeRange")
            rules.length(fields.phoneNumber, "PhoneNumber", maximum: 30)
            rules.country(fields.phoneNumberCountry, "PhoneNumberCountry")
            fields.address?.validate(&rules, prefix: "Address")
        case .legal:
            rules.required(fields.name, "Name")
            rules.required(fields.legalPersonType, "LegalPersonType")
            rules.oneOf(fields.legalPersonType, legalPersonTypes, "LegalPersonType")
            // SCA bodies carry the representative as an object: name its fields by their path there.
            let representative = sca ? "LegalRepresentative." : "LegalRepresentative"
            rules.required(fields.legalRepresentativeFirstName, representative + "FirstName", maximum: 100)
            rules.required(fields.legalRepresentativeLastName, representative + "LastName", maximum: 100)
            if owner {
                if fields.headquartersAddress == nil {
                    rules.fail("HeadquartersAddress", "The HeadquartersAddress field is required.")
                }
                if fields.legalRepresentativeBirthday == nil {
                    rules.fail(representative + "Birthday", "The \(representative)Birthday field is required.")
                }
                rules.required(fields.legalRepresentativeNationality, representative + "Nationality")
                rules.required(fields.legalRepresentativeCountryOfResidence, representative + "CountryOfResidence")
                if fields.legalPersonType == "BUSINESS" { rules.required(fields.companyNumber, "CompanyNumber") }
            }
            rules.email(fields.legalRepresentativeEmail, representative + "Email")
            rules.country(fields.legalRepresentativeNationality, representative + "Nationality")
            rules.country(fields.legalRepresentativeCountryOfResidence, representative + "CountryOfResidence")
            if let birthday = fields.legalRepresentativeBirthday, birthday > now || birthday < -5_000_000_000 {
                rules.fail(representative + "Birthday", "The \(representative)Birthday must be a date in the past.")
            }
            if sca {
                rules.length(fields.phoneNumber, "LegalRepresentative.PhoneNumber", maximum: 30)
                rules.country(fields.phoneNumberCountry, "LegalRepresentative.PhoneNumberCountry")
            }
            rules.length(fields.companyNumber, "CompanyNumber", maximum: 50)
            fields.headquartersAddress?.validate(&rules, prefix: "HeadquartersAddress")
            fields.legalRepresentativeAddress?.validate(&rules, prefix: "LegalRepresentativeAddress")
        }
        try rules.check()
    }
}
