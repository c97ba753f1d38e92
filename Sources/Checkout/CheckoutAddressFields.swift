/// Which billing address fields a checkout id's page asks for, set when the merchant registers it
/// (`addressFields`). Fewer fields bring the Pay button into view; the merchant chooses what its fraud checks and
/// invoices need. The shipping address (unless a session suppresses it) is always asked for in full.
public enum CheckoutAddressFields: String, Sendable, Codable, CaseIterable {
    /// No billing address.
    case none
    /// Postal code and country only (what address verification uses).
    case postalCodeAndCountry
    /// Street, second line, city, postal code, region and country (records written before the setting existed).
    case full

    /// Parses `none`, `postalCodeAndCountry` or `full`; nil for anything else.
    public init?(parsing text: String) { self.init(rawValue: text) }
}
