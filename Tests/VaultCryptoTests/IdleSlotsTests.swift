import Foundation
import Synchronization
import Testing

@testable import VaultCrypto

@Suite struct IdleSlotsTests {
    /// A distinct fake resource address (never dereferenced).
    static func resource(_ n: Int) -> UnsafeMutableRawPointer { UnsafeMutableRawPointer(bitPattern: 0x1000 * (n + 1))! }

    @Test func holdsEightAndHandsEachOutOnce() {
        let slots = IdleSlots()
        #expect(slots.take() == nil)
        for n in 0..<8 { #expect(slots.put(Self.resource(n))) }
        // Full: the ninth is refused, so the caller frees it.
        #expect(!slots.put(Self.resource(8)))
        var taken = Set<UInt>()
        while let resource = slots.take() { taken.insert(UInt(bitPattern: resource)) }
        #expect(taken == Set((0..<8).map { UInt(bitPattern: Self.resource($0)) }))
        var drained = 0
        _ = slots.put(Self.resource(0))
        slots.drain { _ in drained += 1 }
        #expect(drained == 1)
        #expect(slots.take() == nil)
    }

    /// Threads taking and putting back four resources: no resource is ever held by two threads at once
    /// and none is lost or duplicated.
    @Test func neverHandsOneResourceToTwoThreads() async {
        let slots = IdleSlots()
        let owners = Owners()
        let resources = (0..<4).map { UInt(bitPattern: Self.resource($0)) }
        for resource in resources { #expect(slots.put(UnsafeMutableRawPointer(bitPattern: resource)!)) }
        let clashes = await withTaskGroup(of: Int.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    var clashes = 0
                    for _ in 0..<20_000 {
                        guard let resource = slots.take() else { continue }
                        let index = resources.firstIndex(of: UInt(bitPattern: resource))!
                        if owners.flags[index].exchange(true, ordering: .relaxed) { clashes += 1 }
                        owners.flags[index].store(false, ordering: .relaxed)
                        if !slots.put(resource) { clashes += 1 }
                    }
                    return clashes
                }
            }
            return await group.reduce(0, +)
        }
        #expect(clashes == 0)
        var left = Set<UInt>()
        while let resource = slots.take() { left.insert(UInt(bitPattern: resource)) }
        #expect(left == Set(resources))
    }
}

/// Who holds each test resource.
private final class Owners: Sendable {
    let flags: [4 of Atomic<Bool>] = .init { _ in Atomic(false) }
}
