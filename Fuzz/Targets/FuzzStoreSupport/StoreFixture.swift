import Foundation
import FuzzSupport
import VaultCore
import VaultCrypto

@testable import VaultStore

/// The throwaway keys of the disk-byte fuzz targets and the writer of their seed corpora.
///
/// The master key is a fixed, string (never a real key); the committed keyring
/// (Fuzz/fixtures/store/keyring.json) wraps its data keys under it, and the committed segment, frame and
/// checkpoint seeds were written by a real ``EncryptedFileStore`` under that keyring, so the targets can
/// authenticate and open the sealed values of the seeds exactly as the store's read path does.
enum StoreFixture {
    /// The throwaway master key: 32 bytes.
    static let masterKey = Array("cardvault-fuzz-throwaway-key-32!".utf8)

    /// Fuzz/ in the source tree.
    static let fuzzDirectory: String = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }
        return url.path
    }()

    static var keyRingFixture: String { fuzzDirectory + "/fixtures/store/keyring.json" }

    /// A scratch directory in /dev/shm when there is one (the store syncs every write: on tmpfs that costs
    /// nothing), else under the system's temporary directory.
    static func scratch(_ name: String) -> String {
        let base = FileManager.default.fileExists(atPath: "/dev/shm") ? "/dev/shm/" : NSTemporaryDirectory()
        let path = base + "cardvault-fuzz-\(getpid())-" + name
        try? FileManager.default.removeItem(atPath: path)
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    /// A keys directory holding the throwaway master key.
    static func keysDirectory() -> String {
        let keys = scratch("keys")
        let path = keys + "/" + KeyRing.masterKeyFileName
        _ = FileManager.default.createFile(
            atPath: path, contents: Data(masterKey), attributes: [.posixPermissions: 0o600])
        return keys
    }

    /// The committed keyring opened under the throwaway master key (a copy, so nothing in the tree changes).
    static func openKeyRing() -> KeyRing {
        let data = scratch("ring")
        try? FileManager.default.copyItem(atPath: keyRingFixture, toPath: data + "/" + KeyRing.keyRingFileName)
        do {
            return try KeyRing.open(dataDirectory: data, keysDirectory: keysDirectory())
        } catch {
            fatalError("cannot open the fuzz keyring fixture \(keyRingFixture): \(error); run make fuzz-seeds")
        }
    }

    /// Opens the sealed value of a frame the way the store's read path does (AAD from kind, names and versions).
    static func openValue(
        _ frame: UnsafeRawBufferPointer, _ header: RecordFrame.Header, keyRing: KeyRing
    )
        -> [UInt8]?
    {
        guard header.kind == .put, let key = keyRing.key(version: header.keyVersion) else { return nil }
        let collection = UnsafeRawBufferPointer(
            rebasing: frame[RecordFrame.fixedHeaderSize..<RecordFrame.fixedHeaderSize + header.collectionLength])
        let id = UnsafeRawBufferPointer(
            rebasing: frame[(RecordFrame.fixedHeaderSize + header.collectionLength)..<header.namesEnd])
        let aad = RecordFrame.authenticatedData(
            kind: .put, collection: collection, id: id, keyVersion: header.keyVersion,
            recordVersion: header.recordVersion)
        let sealed = UnsafeRawBufferPointer(rebasing: frame[header.sealedRange])
        guard let plain = try? AESGCM.open(sealed, using: key, authenticating: aad) else { return nil }
        return plain.withUnsafeBytes { Array($0) }
    }

    /// Rewrites the header and frame CRCs of every frame that a writer could have written at `start`, so that
    /// mutations reach the code behind the checksums (mode bit of the segment and frame targets).
    static func repairChecksums(_ bytes: inout [UInt8], from start: Int) {
        var position = start
        while position + RecordFrame.fixedHeaderSize <= bytes.count {
            let length =
                Int(bytes[position]) | Int(bytes[position + 1]) << 8 | Int(bytes[position + 2]) << 16
                | Int(bytes[position + 3]) << 24
            let namesEnd = RecordFrame.fixedHeaderSize + Int(bytes[position + 6]) + Int(bytes[position + 7])
            guard position + namesEnd <= bytes.count else { return }
            let fixed = CRC32C.checksum(Array(bytes[position..<position + 20]))
            let namesCRC = Array(bytes[(position + RecordFrame.fixedHeaderSize)..<(position + namesEnd)])
                .withUnsafeBytes {
                    CRC32C.checksum($0, seed: fixed)
                }
            store(namesCRC, in: &bytes, at: position + 20)
            guard length >= namesEnd + RecordFrame.trailerSize, position + length <= bytes.count else { return }
            let frameCRC = CRC32C.checksum(Array(bytes[position..<position + length - RecordFrame.trailerSize]))
            store(frameCRC, in: &bytes, at: position + length - RecordFrame.trailerSize)
            position += length
        }
    }

    static func store(_ value: UInt32, in bytes: inout [UInt8], at offset: Int) {
        for index in 0..<4 { bytes[offset + index] = UInt8(truncatingIfNeeded: value >> (8 * UInt32(index))) }
    }

    /// When `CARDVAULT_FUZZ_SEEDS=1`, writes the keyring fixture and the binary seed corpora (segments, frames,
    /// checkpoints, keyrings) from a real store under the throwaway master key, then exits.
    static func writeSeedsIfAsked() {
        guard ProcessInfo.processInfo.environment["CARDVAULT_FUZZ_SEEDS"] == "1" else { return }
        do {
            try writeSeeds()
            print("seeds written under \(fuzzDirectory)")
            exit(0)
        } catch {
            print("cannot write seeds: \(error)")
            exit(1)
        }
    }

    static func writeSeeds() throws {
        let keys = keysDirectory()
        let data = scratch("seed-data")
        let store = try EncryptedFileStore.open(
            directory: data, keysDirectory: keys,
            options: FileStoreOptions(preallocationBytes: 0, automaticCompaction: false))
        runBlocking {
            do {
                try await store.put(
                    "cards", id: "card_1", value: Array(#"{"Alias":"497010XXXXXX1119","Currency":"EUR"}"#.utf8))
                try await store.put("users", id: "user_1", value: Array(#"{"FirstName":"John","LastName":"Doe"}"#.utf8))
                try await store.commit([
                    .put(
                        collection: "wallets", id: "wallet_1", value: Array(#"{"Balance":0}"#.utf8),
                        condition: .unconditional),
                    .put(
                        collection: "payins", id: "payin_1", value: Array(#"{"Amount":1000}"#.utf8),
                        condition: .unconditional),
                    .delete(collection: "users", id: "user_x", condition: .unconditional),
                ])
                _ = try store.rotateDataKey()
                try await store.put(
                    "cards", id: "card_1", value: Array(#"{"Alias":"497010XXXXXX1119","Active":false}"#.utf8))
                try await store.delete("payins", id: "payin_1")
                try store.checkpoint()
                try await store.put("users", id: "user_2", value: [])
            } catch {
                fatalError("seed store: \(error)")
            }
        }
        store.close()
        let fixtures = fuzzDirectory + "/fixtures/store"
        try FileManager.default.createDirectory(atPath: fixtures, withIntermediateDirectories: true)
        let ring = try Data(contentsOf: URL(fileURLWithPath: data + "/" + KeyRing.keyRingFileName))
        try? FileManager.default.removeItem(atPath: keyRingFixture)
        try ring.write(to: URL(fileURLWithPath: keyRingFixture))

        var segment = try [UInt8](Data(contentsOf: URL(fileURLWithPath: data + "/segments/00000001.seg")))
        while segment.last == 0 { segment.removeLast() }  // preallocated space
        let corpus = fuzzDirectory + "/corpus"
        func write(_ target: String, _ name: String, _ bytes: [UInt8]) throws {
            let directory = corpus + "/" + target
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            try Data(bytes).write(to: URL(fileURLWithPath: directory + "/" + name))
        }
        // Segment scanner: mode byte (bit 0: repair checksums), then the segment file.
        try write("fuzz-segment-scanner", "segment", [0] + segment)
        try write("fuzz-segment-scanner", "segment-preallocated", [0] + segment + [UInt8](repeating: 0, count: 64))
        var torn = segment
        torn.removeLast(9)
        try write("fuzz-segment-scanner", "segment-torn-tail", [0] + torn)
        var damaged = segment
        damaged[RecordFrame.fixedHeaderSize + 40] ^= 0xFF
        try write("fuzz-segment-scanner", "segment-damaged-middle", [0] + damaged)
        // Record frames: mode byte, then one frame.
        var position = EncryptedFileStore.segmentHeaderSize
        var count = 0
        while position < segment.count {
            let rest = Array(segment[position...])
            let parsed = rest.withUnsafeBytes { RecordFrame.parse($0) }
            guard case .valid(let header) = parsed else { break }
            count += 1
            try write("fuzz-record-frame", "frame-\(count)-\(header.kind)", [0] + Array(rest[0..<header.length]))
            position += header.length
        }
        let checkpoint = try [UInt8](Data(contentsOf: URL(fileURLWithPath: data + "/" + IndexCheckpoint.fileName)))
        try write("fuzz-index-checkpoint", "checkpoint", [0] + checkpoint)
        // Store recovery: mode byte, u16 checkpoint length, checkpoint, segment (mode 4: no checkpoint).
        let length = [UInt8(checkpoint.count & 0xFF), UInt8(checkpoint.count >> 8)]
        try write("fuzz-store-recovery", "checkpoint-and-segment", [0] + length + checkpoint + segment)
        try write("fuzz-store-recovery", "segment-only", [4, 0, 0] + segment)
        try write("fuzz-store-recovery", "segment-torn-tail", [0] + length + checkpoint + torn)
        // Key files: mode byte 0 = keyring.json, 1 = master.key.
        try write("fuzz-key-file", "keyring.json", [0] + Array(ring))
        try write("fuzz-key-file", "master.key", [1] + masterKey)
        try? FileManager.default.removeItem(atPath: data)
        try? FileManager.default.removeItem(atPath: keys)
    }
}
