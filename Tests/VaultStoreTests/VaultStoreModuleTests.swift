import Testing
@testable import VaultStore

@Test func moduleIsNamed() {
    #expect(VaultStoreModule.name == "VaultStore")
}
