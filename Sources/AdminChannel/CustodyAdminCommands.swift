import Foundation
import VaultCore
public import VaultCrypto

/// The admin commands of a serving daemon whose master key is kept as shares: `operator.seal` (drop every key),
/// `operator.status`, `keys.rekey` (a new unseal key and share set for the same master key, given the threshold of
/// current shares: the old shares open nothing any more) and `keys.rotate-master` (a new master key, its data keys
/// rewrapped, a new share set). Shares are answered once to the caller and written nowhere; the custody record keeps
/// their number, the master key's check value and the master key wrapped under the unseal key.
public struct CustodyAdminCommands: Sendable {
    public let records: any CustodyRecords
    public let audit: CustodyAuditLog
    /// Rewraps every data key under the given master key (the store's `rotateMasterKey(to:)`).
    public let rewrap: @Sendable (MemoryKeyEncryptionKey) async throws -> Void
    /// Asks the daemon to seal itself (it stops serving, drops its keys and starts sealed again).
    public let seal: @Sendable () -> Void

    public init(
        records: any CustodyRecords, audit: CustodyAuditLog,
        rewrap: @escaping @Sendable (MemoryKeyEncryptionKey) async throws -> Void, seal: @escaping @Sendable () -> Void
    ) {
        self.records = records
        self.audit = audit
        self.rewrap = rewrap
        self.seal = seal
    }

    public func register(in handlers: AdminHandlers) {
        handlers.register("operator.seal") { _, progress in
            try audit.record("sealed", caller: progress.caller)
            seal()
            return .object(["sealed": .bool(true)])
        }
        for command in ["operator.unseal", "operator.reset"] {
            handlers.register(command) { _, _ in throw AdminError("unsealed", "the daemon is unsealed already") }
        }
        handlers.register("operator.status") { _, _ in
            let custody = try records.read()
            return .object([
                "sealed": .bool(false), "progress": .int(0), "threshold": custody?.threshold.map { .int($0) } ?? .null,
            ])
        }
        handlers.register("keys.rekey") { arguments, progress in
            let (threshold, count) = try Self.parameters(arguments)
            let master = try rebuild(arguments["currentShares"]?.arrayValue ?? [], caller: progress.caller)
            let split = try MasterKeySplit(master: master, threshold: threshold, count: count)
            try records.write(split.custody)
            try audit.record(
                "keys.rekey", caller: progress.caller, ["threshold": .int(threshold), "shares": .int(count)])
            return Self.describe(split)
        }
        handlers.register("keys.rotate-master") { arguments, progress in
            let custody = try records.read()
            var given = arguments
            given["threshold"] = given["threshold"] ?? custody?.threshold.map { .int($0) } ?? .null
            given["shares"] = given["shares"] ?? custody?.shares.map { .int($0) } ?? .null
            let (threshold, count) = try Self.parameters(given)
            let split = try MasterKeySplit.fresh(threshold: threshold, count: count)
            try await rewrap(split.masterKey)
            try records.write(split.custody)
            try audit.record(
                "keys.rotate-master", caller: progress.caller, ["threshold": .int(threshold), "shares": .int(count)])
            return Self.describe(split)
        }
    }

    /// The current master key, opened with the unseal key the threshold of current shares rebuilds.
    private func rebuild(_ lines: [AdminValue], caller: AdminCaller) throws -> SecureBytes {
        var progress = UnsealProgress()
        let now = Date()
        for line in lines {
            guard let text = line.stringValue else { throw AdminError(AdminError.badMessage, "shares are text lines") }
            do {
                if let unsealKey = try progress.add(ShareText.parse(text), now: now) {
                    guard let custody = try records.read() else {
                        throw AdminError("noCustody", "no custody record")
                    }
                    let master = try custody.openMaster(with: unsealKey)
                    guard KeyCheckValue.hex(of: master) == custody.masterCheckValue else {
                        throw ShareError(.wrongKey, "the shares do not rebuild this vault's master key")
                    }
                    return master
                }
            } catch let error as ShareError {
                try audit.record("keys.rekey.refused", caller: caller, ["reason": .string(error.code.description)])
                throw AdminError(error.code.description, error.message)
            }
        }
        throw AdminError(
            "notEnoughShares", "a rekey needs the threshold of current shares (\(progress.count) given)")
    }

    /// `threshold` and `shares` from the arguments: 2 ≤ threshold ≤ shares ≤ 16.
    public static func parameters(_ arguments: [String: AdminValue]) throws -> (threshold: Int, count: Int) {
        guard let threshold = arguments["threshold"]?.intValue, let count = arguments["shares"]?.intValue,
            2 <= threshold, threshold <= count, count <= KeyShares.maximumShares
        else {
            throw AdminError(
                AdminError.badMessage, "--shares N --threshold K need 2 <= K <= N <= \(KeyShares.maximumShares)")
        }
        return (threshold, count)
    }

    /// The answer that carries a new share set: each share's index, line and check value, and the master's.
    public static func describe(_ split: MasterKeySplit) -> AdminValue {
        .object([
            "threshold": .int(split.custody.threshold ?? 0), "shares": .int(split.custody.shares ?? 0),
            "masterCheckValue": .string(split.custody.masterCheckValue ?? ""),
            "keyShares": .array(
                split.shareLines.map { share in
                    .object([
                        "index": .int(share.index), "share": .string(share.line),
                        "checkValue": .string(share.checkValue),
                    ])
                }),
        ])
    }
}
