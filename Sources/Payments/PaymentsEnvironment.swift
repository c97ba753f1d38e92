public import BusinessMetrics
import Foundation
public import VaultCore
public import VaultCrypto
public import VaultStore

/// What every service of the merchant API is given: the store, the clock, the random source, the per-client
/// fingerprint keys, the settings and a logger. Passed in; there are no globals.
public struct PaymentsEnvironment: Sendable {
    public var store: any RecordStore
    public var clock: any WallClock
    public var random: any RandomSource
    public var fingerprintKeys: any FingerprintKeySource
    public var configuration: PaymentsConfiguration
    public var logger: Logger
    /// The business counters of `/metrics` (tokenizations, transactions, challenges, risk decisions).
    public var metrics = BusinessMetrics()
    /// Keeps this process's event ids strictly increasing (``EventLog``), so one resource's events list in the
    /// order they happened even within one microsecond or one batch.
    public let eventStamps = EventStamps()
    /// Turns on wallets (``HotRecordQueue``): every change of a wallet (credit, refund, update) takes its turn, so
    /// that no writer builds on a version a credit handed on without seeing it.
    let walletTurns = HotRecordQueue<Wallet>()

    public init(
        store: any RecordStore,
        clock: any WallClock,
        random: any RandomSource,
        fingerprintKeys: any FingerprintKeySource,
        configuration: PaymentsConfiguration = PaymentsConfiguration(),
        logger: Logger = .disabled
    ) {
        self.store = store
        self.clock = clock
        self.random = random
        self.fingerprintKeys = fingerprintKeys
        self.configuration = configuration
        self.logger = logger
    }

    /// Record ids for secret or personal values (idempotency keys, IP addresses): keyed hashes, see
    /// ``KeyedRecordIds``.
    public var recordIds: KeyedRecordIds {
        get throws { try KeyedRecordIds(keys: fingerprintKeys) }
    }

    /// The current time in whole Unix seconds, as the wire shows dates.
    var nowSeconds: Int64 { Int64(clock.now.timeIntervalSince1970.rounded(.down)) }
}
