/// An address in the Masterpass v7 shape (billing, shipping): `line1`…`line5`, `city`, `subdivision` (`US-MO`),
/// `postalCode`, `country` (ISO 3166 alpha-2). Reference §1.9.
public struct MasterpassAddress: Sendable, Hashable, Codable {
    public var line1: String
    public var line2: String?
    public var line3: String?
    public var line4: String?
    public var line5: String?
    public var city: String
    public var subdivision: String?
    public var postalCode: String
    public var country: String

    public init(
        line1: String, line2: String? = nil, line3: String? = nil, line4: String? = nil, line5: String? = nil,
        city: String, subdivision: String? = nil, postalCode: String, country: String
    ) {
        self.line1 = line1
        self.line2 = line2
        self.line3 = line3
        self.line4 = line4
        self.line5 = line5
        self.city = city
        self.subdivision = subdivision
        self.postalCode = postalCode
        self.country = country
    }
}

/// The shopper's contact details (`personalInfo`).
public struct MasterpassPersonalInfo: Sendable, Hashable, Codable {
    public var recipientName: String
    public var recipientPhone: String?
    public var recipientEmailAddress: String?

    public init(recipientName: String, recipientPhone: String? = nil, recipientEmailAddress: String? = nil) {
        self.recipientName = recipientName
        self.recipientPhone = recipientPhone
        self.recipientEmailAddress = recipientEmailAddress
    }
}

/// The `card` of payment data: brand, holder, expiry, billing address and the account number (a CardVault token
/// in network-token style, or the number itself for PCI-compliant clients).
public struct MasterpassCard: Sendable, Hashable, Codable {
    /// `master`, `visa`, ...
    public var brandId: String
    /// `MasterCard`, `Visa`, ...
    public var brandName: String
    public var accountNumber: String
    public var cardHolderName: String
    public var expiryMonth: Int
    public var expiryYear: Int
    public var billingAddress: MasterpassAddress?
}

/// The 3-D Secure result (`authenticationOptions`), names as in Mastercard's SDKs (reference §1.9).
public struct MasterpassAuthenticationOptions: Sendable, Hashable, Codable {
    /// `3DS` or `NO AUTHENTICATION`.
    public var authenticateMethod: String
    /// `Manual` for cards typed on the page.
    public var cardEnrollmentMethod: String
    /// The authentication value (CAVV/AAV), base64, when authenticated.
    public var cAvv: String?
    public var eciFlag: String
    /// The final `transStatus` (`Y`, `A`), when 3-D Secure ran.
    public var paResStatus: String?
    /// `Y` when 3-D Secure could run for the card, `N` when it was not asked for.
    public var scEnrollmentStatus: String
    public var signatureVerification: String?
    /// The authentication's transaction identifier.
    public var xid: String?
}

/// `tokenization.cryptogram`.
public struct MasterpassCryptogramData: Sendable, Hashable, Codable {
    public var cryptoValue: String
    /// `ICC`, `UCAF`, `TAVV` or `TVV`.
    public var cryptoType: String
    public var eci: String
    public var unpredictableNumber: String
    /// Unix seconds after which the cryptogram (and the payment data) is no longer valid. CardVault extension.
    public var expiresAt: Int64
}

/// `tokenization`: the cryptogram plus the token's bookkeeping fields.
public struct MasterpassTokenization: Sendable, Hashable, Codable {
    public var cryptogram: MasterpassCryptogramData
    /// A stable reference for the card across tokens (29 characters).
    public var paymentAccountReference: String
    /// The last four digits of the funding card.
    public var fPanSuffix: String
    public var tokenRequestorId: String
}

/// What `GET /masterpass/paymentdata/{transactionId}` and `POST /masterpass/expresscheckout` answer.
public struct MasterpassPaymentData: Sendable, Hashable, Codable {
    public var card: MasterpassCard
    public var shippingAddress: MasterpassAddress?
    public var personalInfo: MasterpassPersonalInfo?
    public var walletId: String
    public var walletName: String
    public var authenticationOptions: MasterpassAuthenticationOptions
    public var tokenization: MasterpassTokenization
    /// The new pairing id (express checkout, or a checkout that paired).
    public var pairingId: String?
    /// The transaction this payment data belongs to. CardVault extension (Masterpass puts it in the callback).
    public var transactionId: String
}

/// The payment method the newer SDK exposes (`MCSCommerceWeb.addPaymentMethod`): always "Click to Pay".
public struct MasterpassPaymentMethod: Sendable, Hashable, Codable {
    public var paymentMethodName: String
    public var paymentMethodLogo: String

    /// The Click to Pay method, its logo served by CardVault at `baseURL` + `/srci/assets/click-to-pay.svg`.
    public static func clickToPay(baseURL: String) -> MasterpassPaymentMethod {
        MasterpassPaymentMethod(
            paymentMethodName: "Click to Pay", paymentMethodLogo: baseURL + "/srci/assets/click-to-pay.svg")
    }
}
