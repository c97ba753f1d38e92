import Foundation
import VaultCore
import VaultCrypto
public import VaultStore

/// The admin commands of the encrypted store, as used by `cardvault keys` and `cardvault verify`:
/// `keys.list`, `keys.status`, `keys.rotate`, `keys.rotate-master`, `keys.rewrap`, `keys.retire`, `store.verify`,
/// `store.compact`. The daemon registers them on its admin socket; the CLI runs the same handlers
/// in-process when it opens the files itself.
public enum StoreAdminCommands {
    /// Name of the admin socket inside the data directory.
    public static let socketFileName = "admin.sock"

    /// The admin socket path of a data directory.
    public static func socketPath(dataDirectory: String) -> String {
        (dataDirectory as NSString).appendingPathComponent(socketFileName)
    }

    /// Registers the store's commands in `handlers`.
    public static func register(_ store: EncryptedFileStore, in handlers: AdminHandlers) {
        handlers.register("keys.list") { _, _ in
            .object(["keys": .array(store.dataKeyStatus().map(describe))])
        }
        handlers.register("keys.status") { _, _ in
            let policy = store.keyRing.policy
            return .object([
                "keys": .array(store.dataKeyStatus().map(describe)),
                "currentVersion": .int(Int(store.keyRing.currentVersion)),
                "sealLimit": .int(Int(policy.maximumSeals)),
                "maximumAgeSeconds": policy.maximumAge.map { .int(Int($0)) } ?? .null,
                "reservationBlock": .int(Int(policy.reservationBlock)),
                "now": .int(Int(store.options.clock.now.timeIntervalSince1970)),
            ])
        }
        handlers.register("keys.rotate") { _, _ in
            let info = try store.rotateDataKey()
            return .object([
                "version": .int(Int(info.version)), "created": .int(Int(info.created.timeIntervalSince1970)),
            ])
        }
        handlers.register("keys.rotate-master") { _, _ in
            try store.rotateMasterKey()
            return .object([:])
        }
        handlers.register("keys.retire") { arguments, _ in
            guard let version = arguments["version"]?.intValue, version > 0, version <= Int(UInt32.max) else {
                throw AdminError(AdminError.badMessage, "keys.retire needs a positive integer \"version\"")
            }
            try store.retireDataKey(version: UInt32(version))
            return .object(["version": .int(version)])
        }
        handlers.register("keys.rewrap") { _, progress in
            let report = try await store.rewrap { done, total in
                progress.report(.object(["done": .int(done), "total": .int(total)]))
            }
            return .object([
                "moved": .int(report.moved), "remaining": .int(report.remaining),
                "failures": .array(report.failures.map { .string($0.description) }),
            ])
        }
        handlers.register("store.verify") { _, progress in
            let report = try await store.verify { done, total in
                progress.report(.object(["done": .int(done), "total": .int(total)]))
            }
            return .object([
                "checked": .int(report.checked),
                "failures": .array(report.failures.map { .string($0.description) }),
                "damage": .array(report.damage.map { .string($0) }),
            ])
        }
        handlers.register("store.compact") { _, _ in
            let report = try await store.compact()
            return .object([
                "segmentsRemoved": .int(report.segmentsRemoved), "recordsMoved": .int(report.recordsMoved),
                "bytesReclaimed": .int(report.bytesReclaimed),
            ])
        }
    }

    private static func describe(_ status: DataKeyStatus) -> AdminValue {
        .object([
            "version": .int(Int(status.key.version)),
            "created": .int(Int(status.key.created.timeIntervalSince1970)),
            "records": .int(status.records),
            "seals": .int(Int(clamping: status.key.seals)),
            "retired": .bool(status.key.retired),
            "current": .bool(status.isCurrent),
        ])
    }
}
