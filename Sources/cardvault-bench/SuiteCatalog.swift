/// Every suite, in the order a full run goes through them (cheap CPU suites first, then the ones
/// that start servers).
enum SuiteCatalog {
    static let all: [any BenchSuite] = [
        CryptoSuite(),
        CardKitSuite(),
        StoreSuite(),
        HTTPSuite(),
        PayInSuite(),
        PeerSuite(),
        PostgresPairSuite(),
        ForwardSuite(),
    ]
}
