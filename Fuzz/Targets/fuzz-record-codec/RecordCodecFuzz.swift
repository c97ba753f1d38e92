import FuzzSupport

@testable import Payments
@testable import VaultStore

/// The binary record decoder (``RecordCoding/decode(_:from:)`` over ``BinaryRecordReader``) for every record type
/// with a binary codec. Input: a mode byte (which type), then the stored value. Properties: nothing traps; what
/// decodes encodes back to a value that decodes to the same record, and encoding that again gives the same bytes.
@main
enum RecordCodecFuzz {
    static func main() {
        FuzzDriver.run { bytes in
            guard let mode = bytes.first else { return }
            let value = Array(bytes.dropFirst())
            switch mode % 9 {
            case 0: check(CardRegistration.self, value)
            case 1: check(ProfilingAttempt.self, value)
            case 2: check(Card.self, value)
            case 3: check(Wallet.self, value)
            case 4: check(PayIn.self, value)
            case 5: check(PayInAssessment.self, value)
            case 6: check(Refund.self, value)
            case 7: check(IdempotencyLedger.Entry.self, value)
            default:
                // The header-less field reader on its own: every field read in every wire type answers.
                value.withUnsafeBytes { raw in
                    var reader = BinaryRecordReader(raw)
                    while let tag = try? reader.next() {
                        FuzzCheck.require(tag >= 0, "negative tag")
                        if (try? reader.skip()) == nil { break }
                    }
                }
            }
        }
    }

    static func check<T: BinaryRecord & Equatable>(_ type: T.Type, _ value: [UInt8]) {
        let record = Record(collection: "fuzz", id: "x", version: 1, value: value)
        guard let decoded = try? RecordCoding.decode(type, from: record) else { return }
        guard let encoded = try? RecordCoding.encode(decoded) else {
            FuzzCheck.require(false, "a decoded \(T.self) does not encode")
            return
        }
        let again = try? RecordCoding.decode(
            type, from: Record(collection: "fuzz", id: "x", version: 1, value: encoded))
        FuzzCheck.require(again == decoded, "a \(T.self) re-encoded decodes to another value")
        FuzzCheck.require((try? RecordCoding.encode(again!)) == encoded, "a \(T.self) encodes to other bytes twice")
    }
}
