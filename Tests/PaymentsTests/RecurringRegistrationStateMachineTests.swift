import Testing

@testable import Payments

/// The recurring registration's state × event table, written out row by row and checked to cover every state with
/// every event, below and at the 99 pay-in limit.
@Suite struct RecurringRegistrationStateMachineTests {
    typealias Machine = RecurringRegistrationStateMachine
    typealias State = Machine.State

    /// What a row expects: the pay-in admitted (state unchanged), a move to a state, nothing, or a refusal.
    enum Expected: Equatable {
        case admitted
        case moves(State)
        case unchanged
        case refused(Machine.Refusal)
    }

    static let declined = ResultCode.doNotHonor
    static let events: [(String, Machine.Event)] = [
        ("admit CIT", .admit(.customer)), ("admit MIT", .admit(.merchant)), ("3DS pending", .authenticationPending),
        ("CIT succeeded", .succeeded(.customer)), ("MIT succeeded", .succeeded(.merchant)),
        ("CIT declined", .failed(.customer, declined)), ("CIT soft decline", .failed(.customer, .softDecline)),
        ("MIT declined", .failed(.merchant, declined)), ("MIT soft decline", .failed(.merchant, .softDecline)),
        ("end", .end),
    ]

    /// Below the limit.
    static let table: [State: [String: Expected]] = [
        .created: [
            "admit CIT": .admitted, "admit MIT": .refused(.authenticationNeeded),
            "3DS pending": .moves(.authenticationNeeded), "CIT succeeded": .moves(.inProgress),
            "MIT succeeded": .unchanged, "CIT declined": .moves(.authenticationNeeded),
            "CIT soft decline": .moves(.authenticationNeeded), "MIT declined": .unchanged,
            "MIT soft decline": .moves(.authenticationNeeded), "end": .moves(.ended),
        ],
        .authenticationNeeded: [
            "admit CIT": .admitted, "admit MIT": .refused(.authenticationNeeded), "3DS pending": .unchanged,
            "CIT succeeded": .moves(.inProgress), "MIT succeeded": .unchanged, "CIT declined": .unchanged,
            "CIT soft decline": .unchanged, "MIT declined": .unchanged, "MIT soft decline": .unchanged,
            "end": .moves(.ended),
        ],
        .inProgress: [
            "admit CIT": .admitted, "admit MIT": .admitted, "3DS pending": .moves(.authenticationNeeded),
            "CIT succeeded": .unchanged, "MIT succeeded": .unchanged, "CIT declined": .moves(.authenticationNeeded),
            "CIT soft decline": .moves(.authenticationNeeded), "MIT declined": .unchanged,
            "MIT soft decline": .moves(.authenticationNeeded), "end": .moves(.ended),
        ],
        .ended: [
            "admit CIT": .refused(.ended), "admit MIT": .refused(.ended), "3DS pending": .refused(.ended),
            "CIT succeeded": .unchanged, "MIT succeeded": .unchanged, "CIT declined": .unchanged,
            "CIT soft decline": .unchanged, "MIT declined": .unchanged, "MIT soft decline": .unchanged,
            "end": .unchanged,
        ],
    ]

    func run(_ state: State, linked: Int, _ event: Machine.Event) -> (Expected, Machine) {
        var machine = Machine(state: state, payInsLinked: linked)
        do {
            switch try machine.handle(event) {
            case .admitted: return (.admitted, machine)
            case .transitioned(let next): return (.moves(next), machine)
            case .unchanged: return (.unchanged, machine)
            }
        } catch {
            return (.refused(error), machine)
        }
    }

    @Test func theTableCoversEveryStateAndEvent() {
        #expect(Set(Self.table.keys) == Set(State.allCases))
        for state in State.allCases {
            #expect(Set(Self.table[state]!.keys) == Set(Self.events.map(\.0)), "\(state)")
        }
    }

    @Test(arguments: State.allCases)
    func belowTheLimit(state: State) {
        for (name, event) in Self.events {
            let expected = Self.table[state]![name]!
            let (got, machine) = run(state, linked: 5, event)
            #expect(got == expected, "\(state) + \(name)")
            switch expected {
            case .admitted:
                #expect(machine.state == state && machine.payInsLinked == 6)
            case .moves(let next):
                #expect(machine.state == next && machine.payInsLinked == 5)
            case .unchanged, .refused:
                #expect(machine.state == state && machine.payInsLinked == 5, "\(state) + \(name) changed nothing")
            }
        }
    }

    /// At 99 linked pay-ins every admission is refused (205001 on the wire); other events behave as below it.
    @Test(arguments: State.allCases)
    func atTheLimit(state: State) {
        for (name, event) in Self.events {
            let (got, machine) = run(state, linked: Machine.maximumPayIns, event)
            var expected = Self.table[state]![name]!
            if case .admit = event, state != .ended { expected = .refused(.limitReached) }
            #expect(got == expected, "\(state) + \(name) at the limit")
            #expect(machine.payInsLinked == Machine.maximumPayIns)
        }
    }

    @Test func ninetyNinePayInsAreAdmittedThenNoMore() throws {
        var machine = Machine(state: .inProgress)
        for _ in 0..<Machine.maximumPayIns { #expect(try machine.handle(.admit(.merchant)) == .admitted) }
        #expect(throws: Machine.Refusal.limitReached) { try machine.handle(.admit(.customer)) }
        #expect(machine.payInsLinked == 99)
    }
}
