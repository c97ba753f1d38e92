import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// GETs a path from a server on 127.0.0.1 with URLSession.
enum LoopbackGET {
    static func fetch(port: Int, path: String) async throws -> (Int, String) {
        let url = URL(string: "http://127.0.0.1:\(port)\(path)")!
        let (data, response) = try await URLSession.shared.data(from: url)
        return ((response as? HTTPURLResponse)?.statusCode ?? 0, String(decoding: data, as: UTF8.self))
    }
}
