import Testing
@testable import CardKit

@Test func moduleIsNamed() {
    #expect(CardKitModule.name == "CardKit")
}
