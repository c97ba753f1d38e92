import Synchronization

/// A few atomic slots, each holding one idle resource (a C pointer, as its address) or 0: a lock-free
/// free list for the OpenSSL contexts of a key and the chunks of a ``RandomPool``.
///
/// ``take()`` empties a slot with an atomic exchange and ``put(_:)`` fills an empty one with a
/// compare-and-exchange, so a resource is held by at most one thread at a time and there is no
/// linked structure that could suffer from ABA. The exchange acquires and the compare-and-exchange
/// releases, so what one thread wrote into a resource before putting it back is visible to the next
/// thread that takes it (ThreadSanitizer sees these atomics). Measured against the `Locked` array
/// pool it replaces: see docs/hot-path.md, "crypto tokenize".
final class IdleSlots: Sendable {
    /// Eight slots: enough for the daemon's threads on a small machine; more concurrent users make and
    /// free extras.
    private let slots: [8 of Atomic<UInt>] = .init { _ in Atomic<UInt>(0) }

    init() {}

    /// An idle resource, now the caller's, or nil when every slot is empty.
    func take() -> UnsafeMutableRawPointer? {
        for index in slots.indices where slots[index].load(ordering: .relaxed) != 0 {
            let taken = slots[index].exchange(0, ordering: .acquiring)
            if taken != 0 { return UnsafeMutableRawPointer(bitPattern: taken) }
        }
        return nil
    }

    /// Keeps `resource` for a later ``take()``; false when every slot is full (the caller frees it).
    func put(_ resource: UnsafeMutableRawPointer) -> Bool {
        let address = UInt(bitPattern: resource)
        for index in slots.indices where slots[index].load(ordering: .relaxed) == 0 {
            if slots[index].compareExchange(expected: 0, desired: address, ordering: .releasing).exchanged {
                return true
            }
        }
        return false
    }

    /// Empties every slot (for `deinit`: no other thread may use the set any more).
    func drain(_ free: (UnsafeMutableRawPointer) -> Void) {
        for index in slots.indices {
            if let resource = UnsafeMutableRawPointer(bitPattern: slots[index].exchange(0, ordering: .acquiring)) {
                free(resource)
            }
        }
    }
}
