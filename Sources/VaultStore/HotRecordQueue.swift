public import VaultCore

/// Serializes the changes of one record in the daemon, in front of the store's optimistic commit: a wallet
/// credited by many pay-ins at once gets them one after another instead of failing them with conflicts.
///
/// A change takes its record's turn (``take(_:)``), reads the record, and commits; as soon as the store has
/// queued the commit (before it is durable, ``RecordStore/commit(_:whenQueued:)``) it hands the record as it
/// wrote it, with its new version, to the next change in line (``Turn/hand(_:)``), whose conditional write
/// then lands in the same or the next group commit. So the changes of one record share group commits like
/// those of different records, rather than waiting for one sync each. A change that fails before its commit is
/// queued hands nothing, and the next change gets what the change before it handed on. The optimistic check stays
/// underneath: when a change fails after handing on (a condition of its batch failed in the group commit, or the
/// commit failed), the next change's condition fails too, and it waits for that change to be done and reads the
/// record again. Changes that do not take turns (other code paths) are still safe; they only conflict more often.
///
/// Its members are inlinable, and public (this toolchain does not specialize `@inlinable package` code across
/// modules), so that the module using it (Payments, for wallets) specializes them for its record type:
/// unspecialized, each turn paid generic metadata look-ups for `Stored<Value>`, the slot and the lock.
public final class HotRecordQueue<Value: Sendable>: Sendable {
    @usableFromInline struct Slot {
        @usableFromInline var busy = false
        @usableFromInline var waiting: [UnsafeContinuation<Void, Never>] = []
        /// The record as the last change handed it on, while that change is not done.
        @usableFromInline var latest: Stored<Value>?
        /// Which change handed `latest` on.
        @usableFromInline var handedBy: UInt64 = 0
        /// Changes that handed a record on and are not done, with the changes waiting for them to settle.
        @usableFromInline var unfinished: [UInt64: [UnsafeContinuation<Void, Never>]] = [:]

        @inlinable init() {}
    }

    @usableFromInline struct State {
        @usableFromInline var slots: [String: Slot] = [:]
        @usableFromInline var serial: UInt64 = 0
        /// Turns taken per stripe of keys (a key's stripe is its hash modulo the count), for ``stamp(_:)``.
        @usableFromInline var taken = [UInt64](repeating: 0, count: HotRecordQueue.stripeCount)

        @inlinable init() {}
    }

    @inlinable static var stripeCount: Int { 4096 }

    @inlinable static func stripe(_ key: String) -> Int {
        Int(UInt(bitPattern: key.hashValue) % UInt(stripeCount))
    }

    @usableFromInline let state = Locked(State())

    @inlinable public init() {}

    /// One change's turn on a record.
    public final class Turn: Sendable {
        @usableFromInline let key: String
        @usableFromInline let serial: UInt64
        /// The record as the previous change wrote it (not durable yet), or nil: read it from the store.
        public let latest: Stored<Value>?
        /// The change that handed `latest` on (0: none).
        @usableFromInline let source: UInt64
        /// True when no change took a turn on the record (nor on a key of its stripe) between the ``stamp(_:)``
        /// given to ``take(_:since:)`` and this turn, and this one did not wait: a copy of the record read from
        /// the store after that stamp is then as current as a read in this turn.
        public let untouchedSinceStamp: Bool
        @usableFromInline let queue: HotRecordQueue
        @usableFromInline let released = Locked(false)

        @inlinable init(
            key: String, serial: UInt64, latest: Stored<Value>?, source: UInt64, untouchedSinceStamp: Bool,
            queue: HotRecordQueue
        ) {
            self.key = key
            self.serial = serial
            self.latest = latest
            self.source = source
            self.untouchedSinceStamp = untouchedSinceStamp
            self.queue = queue
        }

        /// Waits until the change that handed `latest` on is done (durable or failed), so that the store shows
        /// what it left: after a conflict, the change then reads the record again from the store.
        @inlinable public func settle() async {
            await queue.settle(key, source: source)
        }

        /// Hands the record as this change wrote it to the next change and lets that one go (once; later calls
        /// do nothing).
        @inlinable public func hand(_ written: Stored<Value>?) {
            guard
                released.withLock({ done in
                    defer { done = true }
                    return !done
                })
            else { return }
            queue.release(key, serial: serial, latest: written)
        }

        /// Ends the turn: lets the next change go if it has not gone yet, and forgets the record this change
        /// handed on (the next change then reads the store) unless a later change has handed on another.
        @inlinable public func finish(failed: Bool) {
            hand(nil)
            queue.done(key, serial: serial)
        }
    }

    /// A mark to read `key`'s record after, for ``take(_:since:)``; nil while a change of it is under way (its
    /// turn is held, or what it wrote may not be in the store yet).
    @inlinable public func stamp(_ key: String) -> UInt64? {
        state.withLock { state in state.slots[key] == nil ? state.taken[Self.stripe(key)] : nil }
    }

    /// Waits for `key`'s turn; with the ``stamp(_:)`` taken before the caller read the record, the turn says
    /// whether that copy is still current (``Turn/untouchedSinceStamp``).
    @inlinable public func take(_ key: String, since stamp: UInt64? = nil) async -> Turn {
        let serial = state.withLock { state -> UInt64 in
            state.serial += 1
            return state.serial
        }
        let stripe = Self.stripe(key)
        let (mustWait, untouched) = state.withLock { state -> (Bool, Bool) in
            let untouched = stamp == state.taken[stripe]
            state.taken[stripe] &+= 1
            if state.slots[key]?.busy == true { return (true, false) }
            state.slots[key, default: Slot()].busy = true
            return (false, untouched)
        }
        if mustWait {
            await withUnsafeContinuation { (continuation: UnsafeContinuation<Void, Never>) in
                let resumeNow = state.withLock { state -> Bool in
                    // The holder may have finished between the two locks.
                    if state.slots[key]?.busy == true {
                        state.slots[key]!.waiting.append(continuation)
                        return false
                    }
                    state.slots[key, default: Slot()].busy = true
                    return true
                }
                if resumeNow { continuation.resume() }
            }
        }
        let (latest, source) = state.withLock { state in (state.slots[key]?.latest, state.slots[key]?.handedBy ?? 0) }
        return Turn(
            key: key, serial: serial, latest: latest, source: latest == nil ? 0 : source,
            untouchedSinceStamp: untouched && latest == nil, queue: self)
    }

    @inlinable func settle(_ key: String, source: UInt64) async {
        guard source != 0 else { return }
        await withUnsafeContinuation { (continuation: UnsafeContinuation<Void, Never>) in
            let resumeNow = state.withLock { state -> Bool in
                guard state.slots[key]?.unfinished[source] != nil else { return true }
                state.slots[key]!.unfinished[source]!.append(continuation)
                return false
            }
            if resumeNow { continuation.resume() }
        }
    }

    @inlinable func release(_ key: String, serial: UInt64, latest: Stored<Value>?) {
        let next = state.withLock { state -> UnsafeContinuation<Void, Never>? in
            guard var slot = state.slots[key] else { return nil }
            // A change that hands nothing on queued no write (it failed before its commit was queued): what an
            // earlier change handed on is still the record as the store will hold it, so the next change gets
            // that. (A read of the store would miss that earlier write, not durable yet, and conflict.)
            if let latest {
                slot.latest = latest
                slot.handedBy = serial
                slot.unfinished[serial] = []
            }
            if slot.waiting.isEmpty {
                slot.busy = false
                state.slots[key] = slot.latest == nil && slot.unfinished.isEmpty ? nil : slot
                return nil
            }
            let next = slot.waiting.removeFirst()
            state.slots[key] = slot
            return next
        }
        next?.resume()
    }

    @inlinable func done(_ key: String, serial: UInt64) {
        let settled = state.withLock { state -> [UnsafeContinuation<Void, Never>] in
            guard var slot = state.slots[key] else { return [] }
            let settled = slot.unfinished.removeValue(forKey: serial) ?? []
            if slot.handedBy == serial {
                // The record this change wrote is durable now (or its commit failed): readers of the store see it.
                slot.latest = nil
                slot.handedBy = 0
            }
            let idle = !slot.busy && slot.waiting.isEmpty && slot.latest == nil && slot.unfinished.isEmpty
            state.slots[key] = idle ? nil : slot
            return settled
        }
        for continuation in settled { continuation.resume() }
    }
}
