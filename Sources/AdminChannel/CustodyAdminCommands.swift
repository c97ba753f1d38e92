import Foundation
public import VaultCore
public import VaultCrypto

/// The admin commands of a serving daemon whose master key is kept as shares: `operator.seal` (drop every key),
/// `operator.status`, `keys.rekey` (a new unseal key and share set for the same master key) and `keys.rotate-master`
/// (a new master key, its data keys rewrapped, a new share set), both given the threshold of current shares. Each
/// runs in two steps: the new shares are answered once and written nowhere, and nothing changes until the caller,
/// having shown them, sends `keys.commit` (within 10 minutes); then the old shares open nothing any more.
public struct CustodyAdminCommands: Sendable {
    public let records: any CustodyRecords
    private let pending: PendingCeremonies
    private let clock: any WallClock
    public let audit: CustodyAuditLog
    /// Rewraps every data key under the given master key (the store's `rotateMasterKey(to:)`).
    public let rewrap: @Sendable (MemoryKeyEncryptionKey) async throws -> Void
    /// Asks the daemon to seal itself (it stops serving, drops its keys and starts sealed again).
    public let seal: @Sendable () -> Void

    public init(
        records: any CustodyRecords, audit: CustodyAuditLog,
        rewrap: @escaping @Sendable (MemoryKeyEncryptionKey) async throws -> Void, seal: @escaping @Sendable () -> Void,
        clock: any WallClock = SystemClock()
    ) {
        self.records = records
        self.clock = clock
        self.pending = PendingCeremonies(clock: clock)
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
            return prepare(.rekey(split))
        }
        handlers.register("keys.rotate-master") { arguments, progress in
            let custody = try records.read()
            var given = arguments
            given["threshold"] = given["threshold"] ?? custody?.threshold.map { .int($0) } ?? .null
            given["shares"] = given["shares"] ?? custody?.shares.map { .int($0) } ?? .null
            let (threshold, count) = try Self.parameters(given)
            let current = try rebuild(arguments["currentShares"]?.arrayValue ?? [], caller: progress.caller)
            let split = try MasterKeySplit.fresh(threshold: threshold, count: count)
            return prepare(.rotation(split, whileRewrapping: try split.keeping(previous: current)))
        }
        handlers.register("keys.commit") { arguments, progress in
            guard let id = arguments["commit"]?.stringValue, let ceremony = pending.take(id) else {
                throw AdminError(
                    "noCeremony", "nothing to commit under that id (prepared ceremonies expire after 10 minutes)")
            }
            switch ceremony {
            case .rekey(let split):
                try records.write(split.custody)
                try audit.record("keys.rekey", caller: progress.caller, Self.shape(split))
            case .rotation(let split, let whileRewrapping):
                // The record that opens both keys first, then the keyring, then the record of the new key alone:
                // a crash between two steps leaves a vault the new shares open.
                try records.write(whileRewrapping.custody)
                try await rewrap(split.masterKey)
                try records.write(split.custody)
                try audit.record("keys.rotate-master", caller: progress.caller, Self.shape(split))
            }
            return .object(["committed": .bool(true)])
        }
    }

    /// Keeps a ceremony's new share set until the caller has shown the shares and commits it.
    private func prepare(_ ceremony: PendingCeremonies.Ceremony) -> AdminValue {
        let id = pending.add(ceremony)
        guard case .object(var fields) = Self.describe(ceremony.split) else { return .null }
        fields["commit"] = .string(id)
        return .object(fields)
    }

    private static func shape(_ split: MasterKeySplit) -> [String: AdminValue] {
        ["threshold": .int(split.custody.threshold ?? 0), "shares": .int(split.custody.shares ?? 0)]
    }

    /// The current master key, opened with the unseal key the threshold of current shares rebuilds.
    private func rebuild(_ lines: [AdminValue], caller: AdminCaller) throws -> SecureBytes {
        var progress = UnsealProgress()
        let now = clock.now
        for line in lines {
            guard let text = line.stringValue else { throw AdminError(AdminError.badMessage, "shares are text lines") }
            do {
                if let unsealKey = try progress.add(ShareText.parse(text), now: now) {
                    guard let custody = try records.read() else {
                        throw AdminError("noCustody", "no custody record")
                    }
                    let master = try custody.openMaster(with: unsealKey)
                    guard KeyCheckValue.hex(of: master) == custody.masterCheckValue else {
                        throw KeyRingError(.wrongKey, "the shares do not rebuild this vault's master key")
                    }
                    return master
                }
            } catch let error as KeyRingError {
                try audit.record("keys.rekey.refused", caller: caller, ["reason": .string(error.code.description)])
                throw AdminError(error.code.description, error.message)
            }
        }
        throw AdminError(
            "notEnoughShares", "this ceremony needs the threshold of current shares (\(progress.count) given)")
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

/// Ceremonies whose shares were answered and that wait for `keys.commit`, by a random id, for 10 minutes.
final class PendingCeremonies: Sendable {
    enum Ceremony: Sendable {
        case rekey(MasterKeySplit)
        /// The new split, and the same with the old master key kept (written while the keyring is rewrapped).
        case rotation(MasterKeySplit, whileRewrapping: MasterKeySplit)

        var split: MasterKeySplit {
            switch self {
            case .rekey(let split), .rotation(let split, _): split
            }
        }
    }

    static let lifetime: TimeInterval = 600
    private let waiting = Locked<[String: (ceremony: Ceremony, made: Date)]>([:])
    private let clock: any WallClock

    init(clock: any WallClock) { self.clock = clock }

    func add(_ ceremony: Ceremony) -> String {
        let id = Identifier.hex(RandomPool.shared.bytes(count: 16))
        let now = clock.now
        waiting.withLock { waiting in
            waiting = waiting.filter { now.timeIntervalSince($0.value.made) < Self.lifetime }
            waiting[id] = (ceremony, now)
        }
        return id
    }

    func take(_ id: String) -> Ceremony? {
        waiting.withLock { waiting in
            guard let entry = waiting.removeValue(forKey: id), clock.now.timeIntervalSince(entry.made) < Self.lifetime
            else { return nil }
            return entry.ceremony
        }
    }
}
