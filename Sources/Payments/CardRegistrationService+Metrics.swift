import BusinessMetrics

extension CardRegistrationService {
    /// Tokenizes a card for registration `id` of `clientId` (see ``tokenizeUncounted(clientId:id:form:signals:requireSecurityCode:)``)
    /// and counts the result in `cardvault_tokenizations_total`, whichever route reached it (the Mangopay
    /// tokenization POST, the hosted checkout, a web card pay-in). One relaxed atomic add: no lock, no allocation.
    /// - Parameter requireSecurityCode: false only for the hosted checkout of a merchant that turned CVC2 off.
    public func tokenize(
        clientId: String, id: String, form: TokenizationForm, signals: DeviceSignals, requireSecurityCode: Bool = true
    ) async throws -> TokenizationResult {
        let result = try await tokenizeUncounted(
            clientId: clientId, id: id, form: form, signals: signals, requireSecurityCode: requireSecurityCode)
        switch result {
        case .success: environment.metrics.tokenization(.success)
        case .failure(let code): environment.metrics.tokenization(.refused(code.rawValue))
        case .rateLimited: environment.metrics.tokenization(.rateLimited)
        }
        return result
    }
}
