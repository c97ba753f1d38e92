import Payments

/// Reads typed fields out of a Mangopay JSON request body, collecting a message for every field of the wrong
/// type, so that one 400 names them all. `null` counts as absent. Unknown fields and read-only ones (a client
/// sending a whole object back) are never looked at.
struct MangopayFields {
    let object: MangopayJSON
    private(set) var errors: [String: String] = [:]

    /// Parses `body`, which must be a JSON object.
    /// - Throws: ``PaymentsError`` `.invalidParameters` naming the body when it is empty, not JSON or no object.
    init(body: [UInt8]) throws {
        guard !body.isEmpty else { throw PaymentsError.invalid("Body", "The request body is empty; a JSON object was expected.") }
        let value: MangopayJSON
        do {
            value = try MangopayJSON.parse(body)
        } catch {
            throw PaymentsError.invalid("Body", "The request body is not valid JSON (at byte \(error.offset)).")
        }
        guard case .object = value else {
            throw PaymentsError.invalid("Body", "The request body must be a JSON object.")
        }
        object = value
    }

    init(object: MangopayJSON) {
        self.object = object
    }

    private mutating func wrongType(_ path: String, _ expected: String) {
        if errors[path] == nil { errors[path] = "The value of \(path) is not valid: \(expected) was expected." }
    }

    private func value(_ key: String) -> MangopayJSON? {
        guard let value = object[key], value != .null else { return nil }
        return value
    }

    mutating func string(_ key: String, path: String? = nil) -> String? {
        guard let value = value(key) else { return nil }
        guard case .string(let text) = value else {
            wrongType(path ?? key, "a string")
            return nil
        }
        return text
    }

    /// An integer (JSON number without fraction; integral decimals accepted).
    mutating func integer(_ key: String, path: String? = nil) -> Int64? {
        switch value(key) {
        case nil: return nil
        case .int(let number): return number
        case .double(let number) where number.rounded() == number && abs(number) < 9e15: return Int64(number)
        default:
            wrongType(path ?? key, "an integer")
            return nil
        }
    }

    /// A boolean: `true`/`false`, or `1`/`0` as the Python SDK sends them.
    mutating func boolean(_ key: String, path: String? = nil) -> Bool? {
        switch value(key) {
        case nil: return nil
        case .bool(let flag): return flag
        case .int(let number) where number == 0 || number == 1: return number == 1
        default:
            wrongType(path ?? key, "a boolean")
            return nil
        }
    }

    mutating func strings(_ key: String) -> [String]? {
        guard let value = value(key) else { return nil }
        guard case .array(let items) = value else {
            wrongType(key, "an array of strings")
            return nil
        }
        var result: [String] = []
        for item in items {
            guard case .string(let text) = item else {
                wrongType(key, "an array of strings")
                return nil
            }
            result.append(text)
        }
        return result
    }

    mutating func nested(_ key: String) -> MangopayFields? {
        guard let value = value(key) else { return nil }
        guard case .object = value else {
            wrongType(key, "an object")
            return nil
        }
        return MangopayFields(object: value)
    }

    mutating func address(_ key: String) -> Address? {
        guard var fields = nested(key) else { return nil }
        let address = Address(
            addressLine1: fields.string("AddressLine1", path: key + ".AddressLine1"),
            addressLine2: fields.string("AddressLine2", path: key + ".AddressLine2"),
            city: fields.string("City", path: key + ".City"),
            region: fields.string("Region", path: key + ".Region"),
            postalCode: fields.string("PostalCode", path: key + ".PostalCode"),
            country: fields.string("Country", path: key + ".Country"))
        errors.merge(fields.errors) { first, _ in first }
        return address
    }

    /// Records a problem with `path` unless one is recorded already.
    mutating func fail(_ path: String, _ problem: String) {
        if errors[path] == nil { errors[path] = problem }
    }

    /// Takes over the problems found in a nested object's fields, with `prefix` before their paths.
    mutating func merge(_ nested: MangopayFields, prefix: String = "") {
        for (path, problem) in nested.errors { fail(prefix + path, problem) }
    }

    /// Throws the collected type errors, if any.
    func check() throws {
        if !errors.isEmpty { throw PaymentsError.invalid(errors) }
    }

    /// The user fields of a natural or legal user body (`LegalRepresentative` object for SCA legal users).
    mutating func userFields(type: PersonType, sca: Bool) -> UserFields {
        var fields = UserFields()
        fields.tag = string("Tag")
        fields.email = string("Email")
        fields.userCategory = string("UserCategory")
        fields.termsAndConditionsAccepted = boolean("TermsAndConditionsAccepted")
        switch type {
        case .natural:
            fields.firstName = string("FirstName")
            fields.lastName = string("LastName")
            fields.address = address("Address")
            fields.birthday = integer("Birthday")
            fields.nationality = string("Nationality")
            fields.countryOfResidence = string("CountryOfResidence")
            fields.occupation = string("Occupation")
            fields.incomeRange = string("IncomeRange")
            fields.capacity = string("Capacity")
            fields.phoneNumber = string("PhoneNumber")
            fields.phoneNumberCountry = string("PhoneNumberCountry")
        case .legal:
            fields.name = string("Name")
            fields.legalPersonType = string("LegalPersonType")
            fields.headquartersAddress = address("HeadquartersAddress")
            fields.legalRepresentativeAddress = address("LegalRepresentativeAddress")
            fields.companyNumber = string("CompanyNumber")
            if sca {
                if var representative = nested("LegalRepresentative") {
                    fields.legalRepresentativeFirstName = representative.string("FirstName", path: "LegalRepresentative.FirstName")
                    fields.legalRepresentativeLastName = representative.string("LastName", path: "LegalRepresentative.LastName")
                    fields.legalRepresentativeEmail = representative.string("Email", path: "LegalRepresentative.Email")
                    fields.legalRepresentativeBirthday = representative.integer("Birthday", path: "LegalRepresentative.Birthday")
                    fields.legalRepresentativeNationality = representative.string(
                        "Nationality", path: "LegalRepresentative.Nationality")
                    fields.legalRepresentativeCountryOfResidence = representative.string(
                        "CountryOfResidence", path: "LegalRepresentative.CountryOfResidence")
                    fields.phoneNumber = representative.string("PhoneNumber", path: "LegalRepresentative.PhoneNumber")
                    fields.phoneNumberCountry = representative.string(
                        "PhoneNumberCountry", path: "LegalRepresentative.PhoneNumberCountry")
                    errors.merge(representative.errors) { first, _ in first }
                }
            } else {
                fields.legalRepresentativeFirstName = string("LegalRepresentativeFirstName")
                fields.legalRepresentativeLastName = string("LegalRepresentativeLastName")
                fields.legalRepresentativeEmail = string("LegalRepresentativeEmail")
                fields.legalRepresentativeBirthday = integer("LegalRepresentativeBirthday")
                fields.legalRepresentativeNationality = string("LegalRepresentativeNationality")
                fields.legalRepresentativeCountryOfResidence = string("LegalRepresentativeCountryOfResidence")
            }
        }
        return fields
    }
}
