import Foundation
import Payments
import VaultStore

/// After the last tokenization run the daemon is killed with SIGKILL (no shutdown, no final flush);
/// this opens its data directory with the encrypted file store (recovery as on a restart) and checks
/// that every tokenization the daemon acknowledged (200 `data=…`) is there: the registration holds
/// its pending card and the card number is in the vault.
enum TokenizationDurabilityCheck {
    /// Store collections of the merchant API (Payments' `Collections`, internal there).
    static let registrations = "card-registrations"
    static let vault = Collections.vault

    struct Outcome {
        var acknowledged: Int
        var missing: Int
        var recovery: RecoveryReport
        var seconds: Double

        var summary: String {
            "Durability: after the last tokenization run the daemon was killed with SIGKILL; reopening its store "
                + "(\(recovery.records) records, checkpoint \(recovery.usedCheckpoint ? "used" : "absent"), "
                + "\(recovery.framesReplayed) frames replayed, torn tail \(recovery.tornTailBytes) bytes, in "
                + "\(Formatting.fixed(seconds, decimals: 2)) s) found \(acknowledged - missing) of the run's "
                + "\(acknowledged) acknowledged tokenizations with their registration and vaulted card number"
                + (missing == 0 ? ": every acknowledged card is durable." : "; \(missing) MISSING.")
        }
    }

    static func verify(_ run: TokenizationRuns.Run, server: CardVaultServer) throws -> Outcome {
        var acknowledged: [String] = []
        for thread in run.report.threads ?? [] {
            let text = try String(
                contentsOfFile: run.registrationsDirectory + "/slice-\(thread.slice)", encoding: .utf8)
            let slice = text.split(separator: "\n").compactMap { $0.split(separator: "\t").first.map(String.init) }
            let gaps = Set(thread.gaps.split(separator: ",").compactMap { Int($0) })
            for position in stride(from: 1, through: thread.last, by: 1) where !gaps.contains(position) {
                acknowledged.append(slice[position - 1])
            }
        }
        guard acknowledged.count == run.report.completed ?? -1 else {
            throw BenchFailure(
                "the script acknowledged \(run.report.completed ?? 0) tokenizations but its thread reports add up to "
                    + "\(acknowledged.count)")
        }
        let started = Date()
        let store = try EncryptedFileStore.open(directory: server.dataDirectory, keysDirectory: server.keysDirectory)
        defer { store.close() }
        let seconds = Date().timeIntervalSince(started)
        var missing = 0
        for id in acknowledged {
            // The registration in whichever format the daemon stored it (binary, or JSON from older builds).
            guard let record = try store.read(registrations, id: run.clientId + ":" + id),
                let registration = try? RecordCoding.decode(CardRegistration.self, from: record),
                let pending = registration.pending,
                try store.read(vault, id: run.clientId + ":" + pending.cardId) != nil
            else {
                missing += 1
                continue
            }
        }
        return Outcome(acknowledged: acknowledged.count, missing: missing, recovery: store.recovery, seconds: seconds)
    }
}
