import Testing

@testable import VaultStore

@Suite struct RecordIndexTests {
    /// A checkpoint's body with its CRC-32C appended (so that a test's changes to it pass the checksum).
    private func withCRC(_ body: [UInt8]) -> [UInt8] {
        var out = body
        RecordFrame.appendInteger(&out, CRC32C.checksum(body))
        return out
    }

    private func location(_ value: Int) -> RecordLocation {
        RecordLocation(segment: 1, offset: UInt32(value), length: 10, keyVersion: 1, version: UInt64(value))
    }

    @Test func matchesADictionaryModelThroughInsertsUpdatesDeletesAndMerges() {
        var index = RecordIndex()
        var model: [String: Int] = [:]
        var generator = SystemRandomNumberGenerator()
        for step in 0..<30_000 {
            let id = "id-\(Int.random(in: 0..<5000, using: &generator))"
            if Int.random(in: 0..<4, using: &generator) == 0 {
                #expect(index.remove("c", id) == (model.removeValue(forKey: id) != nil))
            } else {
                index.upsert("c", id, location(step))
                model[id] = step
            }
        }
        #expect(index.count == model.count)
        #expect(index.count(of: "c") == model.count)
        #expect(index.count(of: "other") == 0)
        for (id, step) in model { #expect(index.find("c", id).map { index[$0].location } == location(step)) }
        // Absent ids (removed, or never written) are not found, whatever their hash's slot holds.
        for number in 0..<6000 where model["id-\(number)"] == nil { #expect(index.find("c", "id-\(number)") == nil) }
        let ordered = index.scan("c", prefix: "", after: nil, limit: .max).map { index.id(of: $0) }
        #expect(ordered == model.keys.sorted())
        let page = index.scan("c", prefix: "id-1", after: "id-15", limit: 5).map { index.id(of: $0) }
        #expect(page == Array(model.keys.filter { $0.hasPrefix("id-1") && $0 > "id-15" }.sorted().prefix(5)))
        #expect(index.find("other", "id-1") == nil)
        // Pages of 100 after a cursor cross the order's leaves (1024 ids at most each) and add up to the whole.
        var paged: [String] = []
        while true {
            let page = index.scan("c", prefix: "id-", after: paged.last, limit: 100).map { index.id(of: $0) }
            if page.isEmpty { break }
            paged += page
        }
        #expect(paged == model.keys.sorted())
        for prefix in ["id-4", "id-49", "id-499", "id-5", "id-9999"] {
            let expected = model.keys.filter { $0.hasPrefix(prefix) }.sorted()
            #expect(index.scan("c", prefix: prefix, after: nil, limit: .max).map { index.id(of: $0) } == expected)
        }
    }

    /// A leaf of the order compares 8 bytes of each id taken after what the leaf's ids have in common
    /// (`RecordIndex.Leaf`), and reads the ids only on a tie. Ids with long common prefixes, ids that are prefixes of
    /// others or end inside those 8 bytes, bytes above 0x7F, and ids that sort before or after all others (which
    /// shrink what a leaf's ids share) must keep the order of their UTF-8 bytes through splits, joins and a
    /// checkpoint's reload, and scans by prefix and after a cursor must agree with a sorted model.
    @Test func theOrderKeepsIdsWithLongCommonPrefixesInByteOrder() throws {
        var index = RecordIndex()
        var model: Set<String> = []
        var random = FixedSequence(seed: 0x2545_F491_4F6C_DD1D)
        func next(_ bound: Int) -> Int { random.next(bound) }
        let prefixes = ["", "a", "client-0123456789abcdef:", "client-0123456789abcdef:user-42:", "clé-é:", "client-0"]
        let alphabet: [Character] = ["0", "9", "a", "~", "\u{7F}", "é", "\u{10348}"]
        func randomId() -> String {
            var id = prefixes[next(prefixes.count)]
            for _ in 0..<next(13) { id.append(alphabet[next(alphabet.count)]) }
            return id
        }
        func byteOrder(_ ids: some Sequence<String>) -> [String] {
            ids.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        }
        func check(_ index: RecordIndex, _ when: String) {
            let ordered = index.scan("c", prefix: "", after: nil, limit: .max).map { index.id(of: $0) }
            #expect(ordered == byteOrder(model), "\(when): the order differs from the ids' byte order")
            for prefix in prefixes + ["client-0123456789abcdef:user-42:é", "cl", "clé"] {
                let expected = byteOrder(model.filter { $0.utf8.starts(with: prefix.utf8) })
                #expect(index.scan("c", prefix: prefix, after: nil, limit: .max).map { index.id(of: $0) } == expected)
                if let cursor = expected.dropFirst(expected.count / 3).first {
                    let after = index.scan("c", prefix: prefix, after: cursor, limit: 50).map { index.id(of: $0) }
                    #expect(after == Array(expected.drop { $0 != cursor }.dropFirst().prefix(50)), "\(when): \(prefix)")
                }
            }
        }
        for step in 0..<40_000 {
            let id = randomId()
            if next(3) == 0 {
                #expect(index.remove("c", id) == (model.remove(id) != nil))
            } else {
                index.upsert("c", id, location(step))
                model.insert(id)
            }
        }
        #expect(model.count > 5 * RecordIndex.leafCapacity)
        check(index, "after inserts and removals")
        let bytes = IndexCheckpoint.encode(index, position: .init(segment: 1, offset: 0))
        var loaded = try #require(IndexCheckpoint.decode(bytes)).0
        check(loaded, "after a checkpoint's reload")
        // Most ids go, so that thinned leaves join; then new ids go in between those left and around them.
        for id in byteOrder(model) where next(10) != 0 {
            let removed = (index.remove("c", id), loaded.remove("c", id))
            #expect(removed == (true, true))
            model.remove(id)
        }
        check(index, "after most removals")
        for step in 0..<5000 {
            let id = randomId()
            index.upsert("c", id, location(step))
            loaded.upsert("c", id, location(step))
            model.insert(id)
        }
        check(index, "after inserts among the ids left")
        check(loaded, "after inserts into the reloaded index")
    }

    /// The hash table doubles a few slots per change (`RecordIndex.Growth`): while it grows, a record is in the old
    /// table or the new one, never both, and finds, updates and removals reach it in either. Removals of records
    /// still in the old table, re-inserts of the same ids and ids whose probe runs wrap past the old table's end
    /// all happen mid-growth here, checked against a dictionary after every change of a growth.
    @Test func findsUpdatesAndRemovesRecordsWhileTheTableGrows() {
        var index = RecordIndex()
        var model: [String: Int] = [:]
        var random = FixedSequence(seed: 0x9E37_79B9_7F4A_7C15)
        func next(_ bound: Int) -> Int { random.next(bound) }
        var growths = 0
        var wasGrowing = false
        var checkedWhileGrowing = 0
        for step in 0..<40_000 {
            let id = "r-\(next(12_000))"
            switch next(8) {
            case 0, 1:
                #expect(index.remove("c", id) == (model.removeValue(forKey: id) != nil))
            default:
                index.upsert("c", id, location(step))
                model[id] = step
            }
            #expect((index.find("c", id) != nil) == (model[id] != nil))
            if index.isGrowing {
                if !wasGrowing { growths += 1 }
                checkedWhileGrowing += 1
                // Every live record, and a few absent ids, after this change of the growth.
                let lost = model.filter { index.find("c", $0.key).map { index[$0].location } != location($0.value) }
                #expect(lost.isEmpty, "step \(step): \(lost.count) records not found as written")
                #expect((12_000..<12_010).allSatisfy { index.find("c", "r-\($0)") == nil })
            }
            wasGrowing = index.isGrowing
        }
        #expect(growths >= 7)  // 64 slots to 16,384 for about 9,000 live records
        #expect(checkedWhileGrowing > 1000)
        #expect(index.count == model.count)
        for (id, at) in model { #expect(index.find("c", id).map { index[$0].location } == location(at)) }
        for number in 0..<12_000 where model["r-\(number)"] == nil { #expect(index.find("c", "r-\(number)") == nil) }
        // A copy taken mid-growth keeps what it held while the original finishes growing.
        while !index.isGrowing { index.upsert("c", "fill-\(index.count)", location(0)) }
        let copy = index
        for id in Array(model.keys.prefix(500)) { index.remove("c", id) }
        #expect(copy.count == index.count + 500)
        for (id, at) in model { #expect(copy.find("c", id).map { copy[$0].location } == location(at)) }
    }

    /// A checkpoint takes the index by value while the store goes on changing it: the copy shares the index's
    /// chunks (entries, hash slots, id bytes) and must keep reading exactly what it held. Ids of 200 bytes fill
    /// several 64 KiB id chunks; the changes after the copy update entries it shares, grow the hash table, merge
    /// the order and rewrite the id arena.
    @Test func aCopyKeepsItsRecordsWhileTheOriginalChanges() throws {
        func id(_ number: Int) -> String { "card-\(number)-" + String(repeating: "x", count: 200) }
        var index = RecordIndex()
        for number in 0..<3000 { index.upsert("c", id(number), location(number)) }
        let copy = index
        let bytesBefore = IndexCheckpoint.encode(copy, position: .init(segment: 1, offset: 16))
        for number in 0..<2500 { index.remove("c", id(number)) }
        for number in 3000..<9000 { index.upsert("c", id(number), location(number)) }
        for number in 2500..<3000 { index.upsert("c", id(number), location(number + 100_000)) }

        #expect(copy.count == 3000)
        var copyMismatches = 0
        for number in 0..<3000 where copy.find("c", id(number)).map({ copy[$0].location }) != location(number) {
            copyMismatches += 1
        }
        #expect(copyMismatches == 0)
        #expect(copy.find("c", id(5000)) == nil)
        #expect(
            copy.scan("c", prefix: "", after: nil, limit: .max).map { copy.id(of: $0) } == (0..<3000).map(id).sorted())
        #expect(IndexCheckpoint.encode(copy, position: .init(segment: 1, offset: 16)) == bytesBefore)

        #expect(index.count == 6500)
        var mismatches = 0
        for number in 0..<9000 {
            let expected = number < 2500 ? nil : location(number < 3000 ? number + 100_000 : number)
            if index.find("c", id(number)).map({ index[$0].location }) != expected { mismatches += 1 }
        }
        #expect(mismatches == 0)
        #expect(
            index.scan("c", prefix: "", after: nil, limit: .max).map { index.id(of: $0) }
                == (2500..<9000).map(id).sorted())
        let (loaded, _) = try #require(
            IndexCheckpoint.decode(IndexCheckpoint.encode(index, position: .init(segment: 2, offset: 0))))
        #expect(loaded.count == 6500)
        #expect(loaded.find("c", id(8999)).map { loaded[$0].location } == location(8999))
    }

    @Test func aCheckpointRoundTripRebuildsTheSameIndex() throws {
        var index = RecordIndex()
        for value in 0..<2000 { index.upsert(value % 3 == 0 ? "users" : "cards", "k\(value)", location(value)) }
        for value in stride(from: 0, to: 2000, by: 7) { index.remove(value % 3 == 0 ? "users" : "cards", "k\(value)") }
        let bytes = IndexCheckpoint.encode(index, position: .init(segment: 3, offset: 99))
        let (loaded, position) = try #require(IndexCheckpoint.decode(bytes))
        #expect(position == .init(segment: 3, offset: 99))
        #expect(loaded.count == index.count)
        for collection in ["users", "cards"] {
            let expected = index.scan(collection, prefix: "", after: nil, limit: .max).map { index.id(of: $0) }
            #expect(loaded.scan(collection, prefix: "", after: nil, limit: .max).map { loaded.id(of: $0) } == expected)
        }
        #expect(loaded.find("cards", "k1").map { loaded[$0].location } == location(1))
        #expect(loaded.keyVersionCounts == index.keyVersionCounts)
        var damaged = bytes
        damaged[40] ^= 1
        #expect(IndexCheckpoint.decode(damaged) == nil)
        #expect(IndexCheckpoint.decode(Array(bytes.dropLast())) == nil)
    }

    /// The store streams a checkpoint in pieces (its CRC carried from one to the next): any piece size gives the
    /// same bytes, every piece but the last is at least the size asked for, and ids up to 255 bytes cross piece
    /// boundaries whole.
    @Test func aCheckpointWrittenInPiecesIsTheSameCheckpoint() throws {
        var index = RecordIndex()
        for value in 0..<3000 {
            let id = String(repeating: "x", count: value % 256) + "-\(value)"
            index.upsert(["cards", "users", "pending"][value % 3], String(id.suffix(255)), location(value))
        }
        let encoder = IndexCheckpoint.Encoder(index, position: .init(segment: 4, offset: 77))
        var whole: [UInt8] = []
        encoder.write(chunkBytes: 1 << 30) { whole.append(contentsOf: $0) }
        #expect(whole.count == encoder.size)
        #expect(encoder.size > 100_000)
        for chunkBytes in [0, 4096, 5000, 65536] {
            var pieces: [[UInt8]] = []
            encoder.write(chunkBytes: chunkBytes) { pieces.append(Array($0)) }
            #expect(pieces.count > 1)
            let least = max(chunkBytes, 4096)
            #expect(pieces.dropLast().allSatisfy { $0.count >= least && $0.count < least + 512 })
            #expect(Array(pieces.joined()) == whole)
        }
        let (loaded, position) = try #require(IndexCheckpoint.decode(whole))
        #expect(position == .init(segment: 4, offset: 77))
        #expect(loaded.count == 3000)
        #expect(loaded.find("users", "x-1").map { loaded[$0].location } == location(1))
    }

    /// The index builds its order while it reads a checkpoint, so a checkpoint (CRC intact) whose ids are not in
    /// ascending order, or that lists an id or a collection twice, is refused rather than loaded out of order.
    @Test func aCheckpointOutOfOrderIsRefused() throws {
        var index = RecordIndex()
        index.upsert("cards", "k1", location(1))
        index.upsert("cards", "k2", location(2))
        let bytes = IndexCheckpoint.encode(index, position: .init(segment: 1, offset: 16))
        #expect(IndexCheckpoint.decode(bytes) != nil)
        let body = Array(bytes.dropLast(4))
        let second = try #require(body.firstRange(of: Array("k2".utf8))).lowerBound
        for replacement in ["k0", "k1"] {
            var bad = body
            bad.replaceSubrange(second..<second + 2, with: Array(replacement.utf8))
            #expect(IndexCheckpoint.decode(withCRC(bad)) == nil)
        }
        // The same collection twice: one record in each part (the total count stays right).
        var twice = RecordIndex()
        twice.upsert("cards", "k9", location(9))
        twice.upsert("users", "u1", location(3))
        var doubled = Array(IndexCheckpoint.encode(twice, position: .init(segment: 1, offset: 16)).dropLast(4))
        let users = try #require(doubled.firstRange(of: Array("users".utf8))).lowerBound
        doubled.replaceSubrange(users..<users + 5, with: Array("cards".utf8))
        #expect(IndexCheckpoint.decode(withCRC(doubled)) == nil)
    }

    /// Found by fuzz-index-checkpoint: a checkpoint (CRC intact) whose collection name or id was not UTF-8
    /// decoded with replacement characters, up to three times longer, and writing the index back then trapped
    /// on the name's one-byte length. Such a checkpoint is refused (recovery replays the log instead).
    @Test func aCheckpointWithNamesThatAreNotUTF8IsRefused() throws {
        var index = RecordIndex()
        index.upsert("cards", "k1", location(1))
        let bytes = IndexCheckpoint.encode(index, position: .init(segment: 1, offset: 16))
        #expect(IndexCheckpoint.decode(bytes) != nil)
        let body = Array(bytes.dropLast(4))
        for name in [Array("cards".utf8), Array("k1".utf8)] {
            let start = try #require(body.firstRange(of: name)).lowerBound
            var bad = body
            bad.replaceSubrange(start..<start + name.count, with: [0xFF] + name.dropFirst())
            #expect(IndexCheckpoint.decode(withCRC(bad)) == nil)
        }
        // The largest name that decodes still writes back.
        var long = RecordIndex()
        long.upsert("cards", String(repeating: "é", count: 127), location(2))
        let again = try #require(
            IndexCheckpoint.decode(IndexCheckpoint.encode(long, position: .init(segment: 1, offset: 16))))
        #expect(IndexCheckpoint.encode(again.0, position: again.1).count > 0)
    }

    @Test func crc32cMatchesThePublishedCheckValue() {
        // RFC 3720 B.4 / the CRC catalogue: CRC-32C("123456789") = 0xE3069283.
        #expect(CRC32C.checksum(Array("123456789".utf8)) == 0xE306_9283)
        #expect(CRC32C.checksum([UInt8](repeating: 0, count: 32)) == 0x8A91_36AA)
        for bytes in [Array("123456789".utf8), [UInt8](repeating: 0, count: 32)] {
            #expect(bytes.withUnsafeBytes { CRC32C.checksumByTables($0) } == CRC32C.checksum(bytes))
        }
    }

    @Test func crc32cByInstructionAndByTablesAgreeOnEveryLengthAndSeed() {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<300).map { _ in UInt8.random(in: 0...255, using: &generator) }
        bytes.withUnsafeBytes { raw in
            for length in 0...raw.count {
                for offset in [0, 1, 3] where offset <= length {
                    let slice = UnsafeRawBufferPointer(rebasing: raw[offset..<length])
                    let seed = UInt32(truncatingIfNeeded: length &* 2_654_435_761)
                    #expect(CRC32C.checksum(slice, seed: seed) == CRC32C.checksumByTables(slice, seed: seed))
                }
            }
        }
        // A checksum continued over two halves equals the checksum of the whole.
        bytes.withUnsafeBytes { raw in
            let first = CRC32C.checksum(UnsafeRawBufferPointer(rebasing: raw[0..<137]))
            #expect(CRC32C.checksum(UnsafeRawBufferPointer(rebasing: raw[137...]), seed: first) == CRC32C.checksum(raw))
        }
    }
}

/// xorshift64*: numbers in a fixed sequence, so that a failure repeats.
private struct FixedSequence {
    var state: UInt64

    init(seed: UInt64) { state = seed }

    /// The next number below `bound`.
    mutating func next(_ bound: Int) -> Int {
        state ^= state >> 12
        state ^= state << 25
        state ^= state >> 27
        return Int((state &* 0x2545_F491_4F6C_DD1D) >> 33) % bound
    }
}
