import AdminChannel
import Foundation
import VaultCore
import VaultCrypto
import VaultStore

#if canImport(Glibc)
import Glibc
#endif

/// `cardvault store-exercise` (hidden, for tests): drives the encrypted store from a separate
/// process so that tests can kill it with SIGKILL or talk to it over the admin socket.
///
///     store-exercise write --data-dir D --keys-dir K [--acked FILE] [--writers N] [--count N]
///                          [--rotate-after-seals N]
///         Checks every record listed in FILE ("id version" lines) reads back intact, prints
///         "verified N", then writes records forever (or N of them, then closes cleanly),
///         printing "ack ID VERSION" after each acknowledged write. With --rotate-after-seals the
///         data key rotates after N seals (reserved 64 at a time), for tests of the seal counts.
///     store-exercise serve --data-dir D --keys-dir K [--no-admin]
///         Opens the store, answers on the admin socket, keeps a client load of writes and reads
///         running until stdin closes, then prints "operations N failures M".
enum StoreExerciseCommand: Command {
    static let name = "store-exercise"
    static let summary = ""  // hidden from `cardvault --help`
    static let help = "usage: cardvault store-exercise write|serve --data-dir DIR --keys-dir DIR (for tests)"

    static func run(_ arguments: inout Arguments) async throws -> Int32 {
        guard let mode = arguments.positional() else { throw UsageError("missing mode") }
        guard let data = try arguments.option("--data-dir"), let keys = try arguments.option("--keys-dir") else {
            throw UsageError("--data-dir and --keys-dir are required")
        }
        switch mode {
        case "write":
            let acked = try arguments.option("--acked")
            let writers = Int(try arguments.option("--writers") ?? "8") ?? 8
            let count = try arguments.option("--count").flatMap { Int($0) }
            var options = options
            if let seals = try arguments.option("--rotate-after-seals").flatMap({ UInt64($0) }) {
                options.keyRotation = KeyRotationPolicy(maximumSeals: seals, maximumAge: nil, reservationBlock: 64)
            }
            try arguments.finish()
            return try await write(
                data: data, keys: keys, acked: acked, writers: writers, count: count, options: options)
        case "serve":
            let admin = !arguments.flag("--no-admin")
            try arguments.finish()
            return try await serve(data: data, keys: keys, admin: admin)
        default:
            throw UsageError("unknown mode \(mode)")
        }
    }

    /// The value a test record must hold at `version`: derived from its id, so a reader can check it.
    static func value(_ id: String, _ version: UInt64) -> [UInt8] {
        let padding = (id.utf8.count * 7 + Int(version % 1000) * 13) % 150
        return Array("\(id)/\(version)/".utf8) + [UInt8](repeating: 0x78, count: padding)
    }

    /// Small segments and eager compaction, so that kills land in rollovers, checkpoints and
    /// compactions too.
    static let options = FileStoreOptions(
        segmentBytes: 256 << 10, checkpointBytes: 512 << 10, compactionGarbageRatio: 0.3,
        compactionMinimumBytes: 512 << 10)

    private static let output = Locked(())

    /// Writes a line to stdout in one `write`, so a kill never interleaves two lines.
    static func emit(_ line: String) {
        let bytes = Array((line + "\n").utf8)
        output.withLock { _ in
            bytes.withUnsafeBytes { raw in
                var done = 0
                while done < raw.count {
                    let wrote = Glibc.write(STDOUT_FILENO, raw.baseAddress! + done, raw.count - done)
                    if wrote <= 0 { return }
                    done += wrote
                }
            }
        }
    }

    private static func write(
        data: String, keys: String, acked: String?, writers: Int, count: Int?, options: FileStoreOptions
    ) async throws -> Int32 {
        let store = try EncryptedFileStore.open(directory: data, keysDirectory: keys, options: options)
        var expected: [(String, UInt64)] = []
        if let acked, let text = try? String(contentsOfFile: acked, encoding: .utf8) {
            for line in text.split(separator: "\n") {
                let parts = line.split(separator: " ")
                if parts.count == 2, let version = UInt64(parts[1]) { expected.append((String(parts[0]), version)) }
            }
        }
        var bad = 0
        for (id, version) in expected {
            do {
                guard let record = try await store.get("crash", id: id) else {
                    emit("FAIL \(id) missing")
                    bad += 1
                    continue
                }
                if record.version < version || record.value != value(id, record.version) {
                    emit("FAIL \(id) version \(record.version) does not hold the acknowledged value")
                    bad += 1
                }
            } catch {
                emit("FAIL \(id) \(error)")
                bad += 1
            }
        }
        if bad > 0 {
            store.close()
            return 3
        }
        emit(
            "verified \(expected.count) recovery torn=\(store.recovery.tornTailBytes) checkpoint=\(store.recovery.usedCheckpoint)"
        )
        let tag = String(getpid())
        do {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for writer in 0..<writers {
                    group.addTask {
                        var index = 0
                        var mine: [(String, UInt64)] = []
                        while count.map({ index * writers < $0 }) ?? true {
                            let id = "\(tag)-\(writer)-\(index)"
                            if index % 5 == 4 {
                                let other = id + "b"
                                try await store.commit([
                                    .put(collection: "crash", id: id, value: value(id, 1), condition: .absent),
                                    .put(collection: "crash", id: other, value: value(other, 1), condition: .absent),
                                ])
                                emit("ack \(id) 1")
                                emit("ack \(other) 1")
                            } else {
                                try await store.put("crash", id: id, value: value(id, 1), condition: .absent)
                                emit("ack \(id) 1")
                            }
                            mine.append((id, 1))
                            if index % 3 == 2, let (previous, version) = mine.randomElement() {
                                let next = version + 1
                                try await store.put(
                                    "crash", id: previous, value: value(previous, next), condition: .version(version))
                                emit("ack \(previous) \(next)")
                                if let position = mine.firstIndex(where: { $0.0 == previous }) {
                                    mine[position].1 = next
                                }
                            }
                            index += 1
                        }
                    }
                }
                try await group.waitForAll()
            }
        }
        store.close()
        return 0
    }

    private static func serve(data: String, keys: String, admin: Bool) async throws -> Int32 {
        let store = try EncryptedFileStore.open(directory: data, keysDirectory: keys, options: options)
        let handlers = AdminHandlers()
        StoreAdminCommands.register(store, in: handlers)
        let server = AdminSocketServer(path: StoreAdminCommands.socketPath(dataDirectory: data), handlers: handlers)
        if admin { try server.start() }
        let tally = LoadTally()
        let load = Task {
            await withTaskGroup(of: Void.self) { group in
                for writer in 0..<4 {
                    group.addTask {
                        var index = 0
                        while !tally.stop.withLock({ $0 }) {
                            let id = "load-\(writer)-\(index)"
                            do {
                                try await store.put("load", id: id, value: value(id, 1), condition: .absent)
                                let back = try await store.get("load", id: "load-\(writer)-\(index / 2)")
                                if back?.value != value("load-\(writer)-\(index / 2)", 1) {
                                    tally.failures.withLock { $0.append("read of \(id) returned the wrong value") }
                                }
                                tally.operations.withLock { $0 += 2 }
                            } catch {
                                tally.failures.withLock { $0.append("\(error)") }
                            }
                            index += 1
                            if index % 50 == 0 { try? await Task.sleep(for: .milliseconds(2)) }
                        }
                    }
                }
            }
        }
        emit("ready")
        // Run until the test closes our stdin.
        var buffer = [UInt8](repeating: 0, count: 256)
        while Glibc.read(STDIN_FILENO, &buffer, buffer.count) > 0 {}
        tally.stop.withLock { $0 = true }
        await load.value
        await server.stop()
        store.close()
        let failed = tally.failures.withLock { $0 }
        for failure in failed.prefix(5) { emit("failure: \(failure)") }
        emit("operations \(tally.operations.withLock { $0 }) failures \(failed.count)")
        return failed.isEmpty ? 0 : 1
    }
}

/// Counters shared by the load tasks of `store-exercise serve`.
private final class LoadTally: Sendable {
    let stop = Locked(false)
    let operations = Locked(0)
    let failures = Locked<[String]>([])
}
