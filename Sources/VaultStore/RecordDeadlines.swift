/// A deadline index: one entry per record of a kind that still has a deadline, named so that the store's id order
/// is the order of the deadlines (`<12 digits of Unix seconds>:<record id>`, value empty).
///
/// For kinds whose records mostly outlive their last deadline (card registrations: a VALIDATED one is kept for
/// good, an open one has two deadlines), the sweeper reads the due entries of the index and stops at the first
/// that is not due, instead of reading the kind whole each round
/// (``RecordLifetime/indexed(by:wholeReadEvery:deadline:)``). The domain files a record's first entry in the batch that creates it (``entry(for:at:)``); the sweeper moves the
/// entry to the record's next deadline, or drops it, when it takes the record forward.
public struct DeadlineIndex: Sendable, Equatable {
    /// The collection of the entries.
    public let collection: String

    public init(collection: String) {
        self.collection = collection
    }

    /// Seconds below 10^12 (year 33658): a deadline past that is filed at the largest.
    static let latest: Int64 = 999_999_999_999

    /// `<12 digits>:<recordId>`; a deadline before 1970 is filed at 0.
    public static func entryId(at deadline: Int64, recordId: String) -> String {
        let seconds = String(min(max(deadline, 0), latest))
        return String(repeating: "0", count: 12 - seconds.utf8.count) + seconds + ":" + recordId
    }

    /// The deadline and record id an entry id names; nil for an id not of that form.
    public static func parse(_ entryId: String) -> (deadline: Int64, recordId: String)? {
        let bytes = entryId.utf8
        guard bytes.count > 13, bytes.prefix(12).allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
            bytes[bytes.index(bytes.startIndex, offsetBy: 12)] == 0x3A, let deadline = Int64(entryId.prefix(12))
        else { return nil }
        return (deadline, String(entryId.dropFirst(13)))
    }

    /// The write that files record `recordId` at `deadline` (in the batch that creates the record: `.absent`).
    public func entry(for recordId: String, at deadline: Int64, condition: WriteCondition = .absent) -> RecordWrite {
        .put(
            collection: collection, id: Self.entryId(at: deadline, recordId: recordId), value: [], condition: condition)
    }
}

extension RecordLifetime {
    /// This lifetime, with the sweeper finding its records through `index` instead of reading the kind whole:
    /// each round it reads the entries due by then, and for each the record it names. `deadline` says when a
    /// record (as it is at the given time) next needs ``expire``: nil when never (the entry goes), a time not
    /// later than now when at once (filed at the next second, so the next round takes it). When the sweeper has
    /// taken a record forward (``expire``'s writes, or none), it files the record at its next deadline in the same
    /// batch.
    ///
    /// Records written before the index existed have no entry: the first round on a store reads the kind whole
    /// once, filing every record that has a deadline, and records the time (in `sweeper-state`). After that the
    /// kind is read whole once per `wholeReadEvery` seconds (a day), as a backstop: a record written without its
    /// entry (by an older daemon still running on a shared database) is filed, or ended, within that time.
    public func indexed(
        by index: DeadlineIndex, wholeReadEvery: Int64 = 86_400,
        deadline: @escaping @Sendable (Record, Int64) throws -> Int64?
    ) -> RecordLifetime {
        precondition(expire != nil, "an indexed kind needs an expiry")
        precondition(wholeReadEvery > 0, "the whole-read interval must be positive")
        var lifetime = self
        lifetime.deadlines = RecordLifetime.Deadlines(index: index, wholeReadEvery: wholeReadEvery, next: deadline)
        return lifetime
    }

    /// What ``indexed(by:wholeReadEvery:deadline:)`` sets.
    public struct Deadlines: Sendable {
        public var index: DeadlineIndex
        /// Seconds between two whole reads of the kind (the backstop).
        public var wholeReadEvery: Int64
        public var next: @Sendable (Record, Int64) throws -> Int64?
    }
}
