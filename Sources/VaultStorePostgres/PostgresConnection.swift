internal import CLibPQ
import Foundation
public import VaultCore
import VaultStore

/// A failure talking to PostgreSQL. Messages carry libpq's text (server, state, reason), never the
/// connection URI (it may hold a password) nor any parameter value.
public struct PostgresError: CodedError, Equatable {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        let name: String
        public var description: String { name }

        /// The connection failed or broke (server down, failover, network).
        public static let connection = Code(name: "connection")
        /// The server refused a statement; ``PostgresError/sqlState`` says why.
        public static let statement = Code(name: "statement")
        /// The schema is missing or older than this binary (run `cardvault db migrate`).
        public static let schema = Code(name: "schema")
        /// The configuration (URI, settings) cannot be used.
        public static let configuration = Code(name: "configuration")
    }

    public let code: Code
    public let message: String
    /// The five-character SQLSTATE of a refused statement ("" when none).
    public let sqlState: String

    public init(_ code: Code, _ message: String, sqlState: String = "") {
        self.code = code
        self.message = message
        self.sqlState = sqlState
    }

    public static func == (lhs: PostgresError, rhs: PostgresError) -> Bool { lhs.code == rhs.code }

    /// Whether the statement may succeed when sent again unchanged (deadlock, serialization failure,
    /// a standby that is being promoted, a server shutting down).
    var isTransient: Bool {
        code == .connection
            || ["40001", "40P01", "57P01", "57P02", "57P03", "25006", "08006", "08003", "08000"].contains(sqlState)
    }
}

/// One parameter of a statement, sent in binary format.
enum PostgresValue {
    case text(String)
    case int64(Int64)
    case int32(Int32)
    case bytes([UInt8])
    case textArray([String])
    case int64Array([Int64])
    case byteaArray([[UInt8]])

    /// The number of bytes of the binary wire form (``encode(into:)``).
    var encodedCount: Int {
        switch self {
        case .text(let text): text.utf8.count
        case .int64: 8
        case .int32: 4
        case .bytes(let bytes): bytes.count
        case .textArray(let items): items.reduce(Self.arrayHeaderCount(items.count)) { $0 + 4 + $1.utf8.count }
        case .int64Array(let items): Self.arrayHeaderCount(items.count) + items.count * 12
        case .byteaArray(let items): items.reduce(Self.arrayHeaderCount(items.count)) { $0 + 4 + $1.count }
        }
    }

    /// Writes the binary wire form at the writer's position: exactly ``encodedCount`` bytes.
    func encode(into out: inout WireWriter) {
        switch self {
        case .text(let text): out.text(text)
        case .int64(let value): out.integer(value)
        case .int32(let value): out.integer(value)
        case .bytes(let bytes): out.bytes(bytes)
        case .textArray(let items):
            Self.writeArrayHeader(elementType: 25, count: items.count, to: &out)
            for item in items {
                out.integer(Int32(item.utf8.count))
                out.text(item)
            }
        case .int64Array(let items):
            Self.writeArrayHeader(elementType: 20, count: items.count, to: &out)
            for item in items {
                out.integer(Int32(8))
                out.integer(item)
            }
        case .byteaArray(let items):
            Self.writeArrayHeader(elementType: 17, count: items.count, to: &out)
            for item in items {
                out.integer(Int32(item.count))
                out.bytes(item)
            }
        }
    }

    static func bigEndian<T: FixedWidthInteger>(_ value: T) -> [UInt8] {
        withUnsafeBytes(of: value.bigEndian) { Array($0) }
    }

    /// The head of a one-dimensional array without nulls (`array_send`): dimensions, null flag, element type, then
    /// (when not empty) the length and lower bound; each element follows after its length.
    private static func writeArrayHeader(elementType: Int32, count: Int, to out: inout WireWriter) {
        out.integer(Int32(count == 0 ? 0 : 1))
        out.integer(Int32(0))
        out.integer(elementType)
        if count > 0 {
            out.integer(Int32(count))
            out.integer(Int32(1))
        }
    }

    private static func arrayHeaderCount(_ count: Int) -> Int { count == 0 ? 12 : 20 }
}

/// Writes parameters' wire forms into a buffer sized beforehand (``PostgresValue/encodedCount``): each integer one
/// store, each byte string one copy, no growth checks.
struct WireWriter {
    private let buffer: UnsafeMutableBufferPointer<UInt8>
    private(set) var offset = 0

    init(_ buffer: UnsafeMutableBufferPointer<UInt8>) { self.buffer = buffer }

    mutating func integer<T: FixedWidthInteger>(_ value: T) {
        precondition(offset + MemoryLayout<T>.size <= buffer.count, "parameter buffer sized too small")
        UnsafeMutableRawPointer(buffer.baseAddress!).storeBytes(
            of: value.bigEndian, toByteOffset: offset, as: T.self)
        offset += MemoryLayout<T>.size
    }

    mutating func bytes(_ bytes: [UInt8]) {
        bytes.withUnsafeBufferPointer { copy($0) }
    }

    mutating func text(_ text: String) {
        if text.utf8.withContiguousStorageIfAvailable({ copy($0) }) == nil { copy(Array(text.utf8)) }
    }

    private mutating func copy(_ source: some Collection<UInt8>) {
        precondition(offset + source.count <= buffer.count, "parameter buffer sized too small")
        _ = UnsafeMutableBufferPointer(rebasing: buffer[offset...]).initialize(fromContentsOf: source)
        offset += source.count
    }
}

/// The rows of one result, in binary format, copied out of libpq's `PGresult`.
struct PostgresRows {
    /// Each row's columns; nil for SQL NULL.
    var rows: [[[UInt8]?]]
    /// Rows changed by an INSERT, UPDATE or DELETE.
    var affected: Int

    func int64(_ row: Int, _ column: Int) -> Int64? {
        guard let bytes = rows[row][column] else { return nil }
        if bytes.count == 4 { return Int64(Self.integer(bytes, as: Int32.self)) }
        guard bytes.count == 8 else { return nil }
        return Self.integer(bytes, as: Int64.self)
    }

    func text(_ row: Int, _ column: Int) -> String? {
        rows[row][column].map { String(decoding: $0, as: UTF8.self) }
    }

    func bytes(_ row: Int, _ column: Int) -> [UInt8]? { rows[row][column] }

    private static func integer<T: FixedWidthInteger>(_ bytes: [UInt8], as: T.Type) -> T {
        bytes.reduce(T(0)) { ($0 << 8) | T(truncatingIfNeeded: $1) }
    }
}

/// One libpq connection (`PGconn`), owned by a single thread at a time; freed on deinit.
///
/// Statements are prepared once per connection by name (``prepare(_:_:)``) and run with binary
/// parameters and results. ``pipeline(_:)`` sends several prepared statements in libpq's pipeline
/// mode, in one round trip.
final class PostgresConnection {
    private let connection: OpaquePointer
    private(set) var prepared: Set<String> = []

    /// Connects with `uri` (a libpq URI or key=value string, multi-host allowed).
    /// - Throws: ``PostgresError`` `.connection` with libpq's message (which never echoes a password).
    init(uri: String, applicationName: String = "cardvault") throws {
        let keys = ["fallback_application_name", "connect_timeout", "dbname"]
        let values = [applicationName, "5", uri]
        // expand_dbname=1: the dbname value is parsed as a URI / connection string; what it sets wins over the
        // defaults before it (libpq takes the last value of a keyword).
        var keyPointers = keys.map { strdup($0) } + [nil]
        var valuePointers = values.map { strdup($0) } + [nil]
        defer {
            for pointer in keyPointers { free(pointer) }
            for pointer in valuePointers { free(pointer) }
        }
        let made = keyPointers.withUnsafeMutableBufferPointer { keyBuffer in
            valuePointers.withUnsafeMutableBufferPointer { valueBuffer in
                keyBuffer.baseAddress!.withMemoryRebound(to: UnsafePointer<CChar>?.self, capacity: keyBuffer.count) {
                    k in
                    valueBuffer.baseAddress!.withMemoryRebound(
                        to: UnsafePointer<CChar>?.self, capacity: valueBuffer.count
                    ) { v in
                        PQconnectdbParams(k, v, 1)
                    }
                }
            }
        }
        guard let made else { throw PostgresError(.connection, "out of memory for a PostgreSQL connection") }
        // Checked before the property is set: a throwing init of a class runs deinit once every property is
        // set, which would finish the connection a second time.
        guard PQstatus(made) == CONNECTION_OK else {
            let text = Self.message(PQerrorMessage(made))
            PQfinish(made)
            throw PostgresError(.connection, "cannot connect to PostgreSQL: \(text)")
        }
        connection = made
    }

    deinit { PQfinish(connection) }

    /// Whether the connection still looks usable (libpq's view; a dead server is found on next use).
    var isHealthy: Bool { PQstatus(connection) == CONNECTION_OK }

    /// The server's host (a name, address or socket directory), for logs.
    var host: String { PQhost(connection).map { String(cString: $0) } ?? "" }

    private static func message(_ pointer: UnsafePointer<CChar>?) -> String {
        guard let pointer else { return "" }
        return String(cString: pointer).trimmingCharacters(in: .whitespacesAndNewlines)
            .replacingOccurrences(of: "\n", with: " ")
    }

    /// Runs SQL text without parameters (may hold several statements); returns the last result's rows (text format).
    @discardableResult
    func execute(_ sql: String) throws -> PostgresRows {
        guard let result = PQexec(connection, sql) else { throw connectionError() }
        defer { PQclear(result) }
        return try rows(of: result, binary: false)
    }

    /// Prepares `sql` under `name` on this connection, once.
    func prepare(_ name: String, _ sql: String) throws {
        guard !prepared.contains(name) else { return }
        guard let result = PQprepare(connection, name, sql, 0, nil) else { throw connectionError() }
        defer { PQclear(result) }
        _ = try rows(of: result, binary: false)
        prepared.insert(name)
    }

    /// Runs the prepared statement `name` with binary parameters and results.
    func run(_ name: String, _ parameters: [PostgresValue]) throws -> PostgresRows {
        try withParameters(parameters) { count, values, lengths, formats in
            guard let result = PQexecPrepared(connection, name, count, values, lengths, formats, 1) else {
                throw connectionError()
            }
            defer { PQclear(result) }
            return try rows(of: result, binary: true)
        }
    }

    /// One statement of a pipeline; `sync` ends its implicit transaction (and isolates its failure)
    /// unless the statements run inside an explicit BEGIN ... COMMIT.
    struct PipelineStep {
        var statement: String
        var parameters: [PostgresValue]
        var syncAfter: Bool
    }

    /// Sends `steps` in pipeline mode and collects each one's outcome, in order, in one round trip.
    /// A failed statement fails the rest up to the next sync point (theirs report the same error).
    /// - Throws: ``PostgresError`` `.connection` when the connection breaks (outcomes unknown).
    func pipeline(_ steps: [PipelineStep]) throws -> [Result<PostgresRows, PostgresError>] {
        guard PQenterPipelineMode(connection) == 1 else { throw connectionError() }
        var outcomes: [Result<PostgresRows, PostgresError>] = []
        var broken: PostgresError?
        for step in steps {
            let sent = try withParameters(step.parameters) { count, values, lengths, formats in
                PQsendQueryPrepared(connection, step.statement, count, values, lengths, formats, 1)
            }
            guard sent == 1 else {
                broken = connectionError()
                break
            }
            if step.syncAfter, PQpipelineSync(connection) != 1 {
                broken = connectionError()
                break
            }
        }
        if broken == nil, PQflush(connection) != 0 { broken = connectionError() }
        if let broken {
            // The connection is unusable; its owner drops it.
            throw broken
        }
        var pendingError: PostgresError?
        for step in steps {
            // Each statement's results end with a NULL; an aborted one reports PGRES_PIPELINE_ABORTED.
            var outcome: Result<PostgresRows, PostgresError>?
            while let result = PQgetResult(connection) {
                defer { PQclear(result) }
                let status = PQresultStatus(result)
                if status == PGRES_PIPELINE_ABORTED {
                    outcome = .failure(
                        pendingError ?? PostgresError(.statement, "statement skipped after an earlier failure"))
                } else {
                    do {
                        outcome = .success(try rows(of: result, binary: true))
                    } catch let error as PostgresError {
                        pendingError = error
                        outcome = .failure(error)
                    }
                }
            }
            guard let outcome else { throw connectionError() }
            outcomes.append(outcome)
            if step.syncAfter {
                guard let sync = PQgetResult(connection) else { throw connectionError() }
                let status = PQresultStatus(sync)
                PQclear(sync)
                guard status == PGRES_PIPELINE_SYNC else { throw connectionError() }
                pendingError = nil
            }
        }
        guard PQexitPipelineMode(connection) == 1 else { throw connectionError() }
        return outcomes
    }

    /// Ends an explicit transaction left aborted by a failed statement (a pipeline's sync point does not).
    func rollBackFailedTransaction() throws {
        if PQtransactionStatus(connection) == PQTRANS_INERROR { try execute("ROLLBACK") }
    }

    private func connectionError() -> PostgresError {
        PostgresError(.connection, "PostgreSQL connection failed: \(Self.message(PQerrorMessage(connection)))")
    }

    private func withParameters<T>(
        _ parameters: [PostgresValue],
        _ body: (Int32, UnsafePointer<UnsafePointer<CChar>?>?, UnsafePointer<Int32>?, UnsafePointer<Int32>?) throws -> T
    ) throws -> T {
        let count = parameters.count
        // One buffer holding every parameter, sized first and written in place, so each pointer stays valid for the
        // call; the pointers, lengths and formats (all binary) live on the stack.
        let total = parameters.reduce(1) { $0 + $1.encodedCount }
        return try withUnsafeTemporaryAllocation(of: Int32.self, capacity: 2 * count) { numbers in
            let whole = [UInt8](unsafeUninitializedCapacity: total) { buffer, written in
                var writer = WireWriter(buffer)
                for (index, parameter) in parameters.enumerated() {
                    let start = writer.offset
                    parameter.encode(into: &writer)
                    numbers.initializeElement(at: index, to: Int32(writer.offset - start))
                    numbers.initializeElement(at: count + index, to: 1)
                }
                buffer[writer.offset] = 0
                written = writer.offset + 1
            }
            return try whole.withUnsafeBufferPointer { buffer in
                let base = UnsafeRawPointer(buffer.baseAddress!).assumingMemoryBound(to: CChar.self)
                return try withUnsafeTemporaryAllocation(of: UnsafePointer<CChar>?.self, capacity: count) { values in
                    var offset = 0
                    for index in 0..<count {
                        values.initializeElement(at: index, to: base + offset)
                        offset += Int(numbers[index])
                    }
                    return try body(
                        Int32(count), values.baseAddress, numbers.baseAddress, numbers.baseAddress.map { $0 + count })
                }
            }
        }
    }

    private func rows(of result: OpaquePointer, binary: Bool) throws -> PostgresRows {
        switch PQresultStatus(result) {
        case PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_EMPTY_QUERY:
            break
        case PGRES_FATAL_ERROR, PGRES_NONFATAL_ERROR, PGRES_BAD_RESPONSE:
            let state = PQresultErrorField(result, Int32(UInt8(ascii: "C"))).map { String(cString: $0) } ?? ""
            let primary = PQresultErrorField(result, Int32(UInt8(ascii: "M"))).map { String(cString: $0) } ?? ""
            if !isHealthy || state.hasPrefix("08") || state.isEmpty && PQstatus(connection) != CONNECTION_OK {
                throw PostgresError(.connection, "PostgreSQL connection failed: \(primary)", sqlState: state)
            }
            throw PostgresError(
                .statement, "PostgreSQL refused a statement (SQLSTATE \(state)): \(primary)", sqlState: state)
        default:
            throw PostgresError(.statement, "unexpected PostgreSQL result status \(PQresultStatus(result).rawValue)")
        }
        let count = Int(PQntuples(result))
        let columns = Int(PQnfields(result))
        var rows: [[[UInt8]?]] = []
        rows.reserveCapacity(count)
        for row in 0..<count {
            var values: [[UInt8]?] = []
            values.reserveCapacity(columns)
            for column in 0..<columns {
                if PQgetisnull(result, Int32(row), Int32(column)) == 1 {
                    values.append(nil)
                    continue
                }
                let length = Int(PQgetlength(result, Int32(row), Int32(column)))
                let pointer = PQgetvalue(result, Int32(row), Int32(column))!
                values.append(
                    Array(UnsafeRawBufferPointer(start: UnsafeRawPointer(pointer), count: length)))
            }
            rows.append(values)
        }
        let affected = PQcmdTuples(result).map { Int(String(cString: $0)) ?? 0 } ?? 0
        _ = binary
        return PostgresRows(rows: rows, affected: affected)
    }
}
