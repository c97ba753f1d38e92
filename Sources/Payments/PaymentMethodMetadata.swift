public import CardKit

/// What `POST /payment-methods/metadata` answers about a BIN: the issuer's country from the configured country
/// table, the brand from CardKit's table, and type and sub-type as the sandbox knows them. Issuing bank names are
/// sandbox data (`CARDVAULT SANDBOX BANK`), not a real BIN database.
public struct PaymentMethodMetadata: Sendable, Equatable {
    public var type: String
    public var bin: String
    public var issuerCountryCode: String?
    public var issuingBank: String?
    /// CardKit's brand, nil for a BIN no range matches.
    public var brand: CardBrand?
    /// `DEBIT` (the sandbox's answer for every known brand), nil when the brand is unknown.
    public var cardType: String?
    /// `CONSUMER` for every known brand in the sandbox.
    public var subType: String?
    /// The scheme name the wire shows (`VISA`, `MASTERCARD`, …).
    public var network: String?

    /// Whether the issuing bank name is sandbox data (always true: there is no BIN database).
    public var issuingBankIsSandboxData: Bool { true }
}

/// Looks BINs up (Type `BIN`; `GOOGLE_PAY` and `APPLE_PAY` tokens give the sandbox answer of their network's test BIN).
public struct PaymentMethodMetadataService: Sendable {
    let environment: PaymentsEnvironment
    let catalog: BrandCatalog

    public init(environment: PaymentsEnvironment, catalog: BrandCatalog = .standard) {
        self.environment = environment
        self.catalog = catalog
    }

    /// The metadata of `bin` (6 to 8 digits) for `type` `BIN`.
    /// - Throws: ``PaymentsError`` `.invalidParameters` for another type, a missing or malformed BIN.
    public func lookUp(type: String?, bin: String?, token: String?) throws -> PaymentMethodMetadata {
        var rules = FieldRules()
        rules.required(type, "Type")
        rules.oneOf(type, ["BIN", "GOOGLE_PAY", "APPLE_PAY"], "Type")
        if let token, token.utf8.count > 65_536 { rules.fail("Token", "The Token is at most 65536 characters.") }
        try rules.check()
        let digits: String
        if type == "BIN" {
            guard let bin, (6...8).contains(bin.utf8.count), bin.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else {
                throw PaymentsError.invalid("Bin", "The Bin must be 6 to 8 digits.")
            }
            digits = bin
        } else {
            // A wallet token is not opened in the sandbox (see WalletTokenVerifier): its metadata is the Visa test BIN's.
            guard let token, !token.isEmpty, token.utf8.count <= 65_536 else {
                throw PaymentsError.invalid("Token", "The Token field is required (at most 65536 characters).")
            }
            digits = "497010"
        }
        let brand = catalog.brand(forDigits: digits)
        let known = brand != nil
        return PaymentMethodMetadata(
            type: type!, bin: digits, issuerCountryCode: environment.configuration.countryTable.country(forBIN: digits),
            issuingBank: known ? "CARDVAULT SANDBOX BANK" : nil, brand: brand, cardType: known ? "DEBIT" : nil,
            subType: known ? "CONSUMER" : nil, network: brand.map(Self.network))
    }

    /// The scheme name of a brand as the Mangopay wire spells it.
    static func network(_ brand: CardBrand) -> String {
        switch brand {
        case .visa: "VISA"
        case .mastercard: "MASTERCARD"
        case .amex: "AMEX"
        case .maestro: "MAESTRO"
        case .diners: "DINERS"
        case .discover: "DISCOVER"
        case .jcb: "JCB"
        default: brand.rawValue.uppercased()
        }
    }
}
