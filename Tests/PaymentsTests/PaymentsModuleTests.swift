import Testing
@testable import Payments

@Test func moduleIsNamed() {
    #expect(PaymentsModule.name == "Payments")
}
