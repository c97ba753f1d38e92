import Payments

/// The one binding of Mangopay JSON request bodies to typed fields, as the real API binds what its official SDKs
/// send (docs/wire-binding.md has the table):
///
/// - **text**: a string; an integer JSON number too (its decimal text: the Python SDK sends `CompanyNumber` and
///   `IncomeRange` as numbers). A number with a fraction or exponent, or beyond the 64-bit range, is refused: its
///   exact text is not kept, and no documented text field holds such a number.
/// - **integer** (dates in Unix seconds, screen sizes): an integer number within 64 bits; an integral decimal up to
///   2^53 (`188352000.0`, which the Python SDK sends for `time.mktime(...)` birthdays); a string holding a decimal
///   integer within 64 bits.
/// - **amount** (minor units): an integer number only, with no fraction or exponent, between `-maximumAmount` and
///   `maximumAmount`. A float, a string or an out-of-range amount is refused: money is never rounded or guessed.
/// - **boolean**: `true`/`false`, or the numbers `1`/`0` (the Python SDK's `BooleanField` sends those).
/// - **list of text**, **object**, **address** and **money** are built from the kinds above.
///
/// For every kind, `null` means absent, and an unknown or read-only field (a client sending a whole object back)
/// is never looked at. A value of the wrong kind records a message under the field's full path
/// (`DebitedFunds.Amount`, `Billing.Address.Country`), so that one 400 names every wrong field.
struct MangopayFields {
    let object: MangopayJSON
    /// The path of this object in the body, with a trailing dot (`"Billing."`); empty at the top.
    let prefix: String
    private(set) var errors: [String: String] = [:]

    /// Largest magnitude of an integral decimal an integer field takes (2^53: every integer up to it is exact).
    static let exactDoubleLimit = 9_007_199_254_740_992.0

    /// Largest magnitude of an amount, in minor units (one billion in a two-decimal currency).
    static let maximumAmount = Funds.maximumAmount

    /// Parses `body`, which must be a JSON object.
    /// - Throws: ``PaymentsError`` `.invalidParameters` naming the body when it is empty, not JSON or no object.
    init(body: [UInt8]) throws {
        guard !body.isEmpty else {
            throw PaymentsError.invalid("Body", "The request body is empty; a JSON object was expected.")
        }
        let value: MangopayJSON
        do {
            value = try MangopayJSON.parse(body)
        } catch {
            throw PaymentsError.invalid("Body", "The request body is not valid JSON (at byte \(error.offset)).")
        }
        guard case .object = value else {
            throw PaymentsError.invalid("Body", "The request body must be a JSON object.")
        }
        self.init(object: value)
    }

    init(object: MangopayJSON, prefix: String = "") {
        self.object = object
        self.prefix = prefix
    }

    // MARK: Field kinds

    /// A text field.
    mutating func string(_ key: String) -> String? {
        switch value(key) {
        case nil: return nil
        case .string(let text): return text
        case .int(let number): return String(number)
        default:
            wrongType(key, "a string (or an integer, taken as its decimal text) was expected")
            return nil
        }
    }

    /// An integer field that is no amount: a date in Unix seconds, a size, a count.
    mutating func integer(_ key: String) -> Int64? {
        switch value(key) {
        case nil: return nil
        case .int(let number): return number
        case .double(let number) where number.rounded(.towardZero) == number && abs(number) <= Self.exactDoubleLimit:
            // Only up to 2^53, where a double is an exact integer: an integer literal beyond 64 bits also arrives as
            // a double, rounded (-9223372036854775809 becomes -2^63), and must not pass for a value in range.
            return Int64(number)
        case .string(let text):
            if let number = Self.decimalInteger(text) { return number }
        default:
            break
        }
        wrongType(key, "an integer between \(Int64.min) and \(Int64.max) was expected")
        return nil
    }

    /// An amount in minor units: an integer JSON number within ±``maximumAmount``, nothing else.
    mutating func amount(_ key: String) -> Int64? {
        switch value(key) {
        case nil: return nil
        case .int(let number) where number >= -Self.maximumAmount && number <= Self.maximumAmount: return number
        default:
            fail(
                key,
                "The value of \(prefix + key) is not valid: an integer number of minor units between "
                    + "-\(Self.maximumAmount) and \(Self.maximumAmount) was expected.")
            return nil
        }
    }

    /// A boolean: `true`/`false`, or `1`/`0`.
    mutating func boolean(_ key: String) -> Bool? {
        switch value(key) {
        case nil: return nil
        case .bool(let flag): return flag
        case .int(let number) where number == 0 || number == 1: return number == 1
        default:
            wrongType(key, "a boolean (true, false, 1 or 0) was expected")
            return nil
        }
    }

    /// A list of text values, each bound as ``string(_:)`` binds one.
    mutating func strings(_ key: String) -> [String]? {
        guard let value = value(key) else { return nil }
        guard case .array(let items) = value else {
            wrongType(key, "an array of strings was expected")
            return nil
        }
        var result: [String] = []
        for item in items {
            switch item {
            case .string(let text): result.append(text)
            case .int(let number): result.append(String(number))
            default:
                wrongType(key, "an array of strings was expected")
                return nil
            }
        }
        return result
    }

    /// A nested object, read by `read` with paths prefixed by `key`; its problems become this object's.
    mutating func object<T>(_ key: String, _ read: (inout MangopayFields) -> T?) -> T? {
        guard let value = value(key) else { return nil }
        guard case .object = value else {
            wrongType(key, "an object was expected")
            return nil
        }
        var nested = MangopayFields(object: value, prefix: prefix + key + ".")
        let result = read(&nested)
        for (path, problem) in nested.errors where errors[path] == nil { errors[path] = problem }
        return result
    }

    /// A list of objects, each read by `read` with paths `key[index].` (`LineItems[0].Quantity`).
    mutating func objects<T>(_ key: String, _ read: (inout MangopayFields) -> T) -> [T]? {
        guard let value = value(key) else { return nil }
        guard case .array(let items) = value else {
            wrongType(key, "an array of objects was expected")
            return nil
        }
        var result: [T] = []
        for (index, item) in items.enumerated() {
            guard case .object = item else {
                wrongType(key + "[\(index)]", "an object was expected")
                continue
            }
            var nested = MangopayFields(object: item, prefix: prefix + key + "[\(index)].")
            result.append(read(&nested))
            for (path, problem) in nested.errors where errors[path] == nil { errors[path] = problem }
        }
        return result
    }

    /// A postal address object.
    mutating func address(_ key: String) -> Address? {
        object(key) { fields in
            Address(
                addressLine1: fields.string("AddressLine1"), addressLine2: fields.string("AddressLine2"),
                city: fields.string("City"), region: fields.string("Region"), postalCode: fields.string("PostalCode"),
                country: fields.string("Country"))
        }
    }

    /// A money object: a `Currency` and an `Amount`, both required once the object is there.
    mutating func money(_ key: String) -> Funds? {
        object(key) { fields in
            let currency = fields.string("Currency")
            let amount = fields.amount("Amount")
            if currency == nil { fields.require("Currency") }
            if amount == nil { fields.require("Amount") }
            guard let currency, let amount else { return nil }
            return Funds(currency: currency, amount: amount)
        }
    }

    // MARK: Problems

    /// Records `problem` for `key` (under this object's path) unless one is recorded already.
    mutating func fail(_ key: String, _ problem: String) {
        let path = prefix + key
        if errors[path] == nil { errors[path] = problem }
    }

    /// Throws the collected problems, if any.
    func check() throws {
        if !errors.isEmpty { throw PaymentsError.invalid(errors) }
    }

    private mutating func require(_ key: String) {
        fail(key, "The \(prefix + key) field is required.")
    }

    private mutating func wrongType(_ key: String, _ expected: String) {
        fail(key, "The value of \(prefix + key) is not valid: \(expected).")
    }

    /// Whether `key` arrived as a JSON string.
    func isString(_ key: String) -> Bool {
        if case .string = value(key) { true } else { false }
    }

    /// Whether `key` arrived as a JSON number.
    func isNumber(_ key: String) -> Bool {
        switch value(key) {
        case .int, .double: true
        default: false
        }
    }

    /// The value of `key`, nil when absent or null.
    private func value(_ key: String) -> MangopayJSON? {
        guard let value = object[key], value != .null else { return nil }
        return value
    }

    /// `text` as a decimal integer: an optional sign and 1 to 19 ASCII digits, within 64 bits.
    static func decimalInteger(_ text: String) -> Int64? {
        let bytes = Array(text.utf8)
        let signed = bytes.first == UInt8(ascii: "-") || bytes.first == UInt8(ascii: "+")
        let digits = signed ? bytes.dropFirst() : bytes[...]
        guard !digits.isEmpty, digits.count <= 19, digits.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        return Int64(text)
    }
}

// MARK: Request shapes

extension MangopayFields {
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
                _ = object("LegalRepresentative") { representative -> Void? in
                    fields.legalRepresentativeFirstName = representative.string("FirstName")
                    fields.legalRepresentativeLastName = representative.string("LastName")
                    fields.legalRepresentativeEmail = representative.string("Email")
                    fields.legalRepresentativeBirthday = representative.integer("Birthday")
                    fields.legalRepresentativeNationality = representative.string("Nationality")
                    fields.legalRepresentativeCountryOfResidence = representative.string("CountryOfResidence")
                    fields.phoneNumber = representative.string("PhoneNumber")
                    fields.phoneNumberCountry = representative.string("PhoneNumberCountry")
                    return nil
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

    /// A direct card pay-in body.
    mutating func payInRequest() -> PayInRequest {
        var request = cardValidationRequest()
        request.creditedUserId = string("CreditedUserId")
        request.creditedWalletId = string("CreditedWalletId")
        request.debitedFunds = money("DebitedFunds")
        request.fees = money("Fees")
        request.cardId = string("CardId")
        return request
    }

    /// A card validation body: a pay-in's fields without funds, wallet or card (the card is in the path), which
    /// are not looked at.
    mutating func cardValidationRequest() -> PayInRequest {
        var request = PayInRequest()
        request.authorId = string("AuthorId")
        request.secureModeReturnURL = string("SecureModeReturnURL")
        request.secureMode = string("SecureMode")
        request.ipAddress = string("IpAddress")
        request.browserInfo = object("BrowserInfo") { info in
            var browser = BrowserInfo(
                acceptHeader: info.string("AcceptHeader"), javaEnabled: info.boolean("JavaEnabled"),
                javascriptEnabled: info.boolean("JavascriptEnabled"), language: info.string("Language"),
                colorDepth: info.integer("ColorDepth").map { Int(clamping: $0) },
                screenHeight: info.integer("ScreenHeight").map { Int(clamping: $0) },
                screenWidth: info.integer("ScreenWidth").map { Int(clamping: $0) },
                // Minutes as text: the docs and the Checkout SDKs send 60, the Python SDK's tests "+60".
                timeZoneOffset: info.string("TimeZoneOffset"), userAgent: info.string("UserAgent"))
            // Loose fields: the answer echoes the JSON type each client sent (docs/wire-binding.md).
            var alternate: BrowserInfo.AlternateTypes = []
            if info.isNumber("JavaEnabled") { alternate.insert(.javaEnabledAsNumber) }
            if info.isNumber("JavascriptEnabled") { alternate.insert(.javascriptEnabledAsNumber) }
            if info.isString("ColorDepth") { alternate.insert(.colorDepthAsText) }
            if info.isString("ScreenHeight") { alternate.insert(.screenHeightAsText) }
            if info.isString("ScreenWidth") { alternate.insert(.screenWidthAsText) }
            if info.isNumber("TimeZoneOffset") { alternate.insert(.timeZoneOffsetAsNumber) }
            browser.alternateTypes = alternate.isEmpty ? nil : alternate
            return browser
        }
        request.statementDescriptor = string("StatementDescriptor")
        request.tag = string("Tag")
        request.billing = party("Billing")
        request.shipping = party("Shipping")
        request.culture = string("Culture")
        request.profilingAttemptReference = string("ProfilingAttemptReference")
        request.preferredCardNetwork = string("PreferredCardNetwork")
        request.paymentCategory = string("PaymentCategory")
        return request
    }

    /// A refund body; absent funds mean "everything left".
    mutating func refundRequest() -> RefundRequest {
        RefundRequest(
            authorId: string("AuthorId"), debitedFunds: money("DebitedFunds"), fees: money("Fees"), tag: string("Tag"))
    }

    /// A name and an address (`Billing`, `Shipping`).
    mutating func party(_ key: String) -> PartyAddress? {
        object(key) { party in
            PartyAddress(
                firstName: party.string("FirstName"), lastName: party.string("LastName"),
                address: party.address("Address"))
        }
    }
}
