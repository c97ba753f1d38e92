import HTTPServer
import Payments

extension PageRequest {
    /// The page asked for by a list request's `page`, `per_page` and `Sort` query parameters.
    /// - Throws: ``PaymentsError`` `.invalidParameters` for a malformed query or bad values.
    init(_ request: Request) throws {
        let query: FormFields
        do {
            query = try request.query()
        } catch {
            throw PaymentsError.invalid("Query", "The query string is malformed.")
        }
        try self.init(page: query["page"], perPage: query["per_page"], sort: query["Sort"] ?? query["sort"])
    }
}
