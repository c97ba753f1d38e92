import CardVaultTesting
import Foundation
import Testing
import VaultCore
import VaultCrypto

@testable import AdminChannel

/// A custody record held in memory.
private final class MemoryCustody: CustodyRecords {
    let record: Locked<KeyCustody?>
    init(_ custody: KeyCustody?) { record = Locked(custody) }
    func read() throws -> KeyCustody? { record.withLock { $0 } }
    func write(_ custody: KeyCustody) throws { record.withLock { $0 = custody } }
}

/// A clock the test moves.
private final class TestClock: WallClock {
    let time = Locked(Date(timeIntervalSince1970: 1_800_000_000))
    var now: Date { time.withLock { $0 } }
}

@Suite struct UnsealerTests {
    /// An unsealer over a fresh 2-of-3 split whose `open` answers the master key's check value.
    private static func make(
        _ sandbox: TemporaryDirectory, clock: TestClock = TestClock()
    ) throws -> (Unsealer<String>, [String], MasterKeySplit, CustodyAuditLog) {
        try FileManager.default.createDirectory(atPath: sandbox.data, withIntermediateDirectories: true)
        let split = try MasterKeySplit.fresh(threshold: 2, count: 3)
        let audit = CustodyAuditLog(dataDirectory: sandbox.data, clock: clock)
        let expected = try split.masterKey.checkValue()
        let unsealer = try Unsealer<String>(
            records: MemoryCustody(split.custody), clock: clock, audit: audit, logger: .disabled
        ) { key in
            guard try key.checkValue() == expected else { throw KeyRingError(.wrongMasterKey, "not this key") }
            return "opened"
        }
        return (unsealer, split.shareLines.map(\.line), split, audit)
    }

    private static let caller = AdminCaller(uid: 1234, pid: 99)

    @Test func theThresholdOfSharesOpensAndEachStepIsAudited() async throws {
        let sandbox = try TemporaryDirectory()
        let (unsealer, lines, _, audit) = try Self.make(sandbox)
        #expect(unsealer.status == .init(sealed: true, progress: 0, threshold: 2))
        let first = try await unsealer.add(lines[2], caller: Self.caller)
        #expect(first["progress"] == .int(1) && first["sealed"] == .bool(true))
        await #expect(throws: AdminError.self) { try await unsealer.add(lines[2], caller: Self.caller) }
        let done = try await unsealer.add(lines[0], caller: Self.caller)
        #expect(done["sealed"] == .bool(false))
        #expect(await unsealer.opened() == "opened")
        await #expect(throws: AdminError("unsealed", "")) { try await unsealer.add(lines[1], caller: Self.caller) }
        let events = try audit.events()
        #expect(
            events.map { $0["event"]?.stringValue } == [
                "share.accepted", "share.refused", "share.accepted", "unsealed",
            ])
        #expect(events.allSatisfy { $0["uid"] == .int(1234) && $0["pid"] == .int(99) })
        #expect(events[0]["index"] == .int(3) && events[1]["reason"] == .string("repeatedIndex"))
        let text = try String(contentsOfFile: audit.path, encoding: .utf8)
        for line in lines { #expect(!text.contains(String(line.dropFirst(9).prefix(64)))) }
    }

    @Test func sharesOfAnotherVaultAreRefusedAndProgressReset() async throws {
        let sandbox = try TemporaryDirectory()
        let (unsealer, lines, _, audit) = try Self.make(sandbox)
        let other = try MasterKeySplit.fresh(threshold: 2, count: 3).shareLines.map(\.line)
        _ = try await unsealer.add(lines[0], caller: Self.caller)
        await #expect(throws: AdminError(KeyRingError.Code.wrongKey.description, "")) {
            try await unsealer.add(other[1], caller: Self.caller)
        }
        #expect(unsealer.status.progress == 0 && unsealer.status.sealed)
        #expect(try audit.events().last?["event"] == .string("unseal.refused"))
        // A mistyped share is refused before it counts, naming its index.
        var typo = Array(lines[1])
        typo[10] = typo[10] == "a" ? "b" : "a"
        do {
            _ = try await unsealer.add(String(typo), caller: Self.caller)
            Issue.record("a mistyped share was accepted")
        } catch let error as AdminError {
            #expect(error.code == "checkValue" && error.message.contains("share 2"))
        }
        #expect(unsealer.status.progress == 0)
    }

    @Test func progressIsDroppedTenMinutesAfterTheLastShare() async throws {
        let sandbox = try TemporaryDirectory()
        let clock = TestClock()
        let (unsealer, lines, _, _) = try Self.make(sandbox, clock: clock)
        _ = try await unsealer.add(lines[0], caller: Self.caller)
        clock.time.withLock { $0 += UnsealProgress.timeout - 1 }
        #expect(unsealer.status.progress == 1)
        clock.time.withLock { $0 += 1 }
        #expect(unsealer.status.progress == 0)
    }

    @Test func cancelWakesTheWaiterWithNothing() async throws {
        let sandbox = try TemporaryDirectory()
        let (unsealer, _, _, _) = try Self.make(sandbox)
        async let waited = unsealer.opened()
        try await Task.sleep(for: .milliseconds(20))
        unsealer.cancel()
        #expect(await waited == nil)
    }

    @Test func rekeyVoidsTheOldSharesAndKeepsTheMasterKey() async throws {
        let sandbox = try TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: sandbox.data, withIntermediateDirectories: true)
        let split = try MasterKeySplit.fresh(threshold: 2, count: 3)
        let records = MemoryCustody(split.custody)
        let handlers = AdminHandlers()
        CustodyAdminCommands(
            records: records, audit: CustodyAuditLog(dataDirectory: sandbox.data), rewrap: { _ in }, seal: {}
        ).register(in: handlers)
        let old = split.shareLines.map(\.line)
        let answer = try await handlers.invoke(
            "keys.rekey",
            arguments: [
                "threshold": .int(3), "shares": .int(4), "currentShares": .array(old[1...].map { .string($0) }),
            ])
        let fresh = (answer["keyShares"]?.arrayValue ?? []).compactMap { $0["share"]?.stringValue }
        #expect(fresh.count == 4 && answer["masterCheckValue"] == .string(split.custody.masterCheckValue ?? ""))
        // Nothing changes until the shares were shown and the ceremony is committed.
        #expect(try records.read() == split.custody)
        let id = try #require(answer["commit"]?.stringValue)
        _ = try await handlers.invoke("keys.commit", arguments: ["commit": .string(id)])
        await #expect(throws: AdminError.self) {
            try await handlers.invoke("keys.commit", arguments: ["commit": .string(id)])
        }
        let custody = try #require(try records.read())
        let rebuilt = KeyShares.combine(try fresh[1...3].map { try ShareText.parse($0) })
        #expect(KeyCheckValue.hex(of: try custody.openMaster(with: rebuilt)) == split.custody.masterCheckValue)
        let stale = KeyShares.combine(try old[0...1].map { try ShareText.parse($0) })
        #expect(throws: KeyRingError.self) { try custody.openMaster(with: stale) }
        // The old shares cannot rekey again.
        await #expect(throws: AdminError.self) {
            try await handlers.invoke(
                "keys.rekey",
                arguments: ["threshold": .int(2), "shares": .int(2), "currentShares": .array(old.map { .string($0) })])
        }
    }
}
