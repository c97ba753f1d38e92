import CardKit
import Foundation
import Risk
import Testing
import VaultCore
import VaultCrypto
import VaultStore

@testable import Payments

/// Many pay-ins crediting one wallet at once take turns on it (``HotRecordQueue``): none fails, the balance is
/// exact, on the in-memory store and on the file store (where each credit is handed to the next before its
/// group commit is durable).
@Suite struct HotWalletTests {
    static func payInsIntoOneWallet(
        store: any RecordStore, fingerprintKeys: any FingerprintKeySource, count: Int
    )
        async throws
    {
        let shop = try await WalletWritersTests.Shop.open(store: store, fingerprintKeys: fingerprintKeys)
        let statuses = try await withThrowingTaskGroup(of: String.self) { group in
            for index in 0..<count {
                group.addTask { try await shop.pay(1000 + Int64(index), through: shop.services)?.status ?? "REFUSED" }
            }
            var statuses: [String] = []
            for try await status in group { statuses.append(status) }
            return statuses
        }
        #expect(statuses.count == count && statuses.allSatisfy { $0 == "SUCCEEDED" })
        let expected = (0..<count).reduce(Int64(0)) { $0 + 900 + Int64($1) }
        #expect(try await shop.balance == expected)
    }

    @Test func concurrentPayInsIntoOneWalletAllSucceedInMemory() async throws {
        try await Self.payInsIntoOneWallet(
            store: InMemoryRecordStore(), fingerprintKeys: DerivedFingerprintKeys(secret: .random()), count: 64)
    }

    @Test func concurrentPayInsIntoOneWalletAllSucceedOnTheFileStore() async throws {
        let directory = NSTemporaryDirectory() + "cv-hot-wallet-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        _ = try KeyRing.createMasterKey(keysDirectory: directory + "/keys")
        let store = try EncryptedFileStore.open(directory: directory + "/data", keysDirectory: directory + "/keys")
        defer {
            store.close()
            try? FileManager.default.removeItem(atPath: directory)
        }
        try await Self.payInsIntoOneWallet(store: store, fingerprintKeys: store.fingerprintKeys, count: 200)
    }

    /// A frictionless pay-in reads its wallet once (in its validation), when no other credit of the wallet runs.
    @Test func aPayInOnItsOwnReadsTheWalletOnce() async throws {
        let store = WalletReadCountingStore()
        try await Self.payInsIntoOneWallet(
            store: store, fingerprintKeys: DerivedFingerprintKeys(secret: .random()), count: 1)
        // The pay-in's validation, then the test's own read of the balance.
        #expect(store.walletReads == 2)
    }

    /// A frictionless pay-in with a card of known validity reads the store once before its commit: the records it
    /// names and its events' hooks in one ``RecordStore/get(many:)`` (one round trip on PostgreSQL), no single read,
    /// and no `.unconditional` put (whose version PostgreSQL would read before sealing it). The card's first pay-in
    /// also reads the card again to mark it VALID. Nor do a refund and a wallet's creation make `.unconditional` puts.
    @Test func aPayInReadsWhatItNeedsInOneRoundTrip() async throws {
        let store = RoundTripCountingStore()
        let shop = try await WalletWritersTests.Shop.open(
            store: store, fingerprintKeys: DerivedFingerprintKeys(secret: .random()))
        let hook = RecordWrite.put(
            collection: Collections.hooksByEvent, id: EventLog.hookKey(clientId: "shop", type: .payInNormalSucceeded),
            value: Array("hook_1".utf8), condition: .absent)
        try await store.commit([hook])
        store.reset()
        #expect(try await shop.pay(1000, through: shop.services)?.status == "SUCCEEDED")
        #expect(store.counts.singleReads == [Collections.cards])
        #expect(store.counts.manyReads == 1)
        store.reset()
        let second = try #require(try await shop.pay(2000, through: shop.services))
        #expect(second.status == "SUCCEEDED")
        let counts = store.counts
        #expect(counts.singleReads == [] && counts.manyReads == 1)
        #expect(counts.commits == 1 && counts.unconditionalPuts == 0)
        // The hooks came with that read: SUCCEEDED (hooked) is queued for delivery, CREATED is not.
        let queued = try await store.scanAll(Collections.eventOutbox).map {
            try RecordCoding.decode(PaymentEvent.self, from: $0)
        }
        #expect(queued.filter { $0.resourceId == second.id }.map(\.eventType) == [.payInNormalSucceeded])
        // A refund and a new wallet name their entries after themselves too: no `.unconditional` put either.
        store.reset()
        let refund = try await shop.services.payIns.refund(
            clientId: "shop", payInId: second.id,
            request: RefundRequest(debitedFunds: Funds(currency: "EUR", amount: 100)))
        _ = try await shop.services.wallets.create(
            clientId: "shop", owners: [shop.payer], description: "second", currency: "EUR", tag: nil)
        #expect(refund.status == "SUCCEEDED")
        #expect(store.counts.commits == 2 && store.counts.unconditionalPuts == 0)
    }

    /// A stamp taken before reading a record says, at the next turn, whether the copy is as current as a read in
    /// the turn: no change of the record (or of its stripe) took a turn since, and none was under way.
    @Test func aStampSaysWhetherACopyReadAfterItIsStillCurrent() async throws {
        let queue = HotRecordQueue<Int>()
        let stamp = try #require(queue.stamp("w"))
        let turn = await queue.take("w", since: stamp)
        #expect(turn.untouchedSinceStamp)
        // While a change holds the turn (or what it handed on may not be in the store yet), there is no stamp.
        #expect(queue.stamp("w") == nil)
        turn.hand(Stored(value: 1, version: 2))
        #expect(queue.stamp("w") == nil)
        turn.finish(failed: false)
        // Another change took a turn after the stamp: the copy may be stale.
        let old = try #require(queue.stamp("w"))
        await queue.take("w").finish(failed: false)
        let late = await queue.take("w", since: old)
        #expect(!late.untouchedSinceStamp)
        late.finish(failed: false)
        // Without a stamp, never.
        let unstamped = await queue.take("w")
        #expect(!unstamped.untouchedSinceStamp)
        unstamped.finish(failed: false)
        // A change that had to wait for its turn: never.
        let fresh = try #require(queue.stamp("w"))
        let first = await queue.take("w", since: fresh)
        #expect(first.untouchedSinceStamp)
        let waiting = Task { await queue.take("w", since: fresh) }
        try await Task.sleep(nanoseconds: 20_000_000)
        first.finish(failed: false)
        let second = await waiting.value
        #expect(!second.untouchedSinceStamp)
        second.finish(failed: false)
    }

    /// A change that hands nothing on (it failed before its commit was queued) leaves what the change before it
    /// handed on to the next one: the store does not hold that write yet, so a read would be stale and conflict.
    @Test func aChangeThatHandsNothingLeavesTheEarlierHandOffToTheNext() async throws {
        let queue = HotRecordQueue<Int>()
        let first = await queue.take("w")
        first.hand(Stored(value: 7, version: 2))  // queued, not durable yet
        let second = await queue.take("w")
        #expect(second.latest?.value == 7)
        let third = Task { await queue.take("w") }
        try await Task.sleep(nanoseconds: 20_000_000)
        second.finish(failed: true)  // refused before queueing: hands nothing
        let next = await third.value
        #expect(next.latest?.value == 7 && next.latest?.version == 2)
        next.finish(failed: false)
        // Once the change that wrote it is done, the store holds it: the next change reads the store.
        first.finish(failed: false)
        #expect(await queue.take("w").latest == nil)
    }

    /// The turn hands a record on to the next change in line, and forgets it once the change is done.
    @Test func turnsHandTheRecordOnInOrder() async throws {
        let queue = HotRecordQueue<Int>()
        let first = await queue.take("w")
        #expect(first.latest == nil)
        let second = Task { await queue.take("w") }
        try await Task.sleep(nanoseconds: 20_000_000)
        first.hand(Stored(value: 7, version: 2))
        let next = await second.value
        #expect(next.latest?.value == 7 && next.latest?.version == 2)
        first.finish(failed: false)
        next.finish(failed: false)
        #expect(await queue.take("w").latest == nil)
    }
}

/// Counts the reads of wallet records, over an in-memory store.
final class WalletReadCountingStore: RecordStore {
    let inner = InMemoryRecordStore()
    private let reads = Locked(0)

    var walletReads: Int { reads.withLock { $0 } }

    func get(_ collection: String, id: String) async throws -> Record? {
        if collection == Collections.wallets { reads.withLock { $0 += 1 } }
        return try await inner.get(collection, id: id)
    }

    func commit(_ writes: [RecordWrite]) async throws -> [UInt64] { try await inner.commit(writes) }

    func scan(_ collection: String, prefix: String, after: String?, limit: Int) async throws -> [Record] {
        try await inner.scan(collection, prefix: prefix, after: after, limit: limit)
    }
}

/// Counts the reads a caller makes of an in-memory store, as a store with a round trip per call would see them:
/// single reads (by collection) and ``RecordStore/get(many:)`` calls, and the commits with their `.unconditional` puts.
final class RoundTripCountingStore: RecordStore {
    struct Counts {
        var singleReads: [String] = []
        var manyReads = 0
        var commits = 0
        var unconditionalPuts = 0
    }

    let inner = InMemoryRecordStore()
    private let state = Locked(Counts())

    var counts: Counts { state.withLock { $0 } }

    func reset() { state.withLock { $0 = Counts() } }

    func get(_ collection: String, id: String) async throws -> Record? {
        state.withLock { $0.singleReads.append(collection) }
        return try await inner.get(collection, id: id)
    }

    func get(many keys: [(collection: String, id: String)]) async throws -> [Record?] {
        state.withLock { $0.manyReads += 1 }
        return try await inner.get(many: keys)
    }

    @discardableResult
    func commit(_ writes: [RecordWrite]) async throws -> [UInt64] {
        state.withLock { counts in
            counts.commits += 1
            counts.unconditionalPuts +=
                writes.filter {
                    if case .put = $0, $0.condition == .unconditional { return true }
                    return false
                }.count
        }
        return try await inner.commit(writes)
    }

    func scan(_ collection: String, prefix: String, after: String?, limit: Int) async throws -> [Record] {
        try await inner.scan(collection, prefix: prefix, after: after, limit: limit)
    }
}
