import Testing
@testable import VaultAPI

@Test func moduleIsNamed() {
    #expect(VaultAPIModule.name == "VaultAPI")
}
