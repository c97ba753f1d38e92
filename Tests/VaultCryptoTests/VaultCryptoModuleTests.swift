import Testing
@testable import VaultCrypto

@Test func moduleIsNamed() {
    #expect(VaultCryptoModule.name == "VaultCrypto")
}
