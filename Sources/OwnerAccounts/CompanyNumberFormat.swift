import Foundation
import Payments

/// The format rules of company numbers by country (docs.mangopay.com, "Company number"), for
/// `POST /users/data-formats/validation`: a format check only, never whether the number exists.
public enum CompanyNumberFormat {
    /// A checked company number: what was sent, whether it has a format of its country, and the rules.
    public struct Result: Sendable, Equatable {
        public var companyNumber: String
        public var countryCode: String
        public var isValid: Bool
        public var validationRules: [String]
    }

    /// The accepted formats by ISO 3166-1 country code, as anchored regular expressions over letters and digits.
    static let rules: [String: [String]] = [
        "AT": ["^[A-Z]{2}[0-9]{6}[A-Z]$", "^[0-9]{1,6}[A-Z]$"],
        "BE": ["^[0-9]{10}$"],
        "BG": ["^[0-9]{9}$", "^[0-9]{13}$"],
        "ES": ["^[A-Z][0-9]{7}[A-Z0-9]$"],
        "FR": ["^[0-9]{9}$", "^[0-9]{14}$"],
        "GB": [
            "^[0-9]{8}$", "^[0-9]{7}$", "^SC[0-9]{6}$", "^NI[0-9]{6}$", "^OC[0-9]{6}$", "^R[0-9]{7}$",
            "^IP[0-9]{5}R$", "^SO[0-9]{6}$",
        ],
        "IT": ["^[0-9]{11}$"],
        "LU": ["^[A-Z][0-9]{1,6}$"],
        "NL": ["^[0-9]{8}$"],
    ]

    /// Checks `companyNumber` against the formats of `countryCode`; characters other than letters and digits
    /// (spaces, dashes) are removed first, as Mangopay does.
    /// - Throws: ``PaymentsError`` `.invalidParameters` when a field is missing or the country has no known format.
    public static func validate(companyNumber: String?, countryCode: String?) throws -> Result {
        var errors: [String: String] = [:]
        if companyNumber?.isEmpty ?? true { errors["CompanyNumber.CompanyNumber"] = "The CompanyNumber is required." }
        if countryCode?.isEmpty ?? true {
            errors["CompanyNumber.CountryCode"] = "The CountryCode is required."
        } else if let countryCode, rules[countryCode.uppercased()] == nil {
            errors["CompanyNumber.CountryCode"] = "CardVault knows no company number format for this country."
        }
        guard errors.isEmpty, let companyNumber, let countryCode else {
            throw PaymentsError(
                .invalidParameters, "One or several required parameters are missing or incorrect.",
                fieldErrors: errors)
        }
        let country = countryCode.uppercased()
        let patterns = rules[country] ?? []
        var cleaned = String.UnicodeScalarView()
        cleaned.append(contentsOf: companyNumber.uppercased().unicodeScalars.filter(isAlphanumeric))
        let text = String(cleaned)
        let valid = patterns.contains { text.range(of: $0, options: .regularExpression) != nil }
        return Result(companyNumber: companyNumber, countryCode: country, isValid: valid, validationRules: patterns)
    }

    private static func isAlphanumeric(_ scalar: Unicode.Scalar) -> Bool {
        ("A"..."Z").contains(scalar) || ("0"..."9").contains(scalar)
    }
}
