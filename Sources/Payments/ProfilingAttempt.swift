/// The device and network signals seen when a card was tokenized, kept for fraud scoring of the pay-ins that
/// name its reference (`ProfilingAttemptReference`).
public struct ProfilingAttempt: Sendable, Equatable, Codable {
    /// The reference handed to the browser in the `Profiling-Attempt-Reference` header.
    public var reference: String
    public var clientId: String
    public var cardRegistrationId: String
    /// The card the tokenization will become once the registration is completed.
    public var cardId: String
    public var ipAddress: String?
    public var userAgent: String?
    public var acceptLanguage: String?
    /// Optional device fields posted with the form (screen size, time zone, …), by name.
    public var device: [String: String]
    public var creationDate: Int64

    /// Device fields the tokenization form may carry, each at most 128 characters (a set: one hash look-up per
    /// posted field).
    public static let deviceFieldNames: Set<String> = [
        "deviceId", "screenWidth", "screenHeight", "colorDepth", "timeZoneOffset", "language", "platform",
        "javaEnabled", "javascriptEnabled", "touchSupport", "deviceMemory", "hardwareConcurrency",
    ]
}

/// What the browser told CardVault about itself when it posted card data.
public struct DeviceSignals: Sendable, Equatable {
    public var ipAddress: String?
    public var userAgent: String?
    public var acceptLanguage: String?
    public var device: [String: String]

    public init(
        ipAddress: String? = nil, userAgent: String? = nil, acceptLanguage: String? = nil,
        device: [String: String] = [:]
    ) {
        self.ipAddress = ipAddress
        self.userAgent = userAgent
        self.acceptLanguage = acceptLanguage
        self.device = device
    }

    /// Cuts every value to a sane length and keeps only the known device fields.
    var bounded: DeviceSignals {
        func cut(_ text: String?, _ limit: Int) -> String? { text.map { String($0.prefix(limit)) } }
        var device: [String: String] = [:]
        for (name, value) in self.device where ProfilingAttempt.deviceFieldNames.contains(name) {
            device[name] = String(value.prefix(128))
        }
        return DeviceSignals(
            ipAddress: cut(ipAddress, 64), userAgent: cut(userAgent, 512), acceptLanguage: cut(acceptLanguage, 256),
            device: device)
    }
}
