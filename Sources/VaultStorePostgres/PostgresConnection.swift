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

    /// Appends the binary wire form to `out`, with no buffer of its own per value or element.
    func encode(into out: inout [UInt8]) {
        switch self {
        case .text(let text): out.append(contentsOf: text.utf8)
        case .int64(let value): Self.append(value, to: &out)
        case .int32(let value): Self.append(value, to: &out)
        case .bytes(let bytes): out.append(contentsOf: bytes)
        case .textArray(let items):
            Self.appendArrayHeader(elementType: 25, count: items.count, to: &out)
            for item in items {
                Self.append(Int32(item.utf8.count), to: &out)
                out.append(contentsOf: item.utf8)
            }
        case .int64Array(let items):
            Self.appendArrayHeader(elementType: 20, count: items.count, to: &out)
            for item in items {
                Self.append(Int32(8), to: &out)
                Self.append(item, to: &out)
            }
        case .byteaArray(let items):
            Self.appendArrayHeader(elementType: 17, count: items.count, to: &out)
            for item in items {
                Self.append(Int32(item.count), to: &out)
                out.append(contentsOf: item)
            }
        }
    }

    static func bigEndian<T: FixedWidthInteger>(_ value: T) -> [UInt8] {
        withUnsafeBytes(of: value.bigEndian) { Array($0) }
    }

    private static func append<T: FixedWidthInteger>(_ value: T, to out: inout [UInt8]) {
        withUnsafeBytes(of: value.bigEndian) { out.append(contentsOf: $0) }
    }

    /// The head of a one-dimensional array without nulls (`array_send`): dimensions, null flag, element type, then
    /// (when not empty) the length and lower bound; each element follows after its length.
    private static func appendArrayHeader(elementType: Int32, count: Int, to out: inout [UInt8]) {
        append(Int32(count == 0 ? 0 : 1), to: &out)
        append(Int32(0), to: &out)
        append(elementType, to: &out)
        if count > 0 {
            append(Int32(count), to: &out)
            append(Int32(1), to: &out)
        }
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
        let formats = [Int32](repeating: 1, count: parameters.count)
        // One buffer holding every parameter, encoded in place, so each pointer stays valid for the call.
        var whole: [UInt8] = []
        var offsets: [Int] = []
        var lengths: [Int32] = []
        offsets.reserveCapacity(parameters.count)
        lengths.reserveCapacity(parameters.count)
        for parameter in parameters {
            let start = whole.count
            parameter.encode(into: &whole)
            offsets.append(start)
            lengths.append(Int32(whole.count - start))
        }
        whole.append(0)
        return try whole.withUnsafeBufferPointer { buffer in
            let base = UnsafeRawPointer(buffer.baseAddress!).assumingMemoryBound(to: CChar.self)
            let pointers: [UnsafePointer<CChar>?] = offsets.map { base + $0 }
            return try pointers.withUnsafeBufferPointer { values in
                try lengths.withUnsafeBufferPointer { lengthBuffer in
                    try formats.withUnsafeBufferPointer { formatBuffer in
                        try body(
                            Int32(parameters.count), values.baseAddress, lengthBuffer.baseAddress,
                            formatBuffer.baseAddress)
                    }
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
