import Foundation

/// Where a record's current frame lives, and the versions bound into it.
struct RecordLocation: Equatable, Sendable {
    var segment: UInt32
    var offset: UInt32
    var length: UInt32
    var keyVersion: UInt32
    var version: UInt64
}

/// The in-memory index of the encrypted store: (collection, id) → location, with ids kept in
/// order per collection for scans.
///
/// Built for a small footprint (about 80–110 bytes per record): ids live in one byte arena,
/// entries are 32-byte structs in one array, the hash table is an open-addressing array of
/// 64-bit slots (the low 32 bits of the record's hash beside its entry number, so that a probe
/// rarely touches an entry that is not the one sought, and the table grows without rehashing
/// ids; it grows in steps, see ``Growth``), and each collection's order is a list of sorted leaves of entry numbers
/// (a one-level B-tree: an insert or removal moves at most one leaf's numbers, never the whole order). Each entry
/// number in a leaf, and each leaf's first, has 8 bytes of its id beside it (``Leaf``), so that finding a key's place
/// compares integers and reads ids from the arena only on a tie: in a large index each id read is two cache misses.
///
/// The arena, the entries and the table are kept in chunks (``KeyArena``, ``ChunkedArray``), so that a copy of the
/// index (a checkpoint's snapshot) costs the change after it one chunk at a time, never a whole array.
struct RecordIndex {
    struct Entry {
        var location: RecordLocation
        var keyStart: UInt32
        var collection: UInt16
        var keyLength: UInt8
        var flags: UInt8
    }

    /// A doubling of the hash table, done a few slots per change rather than all at once under the store's lock
    /// (at 1.5 million records, placing every slot again took tens of milliseconds, a stall for every request
    /// waiting on the lock).
    ///
    /// New slots go to the larger table only. The old table's slots before `next` have been placed in the new
    /// one; those from `next` on still belong to the old table, which nothing else writes, except that a removal
    /// of one of its records leaves ``RecordIndex/moved`` in its slot (a shift backwards could carry a slot
    /// behind `next`). A lookup probes the new table, then the old one, where it passes over slots before `next`
    /// and marks, but stops at an empty slot, since the old table's probe runs are as they were.
    struct Growth {
        var old: ChunkedArray<UInt64>
        var next = 0
    }

    /// A removed record's slot in a table being emptied (``Growth``): no entry number + 1 is `UInt32.max`.
    static let moved = UInt64(UInt32.max)
    /// Old slots placed in the new table per insert or removal while the table grows. A growth takes (old slots /
    /// step) changes, and the next doubling comes after 0.7 × old slots inserts, so any step of 2 or more ends a
    /// growth before the next one is due; a larger step keeps the growth short.
    static let growthStep = 16

    /// Whether the hash table is between sizes (for tests).
    var isGrowing: Bool { growth != nil }

    /// Entry flags.
    static let live: UInt8 = 1
    static let corrupted: UInt8 = 2

    /// A collection's entry numbers in id order, in leaves of at most ``leafCapacity`` (a full leaf is split in
    /// halves; none is empty).
    struct Order {
        var leaves: [Leaf] = []
        /// Each leaf's first id abbreviated from `shared` on (``RecordIndex/abbreviation(_:from:)``), for the search
        /// of a key's leaf.
        var firsts: [UInt64] = []
        /// A number of leading bytes that the leaves' first ids have in common.
        var shared = 0
        /// Live entries in the leaves.
        var count = 0
    }

    /// A run of a collection's entry numbers in id order, with 8 bytes of each id beside it, so that a search in the
    /// leaf compares integers and reads an id (an entry and its bytes: two cache misses in a large index) only when
    /// those 8 bytes tie.
    struct Leaf {
        /// Entry numbers in id order.
        var entries: [UInt32]
        /// For each entry, its id's 8 bytes from `shared` on (``RecordIndex/abbreviation(_:from:)``). Ids that have
        /// their first `shared` bytes in common are ordered as these are, or tie.
        var abbreviations: [UInt64]
        /// A number of leading bytes that every id of the leaf has in common (at most the shortest id's length).
        var shared: Int
    }

    static let leafCapacity = 1024

    private(set) var collectionNames: [String] = []
    private var collectionCodes: [String: UInt16] = [:]
    private var keys = KeyArena()
    private var deadKeyBytes = 0
    private(set) var entries = ChunkedArray<Entry>()
    private var freeEntries: [UInt32] = []
    /// `hash low 32 bits << 32 | entry number + 1`; 0 is empty.
    private var slots = ChunkedArray<UInt64>(repeating: 0, count: 64)
    /// The table being emptied into `slots` while it grows, or nil.
    private var growth: Growth?
    /// Zeroed chunks of the next, doubled table, allocated one per insert as the table fills towards its limit, so
    /// that a doubling does not allocate (and fault in) the whole table at once: 32 MB, 13 ms, at 2^22 slots.
    private var nextTableChunks: [ContiguousArray<UInt64>] = []
    private var orders: [Order] = []
    /// Live records.
    private(set) var count = 0
    /// Live records per data key version.
    private(set) var keyVersionCounts: [UInt32: Int] = [:]
    /// Bytes of live frames per segment.
    private(set) var liveBytes: [UInt32: Int] = [:]
    /// Live records flagged as failing their checks at recovery.
    private(set) var corruptedCount = 0

    init() {}

    // MARK: Lookup

    /// The entry number of a live record, or nil.
    func find(_ collection: String, _ id: String) -> Int? {
        guard let code = collectionCodes[collection] else { return nil }
        return withBytes(id) { find(code: code, key: $0) }
    }

    func find(code: UInt16, key: UnsafeRawBufferPointer) -> Int? {
        let tag = UInt32(truncatingIfNeeded: Self.hash(code: code, key: key))
        if let index = probe(slots, from: 0, tag: tag, code: code, key: key) { return index }
        guard let growth else { return nil }
        return probe(growth.old, from: growth.next, tag: tag, code: code, key: key)
    }

    /// The entry number of (`code`, `key`) in `table`, passing over slots before `first` (and marks).
    private func probe(
        _ table: ChunkedArray<UInt64>, from first: Int, tag: UInt32, code: UInt16, key: UnsafeRawBufferPointer
    ) -> Int? {
        let mask = table.count - 1
        var slot = Int(tag) & mask
        while true {
            let value = table[slot]
            if value == 0 { return nil }
            if UInt32(truncatingIfNeeded: value >> 32) == tag, value != Self.moved, slot >= first {
                let index = Int(UInt32(truncatingIfNeeded: value)) - 1
                if entryMatches(index, code: code, key: key) { return index }
            }
            slot = (slot + 1) & mask
        }
    }

    subscript(entry: Int) -> Entry { entries[entry] }

    /// Live records of `collection`.
    func count(of collection: String) -> Int {
        collectionCodes[collection].map { orders[Int($0)].count } ?? 0
    }

    func collectionName(of entry: Int) -> String { collectionNames[Int(entries[entry].collection)] }

    func id(of entry: Int) -> String {
        String(decoding: keyOf(UInt32(entry)), as: UTF8.self)
    }

    // MARK: Changes

    /// Inserts or updates a record's location.
    mutating func upsert(_ collection: String, _ id: String, _ location: RecordLocation, corrupted: Bool = false) {
        let code = collectionCode(collection)
        withBytes(id) { key in
            if let index = find(code: code, key: key) {
                account(entries[index], sign: -1)
                entries[index].location = location
                entries[index].flags = (entries[index].flags & ~Self.corrupted) | (corrupted ? Self.corrupted : 0)
                account(entries[index], sign: 1)
                return
            }
            insertNew(code: code, key: key, location: location, corrupted: corrupted)
        }
    }

    /// Changes the location of an existing record only (relocations by compaction and rewrap).
    mutating func relocate(entry index: Int, to location: RecordLocation) {
        account(entries[index], sign: -1)
        entries[index].location = location
        account(entries[index], sign: 1)
    }

    /// Removes a record; returns false if there was none.
    @discardableResult
    mutating func remove(_ collection: String, _ id: String) -> Bool {
        guard let code = collectionCodes[collection] else { return false }
        return withBytes(id) { key in
            guard let index = find(code: code, key: key) else { return false }
            removeEntry(index, key: key)
            return true
        }
    }

    private mutating func insertNew(
        code: UInt16, key: UnsafeRawBufferPointer, location: RecordLocation, corrupted: Bool
    ) {
        if (count + 1) * 10 > slots.count * 7 {
            grow()
        } else if growth != nil {
            continueGrowth()
        } else if (count + 1) * 100 > slots.count * 68 {
            prepareNextTable()
        }
        let keyStart = keys.append(key)
        let entry = Entry(
            location: location, keyStart: keyStart, collection: code, keyLength: UInt8(key.count),
            flags: Self.live | (corrupted ? Self.corrupted : 0))
        let index: Int
        if let free = freeEntries.popLast() {
            index = Int(free)
            entries[index] = entry
        } else {
            index = entries.count
            entries.append(entry)
        }
        count += 1
        account(entry, sign: 1)
        placeInTable(index, hash: Self.hash(code: code, key: key))
        insertInOrder(index, code: code, key: key)
    }

    private mutating func removeEntry(_ index: Int, key: UnsafeRawBufferPointer) {
        let entry = entries[index]
        account(entry, sign: -1)
        count -= 1
        removeFromTable(index, code: entry.collection, key: key)
        if growth != nil { continueGrowth() }
        removeFromOrder(index, code: Int(entry.collection), key: key)
        free(index)
    }

    private mutating func free(_ index: Int) {
        deadKeyBytes += Int(entries[index].keyLength)
        entries[index].flags = 0
        freeEntries.append(UInt32(index))
        if deadKeyBytes > 65536 && deadKeyBytes * 2 > keys.byteCount { compactArena() }
    }

    private mutating func account(_ entry: Entry, sign: Int) {
        keyVersionCounts[entry.location.keyVersion, default: 0] += sign
        if keyVersionCounts[entry.location.keyVersion] == 0 { keyVersionCounts[entry.location.keyVersion] = nil }
        liveBytes[entry.location.segment, default: 0] += sign * Int(entry.location.length)
        if entry.flags & Self.corrupted != 0 { corruptedCount += sign }
    }

    private mutating func collectionCode(_ name: String) -> UInt16 {
        if let code = collectionCodes[name] { return code }
        precondition(collectionNames.count < Int(UInt16.max), "too many collections")
        let code = UInt16(collectionNames.count)
        collectionNames.append(name)
        collectionCodes[name] = code
        orders.append(Order())
        return code
    }

    // MARK: Hash table

    static func hash(code: UInt16, key: UnsafeRawBufferPointer) -> UInt64 {
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325 ^ UInt64(code)
        for byte in key {
            hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01B3
        }
        // Final mix so that the low bits used for the slot depend on every byte.
        hash ^= hash >> 29
        hash = hash &* 0xBF58_476D_1CE4_E5B9
        hash ^= hash >> 32
        return hash
    }

    private func entryMatches(_ index: Int, code: UInt16, key: UnsafeRawBufferPointer) -> Bool {
        let entry = entries[index]
        guard entry.collection == code, Int(entry.keyLength) == key.count else { return false }
        return key.count == 0
            || memcmp(keys.bytes(at: entry.keyStart, count: key.count).baseAddress!, key.baseAddress!, key.count) == 0
    }

    private mutating func placeInTable(_ index: Int, hash: UInt64) {
        place(UInt64(UInt32(truncatingIfNeeded: hash)) << 32 | UInt64(index + 1))
    }

    /// Puts a slot value in the first free slot from its home (its hash's low bits).
    private mutating func place(_ value: UInt64) {
        let mask = slots.count - 1
        var slot = Int(truncatingIfNeeded: value >> 32) & mask
        while slots[slot] != 0 { slot = (slot + 1) & mask }
        slots[slot] = value
    }

    private mutating func removeFromTable(_ index: Int, code: UInt16, key: UnsafeRawBufferPointer) {
        let value = UInt64(UInt32(truncatingIfNeeded: Self.hash(code: code, key: key))) << 32 | UInt64(index + 1)
        if let slot = Self.slot(holding: value, in: slots, from: 0) {
            removeSlot(slot)
        } else if let slot = growth.flatMap({ Self.slot(holding: value, in: $0.old, from: $0.next) }) {
            growth!.old[slot] = Self.moved
        } else {
            preconditionFailure("index hash table lost an entry")
        }
    }

    /// The slot of `table` that holds `value`, passing over slots before `first`.
    private static func slot(holding value: UInt64, in table: ChunkedArray<UInt64>, from first: Int) -> Int? {
        let mask = table.count - 1
        var slot = Int(truncatingIfNeeded: value >> 32) & mask
        while table[slot] != 0 {
            if table[slot] == value && slot >= first { return slot }
            slot = (slot + 1) & mask
        }
        return nil
    }

    /// Empties a slot of `slots`, moving later members of its probe run back into the hole (backward-shift
    /// deletion), so that no probe run has a gap.
    private mutating func removeSlot(_ slot: Int) {
        let mask = slots.count - 1
        var hole = slot
        slots[hole] = 0
        var next = (hole + 1) & mask
        while slots[next] != 0 {
            let home = Int(truncatingIfNeeded: slots[next] >> 32) & mask
            let between = hole <= next ? (home <= hole || home > next) : (home <= hole && home > next)
            if between {
                slots[hole] = slots[next]
                slots[next] = 0
                hole = next
            }
            next = (next + 1) & mask
        }
    }

    private func entryHash(_ index: Int) -> UInt64 {
        Self.hash(code: entries[index].collection, key: keyOf(UInt32(index)))
    }

    /// Allocates one more chunk of the next table. From a load of 0.68 to the doubling at 0.7 there are
    /// `slots.count / 50` inserts, and the next table has `slots.count / 1024` chunks. Small tables are allocated
    /// whole when they double.
    private mutating func prepareNextTable() {
        let size = ChunkedArray<UInt64>.chunkSize
        guard slots.count >= size, nextTableChunks.count < slots.count * 2 / size else { return }
        nextTableChunks.append(ContiguousArray(repeating: 0, count: size))
    }

    /// Starts a doubling of the table (finishing one still under way first). Its slots move to the new table
    /// by the hash bits they hold, ``growthStep`` per later change (``Growth``).
    private mutating func grow() {
        finishGrowth()
        var capacity = slots.count
        while (count + 1) * 10 > capacity * 7 { capacity *= 2 }
        growth = Growth(old: slots)
        let size = ChunkedArray<UInt64>.chunkSize
        if capacity >= size {
            var chunks = nextTableChunks.prefix(capacity / size)
            while chunks.count < capacity / size { chunks.append(ContiguousArray(repeating: 0, count: size)) }
            slots = ChunkedArray(fullChunks: Array(chunks))
        } else {
            slots = ChunkedArray(repeating: 0, count: capacity)
        }
        nextTableChunks = []
        continueGrowth()
    }

    /// Places the next ``growthStep`` slots of the old table in the new one; drops the old table when done.
    private mutating func continueGrowth(by step: Int = growthStep) {
        guard var current = growth else { return }
        let end = min(current.next + step, current.old.count)
        for slot in current.next..<end {
            let value = current.old[slot]
            if value != 0 && value != Self.moved { place(value) }
        }
        current.next = end
        growth = end < current.old.count ? current : nil
    }

    private mutating func finishGrowth() {
        if let growth { continueGrowth(by: growth.old.count) }
    }

    private mutating func rebuildTable(capacity: Int) {
        growth = nil
        nextTableChunks = []
        slots = ChunkedArray(repeating: 0, count: capacity)
        for index in entries.indices where entries[index].flags & Self.live != 0 {
            placeInTable(index, hash: entryHash(index))
        }
    }

    // MARK: Order

    /// Compares an entry's id with `key` (bytewise, shorter first on a tie).
    private func compare(_ index: UInt32, _ key: UnsafeRawBufferPointer) -> Int {
        let entry = entries[Int(index)]
        let length = Int(entry.keyLength)
        let common = min(length, key.count)
        if common > 0 {
            let result = memcmp(keys.bytes(at: entry.keyStart, count: common).baseAddress!, key.baseAddress!, common)
            if result != 0 { return Int(result) }
        }
        return length - key.count
    }

    private func keyOf(_ index: UInt32) -> UnsafeRawBufferPointer {
        let entry = entries[Int(index)]
        return keys.bytes(at: entry.keyStart, count: Int(entry.keyLength))
    }

    /// `key`'s 8 bytes from `offset` on as one integer, the first the most significant, zeros past its end: of two
    /// keys with the bytes before `offset` in common, the smaller never has the larger abbreviation.
    static func abbreviation(_ key: UnsafeRawBufferPointer, from offset: Int) -> UInt64 {
        if key.count >= offset + 8 {
            return UInt64(bigEndian: key.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
        }
        var value: UInt64 = 0
        for position in offset..<offset + 8 {
            value = value << 8 | (position < key.count ? UInt64(key[position]) : 0)
        }
        return value
    }

    /// How many leading bytes `a` and `b` have in common.
    static func commonPrefix(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Int {
        let limit = min(a.count, b.count)
        var common = 0
        while common + 8 <= limit
            && a.loadUnaligned(fromByteOffset: common, as: UInt64.self)
                == b.loadUnaligned(fromByteOffset: common, as: UInt64.self)
        {
            common += 8
        }
        while common < limit && a[common] == b[common] { common += 1 }
        return common
    }

    /// A leaf of `entries`, its abbreviations taken after the bytes its first and last ids have in common.
    private func leaf(_ entries: [UInt32]) -> Leaf {
        let shared = Self.commonPrefix(keyOf(entries[0]), keyOf(entries[entries.count - 1]))
        let abbreviations = entries.map { Self.abbreviation(keyOf($0), from: shared) }
        return Leaf(entries: entries, abbreviations: abbreviations, shared: shared)
    }

    /// The first of `count` positions whose id is not less than `key` (greater than `key` when `past`), in a run of
    /// ids in order whose first `shared` bytes are the same: `entry(i)` is the entry number at position i and
    /// `abbreviations[i]` its id's abbreviation from `shared` on.
    private func search(
        _ key: UnsafeRawBufferPointer, count: Int, shared: Int, abbreviations: [UInt64], past: Bool,
        entry: (Int) -> UInt32
    ) -> Int {
        let first = keyOf(entry(0))
        let common = Self.commonPrefix(first, key)
        if common < shared {
            // `key` parts from every id of the run where it parts from the first: it sorts before them all or after.
            return common < key.count && key[common] > first[common] ? count : 0
        }
        let target = Self.abbreviation(key, from: shared)
        var low = 0
        var high = count
        while low < high {
            let middle = (low + high) / 2
            let abbreviation = abbreviations[middle]
            let before: Bool
            if abbreviation != target {
                before = abbreviation < target
            } else {
                let order = compare(entry(middle), key)
                before = past ? order <= 0 : order < 0
            }
            if before { low = middle + 1 } else { high = middle }
        }
        return low
    }

    /// The first position in `leaf` whose id is not less than `key` (greater than `key` when `past`).
    private func position(of key: UnsafeRawBufferPointer, in leaf: Leaf, past: Bool) -> Int {
        search(
            key, count: leaf.entries.count, shared: leaf.shared, abbreviations: leaf.abbreviations, past: past
        ) { leaf.entries[$0] }
    }

    /// The leaf of `order` where `key` belongs: the last whose first id is not greater than `key` (the first leaf
    /// when none is). The order has a leaf.
    private func leafIndex(for key: UnsafeRawBufferPointer, in order: Order) -> Int {
        let after = search(
            key, count: order.leaves.count, shared: order.shared, abbreviations: order.firsts, past: true
        ) { order.leaves[$0].entries[0] }
        return max(after - 1, 0)
    }

    /// Takes the abbreviations of the leaves' first ids again, after what the first and the last have in common.
    private mutating func abbreviateFirsts(code: Int) {
        let leaves = orders[code].leaves
        guard let first = leaves.first?.entries[0], let last = leaves.last?.entries[0] else {
            orders[code].firsts = []
            return
        }
        let shared = Self.commonPrefix(keyOf(first), keyOf(last))
        orders[code].shared = shared
        orders[code].firsts = leaves.map { Self.abbreviation(keyOf($0.entries[0]), from: shared) }
    }

    /// Records that the first id of leaf `at` is new (the leaf is new, or its first entry changed).
    private mutating func firstChanged(code: Int, at: Int) {
        let leaves = orders[code].leaves
        let key = keyOf(leaves[at].entries[0])
        let other = leaves[at == 0 ? leaves.count - 1 : 0].entries[0]
        if leaves.count > 1 && Self.commonPrefix(key, keyOf(other)) >= orders[code].shared {
            let abbreviation = Self.abbreviation(key, from: orders[code].shared)
            if orders[code].firsts.count < leaves.count {
                orders[code].firsts.insert(abbreviation, at: at)
            } else {
                orders[code].firsts[at] = abbreviation
            }
        } else {
            abbreviateFirsts(code: code)
        }
    }

    private mutating func insertInOrder(_ index: Int, code: UInt16, key: UnsafeRawBufferPointer) {
        let code = Int(code)
        orders[code].count += 1
        guard !orders[code].leaves.isEmpty else {
            orders[code].leaves = [leaf([UInt32(index)])]
            abbreviateFirsts(code: code)
            return
        }
        let at = leafIndex(for: key, in: orders[code])
        let position = self.position(of: key, in: orders[code].leaves[at], past: true)
        let shared = orders[code].leaves[at].shared
        let sharesPrefix = Self.commonPrefix(keyOf(orders[code].leaves[at].entries[0]), key) >= shared
        orders[code].leaves[at].entries.insert(UInt32(index), at: position)
        if sharesPrefix {
            orders[code].leaves[at].abbreviations.insert(Self.abbreviation(key, from: shared), at: position)
        } else {
            // A new first or last id with fewer bytes in common with the others: the abbreviations are taken again.
            orders[code].leaves[at] = leaf(orders[code].leaves[at].entries)
        }
        if position == 0 { firstChanged(code: code, at: at) }
        if orders[code].leaves[at].entries.count > Self.leafCapacity {
            let full = orders[code].leaves[at]
            let half = full.entries.count / 2
            orders[code].leaves[at] = narrowed(full, half: ..<half)
            orders[code].leaves.insert(narrowed(full, half: half...), at: at + 1)
            firstChanged(code: code, at: at + 1)
        }
    }

    /// A half of a full leaf. Its ids may have more bytes in common than the whole leaf's: its abbreviations are
    /// taken again after them when that frees 4 bytes or more of each (reading every id of the half), and are
    /// the whole leaf's otherwise.
    private func narrowed(_ full: Leaf, half: some RangeExpression<Int>) -> Leaf {
        let part = Leaf(
            entries: Array(full.entries[half]), abbreviations: Array(full.abbreviations[half]), shared: full.shared)
        let shared = Self.commonPrefix(keyOf(part.entries[0]), keyOf(part.entries[part.entries.count - 1]))
        return shared >= full.shared + 4 ? leaf(part.entries) : part
    }

    private mutating func removeFromOrder(_ index: Int, code: Int, key: UnsafeRawBufferPointer) {
        precondition(!orders[code].leaves.isEmpty, "index order lost an entry")
        let at = leafIndex(for: key, in: orders[code])
        let position = self.position(of: key, in: orders[code].leaves[at], past: false)
        precondition(
            position < orders[code].leaves[at].entries.count
                && orders[code].leaves[at].entries[position] == UInt32(index),
            "index order lost an entry")
        orders[code].leaves[at].entries.remove(at: position)
        orders[code].leaves[at].abbreviations.remove(at: position)
        orders[code].count -= 1
        let count = orders[code].leaves[at].entries.count
        if count == 0 {
            orders[code].leaves.remove(at: at)
            orders[code].firsts.remove(at: at)
            return
        }
        if count < Self.leafCapacity / 4, at + 1 < orders[code].leaves.count,
            count + orders[code].leaves[at + 1].entries.count <= Self.leafCapacity / 2
        {
            // A thinned leaf joins its next one, so that deletions do not leave a long list of tiny leaves.
            let next = orders[code].leaves.remove(at: at + 1)
            orders[code].firsts.remove(at: at + 1)
            orders[code].leaves[at] = leaf(orders[code].leaves[at].entries + next.entries)
        }
        if position == 0 { firstChanged(code: code, at: at) }
    }

    /// Rewrites the id arena without the ids of freed entries.
    private mutating func compactArena() {
        var arena = KeyArena()
        arena.reserveCapacity(keys.byteCount - deadKeyBytes)
        for index in entries.indices where entries[index].flags & Self.live != 0 {
            entries[index].keyStart = arena.append(keyOf(UInt32(index)))
        }
        keys = arena
        deadKeyBytes = 0
    }

    // MARK: Scans

    /// Live entries of `collection` whose id starts with `prefix`, ascending, after `after`.
    func scan(_ collection: String, prefix: String, after: String?, limit: Int) -> [Int] {
        guard limit > 0, let code = collectionCodes[collection] else { return [] }
        let order = orders[Int(code)]
        let leaves = order.leaves
        guard !leaves.isEmpty else { return [] }
        return withBytes(prefix) { prefixKey in
            withOptionalBytes(after) { afterKey in
                // The first place not before `key` (after it when `past`), as (leaf, position in it).
                func place(_ key: UnsafeRawBufferPointer, past: Bool) -> (Int, Int) {
                    let leaf = leafIndex(for: key, in: order)
                    let position = self.position(of: key, in: leaves[leaf], past: past)
                    return position < leaves[leaf].entries.count ? (leaf, position) : (leaf + 1, 0)
                }
                func hasPrefix(_ index: UInt32) -> Bool {
                    let key = keyOf(index)
                    return key.count >= prefixKey.count
                        && (prefixKey.count == 0
                            || memcmp(key.baseAddress!, prefixKey.baseAddress!, prefixKey.count) == 0)
                }
                var (leaf, position) = place(prefixKey, past: false)
                if let afterKey {
                    let past = place(afterKey, past: true)
                    if past > (leaf, position) { (leaf, position) = past }
                }
                var result: [Int] = []
                while result.count < limit && leaf < leaves.count {
                    let next = leaves[leaf].entries[position]
                    guard hasPrefix(next) else { break }
                    if entries[Int(next)].flags & Self.live != 0 { result.append(Int(next)) }
                    position += 1
                    if position == leaves[leaf].entries.count { (leaf, position) = (leaf + 1, 0) }
                }
                return result
            }
        }
    }

    /// Every live entry of `collection` in id order.
    func orderedEntries(collection code: Int) -> [Int] {
        scan(collectionNames[code], prefix: "", after: nil, limit: Int.max)
    }

    /// Live entry numbers in `range` of the entry array (for chunked passes over everything).
    func liveEntries(in range: Range<Int>) -> [Int] {
        let upper = min(range.upperBound, entries.count)
        guard range.lowerBound < upper else { return [] }
        return (range.lowerBound..<upper).filter { entries[$0].flags & Self.live != 0 }
    }

    /// Approximate heap bytes held by the index.
    var memoryBytes: Int {
        keys.capacityBytes + entries.capacityBytes + slots.capacityBytes + (growth?.old.capacityBytes ?? 0)
            + nextTableChunks.count * ChunkedArray<UInt64>.chunkSize * 8
            + freeEntries.capacity * 4
            + orders.reduce(0) {
                $0
                    + $1.leaves.reduce($1.leaves.capacity * MemoryLayout<Leaf>.stride + $1.firsts.capacity * 8) {
                        $0 + $1.entries.capacity * 4 + $1.abbreviations.capacity * 8
                    }
            }
    }

    // MARK: Bulk load (checkpoints)

    /// Appends a record known to sort after every record of its collection loaded so far and not
    /// yet present. Call ``finishLoading()`` after the last one.
    mutating func appendSorted(code: UInt16, key: UnsafeRawBufferPointer, location: RecordLocation, flags: UInt8) {
        let keyStart = keys.append(key)
        let entry = Entry(
            location: location, keyStart: keyStart, collection: code, keyLength: UInt8(key.count),
            flags: Self.live | (flags & Self.corrupted))
        let index = entries.count
        entries.append(entry)
        count += 1
        account(entry, sign: 1)
        orders[Int(code)].count += 1
        // Leaves are loaded three quarters full, so that the first inserts after a start-up do not all split. Their
        // abbreviations start from the ids' first byte (nothing is known to be shared yet); ``finishLoading()`` takes
        // them again after what each leaf's ids have in common.
        let abbreviation = Self.abbreviation(key, from: 0)
        if let last = orders[Int(code)].leaves.indices.last,
            orders[Int(code)].leaves[last].entries.count < Self.leafCapacity * 3 / 4
        {
            orders[Int(code)].leaves[last].entries.append(UInt32(index))
            orders[Int(code)].leaves[last].abbreviations.append(abbreviation)
        } else {
            var leaf = Leaf(entries: [], abbreviations: [], shared: 0)
            leaf.entries.reserveCapacity(Self.leafCapacity + 1)
            leaf.abbreviations.reserveCapacity(Self.leafCapacity + 1)
            leaf.entries.append(UInt32(index))
            leaf.abbreviations.append(abbreviation)
            orders[Int(code)].leaves.append(leaf)
            orders[Int(code)].firsts.append(abbreviation)
            orders[Int(code)].shared = 0
        }
    }

    /// Declares a collection (in checkpoint order) before its records are appended.
    mutating func declareCollection(_ name: String) -> UInt16 { collectionCode(name) }

    /// Reserves room before a bulk load.
    mutating func reserve(records: Int, keyBytes bytes: Int) {
        entries.reserveCapacity(records)
        keys.reserveCapacity(bytes)
    }

    /// Builds the hash table and the leaves' abbreviations after a bulk load.
    mutating func finishLoading() {
        var capacity = 64
        while count * 10 > capacity * 7 { capacity *= 2 }
        rebuildTable(capacity: capacity)
        for code in orders.indices {
            for at in orders[code].leaves.indices {
                var loaded = leaf(orders[code].leaves[at].entries)
                loaded.entries.reserveCapacity(Self.leafCapacity + 1)
                loaded.abbreviations.reserveCapacity(Self.leafCapacity + 1)
                orders[code].leaves[at] = loaded
            }
            abbreviateFirsts(code: code)
        }
    }

    /// The raw id bytes of an entry.
    func withKey<Result>(of entry: Int, _ body: (UnsafeRawBufferPointer) -> Result) -> Result {
        body(keyOf(UInt32(entry)))
    }
}

/// Runs `body` over the UTF-8 bytes of `text` without copying a native string.
@inline(__always)
func withBytes<Result>(_ text: String, _ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
    var text = text
    return try text.withUTF8 { try body(UnsafeRawBufferPointer($0)) }
}

@inline(__always)
func withOptionalBytes<Result>(_ text: String?, _ body: (UnsafeRawBufferPointer?) throws -> Result) rethrows -> Result {
    guard let text else { return try body(nil) }
    return try withBytes(text) { try body($0) }
}
