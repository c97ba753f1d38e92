import AdminChannel
import Foundation
import VaultCore
import VaultCrypto
import VaultStore
import VaultStorePostgres

/// The admin commands of the PostgreSQL store, under the same names and answers as the file store's
/// (``StoreAdminCommands``): `keys.list`, `keys.status`, `keys.rotate`, `keys.rotate-master`, `keys.retire`,
/// `keys.rewrap`, `store.verify`, `store.compact` (PostgreSQL's autovacuum does that work: a no-op here).
enum PostgresAdminCommands {
    static func register(_ store: PostgresRecordStore, in handlers: AdminHandlers) {
        handlers.register("keys.list") { _, _ in
            .object(["keys": .array(try await store.dataKeyStatus().map(describe))])
        }
        handlers.register("keys.status") { _, _ in
            let policy = store.keyRing.policy
            let status = try await store.dataKeyStatus()
            return .object([
                "keys": .array(status.map(describe)),
                "currentVersion": .int(Int(store.keyRing.currentVersion)),
                "sealLimit": .int(Int(policy.maximumSeals)),
                "maximumAgeSeconds": policy.maximumAge.map { .int(Int($0)) } ?? .null,
                "reservationBlock": .int(Int(policy.reservationBlock)),
                "now": .int(Int(store.options.clock.now.timeIntervalSince1970)),
            ])
        }
        handlers.register("keys.rotate") { _, _ in
            let info = try await store.rotateDataKey()
            return .object([
                "version": .int(Int(info.version)), "created": .int(Int(info.created.timeIntervalSince1970)),
            ])
        }
        handlers.register("keys.rotate-master") { _, _ in
            try await store.rotateMasterKey()
            return .object([:])
        }
        handlers.register("keys.retire") { arguments, _ in
            guard let version = arguments["version"]?.intValue, version > 0, version <= Int(UInt32.max) else {
                throw AdminError(AdminError.badMessage, "keys.retire needs a positive integer \"version\"")
            }
            try await store.retireDataKey(version: UInt32(version))
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
            .object(["segmentsRemoved": .int(0), "recordsMoved": .int(0), "bytesReclaimed": .int(0)])
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
