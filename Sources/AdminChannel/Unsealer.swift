public import VaultCore
public import VaultCrypto

/// A sealed daemon's way back to its keys: operator shares come in through `operator.unseal`, one at a time;
/// with the threshold reached the unseal key is rebuilt in locked memory and opens the master key of the custody
/// record, which is checked against its check value and handed to `open` (which opens the keyring). What `open`
/// returns is what ``opened()`` waits for. Every share, accepted or refused, and the unseal are audit records.
public final class Unsealer<Opened: Sendable>: Sendable {
    /// Where the daemon stands, for `/health` and `operator status`.
    public struct Status: Sendable, Equatable {
        public var sealed: Bool
        /// Shares accepted toward the next unseal.
        public var progress: Int
        /// Shares needed (from the custody file or the first share), nil when unknown.
        public var threshold: Int?
    }

    private struct State {
        var progress = UnsealProgress()
        var opened: Opened?
        var waiters: [CheckedContinuation<Opened?, Never>] = []
        var cancelled = false
    }

    private let state = Locked(State())
    private let records: any CustodyRecords
    /// The record as it was at start (for the threshold shown while sealed).
    private let custody: KeyCustody?
    private let clock: any WallClock
    private let audit: CustodyAuditLog
    private let logger: Logger
    private let open: @Sendable (MemoryKeyEncryptionKey) throws -> Opened

    public init(
        records: any CustodyRecords, clock: any WallClock = SystemClock(), audit: CustodyAuditLog, logger: Logger,
        open: @escaping @Sendable (MemoryKeyEncryptionKey) throws -> Opened
    ) throws {
        self.records = records
        self.custody = try records.read()
        self.clock = clock
        self.audit = audit
        self.logger = logger
        self.open = open
    }

    public var status: Status {
        state.withLock { state in
            state.progress.expire(now: clock.now)
            return Status(
                sealed: state.opened == nil, progress: state.progress.count,
                threshold: state.progress.threshold ?? custody?.threshold)
        }
    }

    /// Registers `operator.unseal`, `operator.reset` and `operator.status` in `handlers`.
    public func register(in handlers: AdminHandlers) {
        handlers.register("operator.unseal") { [self] arguments, progress in
            guard let line = arguments["share"]?.stringValue else {
                throw AdminError(AdminError.badMessage, "operator.unseal needs a \"share\"")
            }
            return try await add(line, caller: progress.caller)
        }
        handlers.register("operator.reset") { [self] _, progress in
            state.withLock { $0.progress.reset() }
            try audit.record("unseal.reset", caller: progress.caller)
            return describe(status)
        }
        handlers.register("operator.status") { [self] _, _ in describe(status) }
        handlers.register("operator.seal") { [self] _, _ in describe(status) }  // sealed already
    }

    /// Takes one share line; unseals when it completes the threshold.
    func add(_ line: String, caller: AdminCaller) async throws -> AdminValue {
        if state.withLock({ $0.opened != nil }) {
            throw AdminError("unsealed", "the daemon is unsealed already")
        }
        let share: KeyShare
        do {
            share = try ShareText.parse(line)
        } catch {
            var fields: [String: AdminValue] = ["reason": .string(error.code.description)]
            if let index = ShareText.index(of: line) { fields["index"] = .int(Int(index)) }
            try audit.record("share.refused", caller: caller, fields)
            throw AdminError(error.code.description, error.message)
        }
        if let threshold = (try records.read() ?? custody)?.threshold, threshold != share.threshold {
            try audit.record(
                "share.refused", caller: caller,
                ["index": .int(Int(share.index)), "reason": .string(KeyRingError.Code.thresholdMismatch.description)])
            throw AdminError(
                KeyRingError.Code.thresholdMismatch.description,
                "share \(share.index) belongs to a split needing \(share.threshold) shares; this vault needs \(threshold)"
            )
        }
        let rebuilt: SecureBytes?
        do {
            rebuilt = try state.withLock { state throws(KeyRingError) in try state.progress.add(share, now: clock.now) }
        } catch {
            try audit.record(
                "share.refused", caller: caller,
                ["index": .int(Int(share.index)), "reason": .string(error.code.description)])
            throw AdminError(error.code.description, error.message)
        }
        try audit.record("share.accepted", caller: caller, ["index": .int(Int(share.index))])
        guard let rebuilt else { return describe(status) }
        return try finish(rebuilt, caller: caller)
    }

    /// Opens the master key with the rebuilt unseal key, checks it, and opens the keyring with it.
    private func finish(_ unsealKey: SecureBytes, caller: AdminCaller) throws -> AdminValue {
        guard let custody = try records.read() else {
            throw AdminError("noCustody", "no custody record: run `cardvault keys init --shares N --threshold K`")
        }
        let masters: [SecureBytes]
        do {
            masters = try custody.openMasters(with: unsealKey)
        } catch let error as KeyRingError where error.code == .wrongKey {
            try audit.record("unseal.refused", caller: caller, ["reason": .string("wrongKey")])
            throw AdminError(error.code.description, error.message + "; progress was reset")
        }
        // The current master key, else (a master rotation cut short) the one the keyring is still under.
        var opened: Opened?
        for (position, master) in masters.enumerated() where opened == nil {
            if position == 0, let expected = custody.masterCheckValue, KeyCheckValue.hex(of: master) != expected {
                continue
            }
            do {
                opened = try open(MemoryKeyEncryptionKey(SymmetricKey(master)))
                if position > 0 {
                    logger.warning(
                        "a master key rotation was cut short: the keyring is still under the previous master key; "
                            + "run `cardvault keys rotate-master` again")
                }
            } catch let error as KeyRingError where error.code == .wrongMasterKey {
                continue
            }
        }
        guard let opened else {
            try audit.record("unseal.refused", caller: caller, ["reason": .string("wrongKey")])
            throw AdminError(
                KeyRingError.Code.wrongKey.description,
                "the shares rebuild a key that does not open this vault's keyring; progress was reset")
        }
        try audit.record("unsealed", caller: caller)
        logger.notice("unsealed: the master key was rebuilt from shares in locked memory")
        let waiters = state.withLock { state in
            state.opened = opened
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume(returning: opened) }
        return describe(status)
    }

    /// Waits until the daemon is unsealed; nil when ``cancel()`` was called first.
    public func opened() async -> Opened? {
        await withCheckedContinuation { continuation in
            let ready = state.withLock { state -> Opened?? in
                if let opened = state.opened { return .some(opened) }
                if state.cancelled { return .some(nil) }
                state.waiters.append(continuation)
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }

    /// Wakes ``opened()`` with nil (the daemon stops while sealed).
    public func cancel() {
        let waiters = state.withLock { state in
            state.cancelled = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume(returning: nil) }
    }

    private func describe(_ status: Status) -> AdminValue {
        .object([
            "sealed": .bool(status.sealed), "progress": .int(status.progress),
            "threshold": status.threshold.map { .int($0) } ?? .null,
        ])
    }
}
