import Foundation

extension HTTPSuite {
    /// The tokenization POST on a daemon that started sealed and was unsealed from shares (docs/key-custody.md),
    /// against the same on the key-file daemon, same wrk set-up, alternating rounds: once unsealed, the custody of
    /// the master key should cost the API nothing (a ratio within noise of 1).
    func custodyLine(
        server: CardVaultServer?, setup: MerchantSetup?, serverNote: String, context: SuiteContext
    ) -> Comparison {
        let name = "tokenization POST, 16 conns: unsealed from shares vs key file"
        guard let server, let setup else { return Comparison(name: name, unit: "req/s", subjectNote: serverNote) }
        let sealed: CardVaultServer
        let sealedSetup: MerchantSetup
        do {
            context.progress.step("\(context.suiteName) › starting a sealed cardvault serve and unsealing it")
            sealed = try CardVaultServer(context: context, sealed: true)
            sealedSetup = try MerchantSetup(server: sealed, context: context, shoppers: 1)
        } catch {
            return Comparison(name: name, unit: "req/s", subjectNote: "failed to start sealed: \(error)")
        }
        defer { sealed.stop() }
        let sealedRuns = TokenizationRuns()
        let fileRuns = TokenizationRuns()
        return context.compare(
            name, unit: "req/s",
            subject: .measured(
                Workload(label: "cardvault serve, unsealed from 2 of 2 shares") { seconds in
                    try sealedRuns.run(
                        seconds: seconds, server: sealed, setup: sealedSetup, connections: 16, context: context)
                }),
            anchor: .measured(
                Workload(label: "cardvault serve, key file") { seconds in
                    try fileRuns.run(seconds: seconds, server: server, setup: setup, connections: 16, context: context)
                }),
            plan: context.loadPlan,
            note: "only acknowledged tokenizations count; wrk -t16 -c16 on both sides (one thread per connection); "
                + "both daemons on the encrypted file store, the subject started sealed and got its shares through "
                + "the admin socket")
    }
}
