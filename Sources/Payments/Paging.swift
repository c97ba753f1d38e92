/// Which page of a list to return and in which order, from the `page`, `per_page` and `Sort` query parameters.
public struct PageRequest: Sendable, Equatable {
    /// Largest `per_page` the API accepts.
    public static let maximumPerPage = 100

    /// 1-based page number.
    public var page: Int
    public var perPage: Int
    /// Newest first when true (`Sort=CreationDate:DESC`); oldest first by default.
    public var newestFirst: Bool

    public init(page: Int = 1, perPage: Int = 10, newestFirst: Bool = false) {
        self.page = page
        self.perPage = perPage
        self.newestFirst = newestFirst
    }

    /// Parses the query parameters; absent ones take their defaults, unknown ones are not looked at.
    /// - Throws: ``PaymentsError`` `.invalidParameters` for a page below 1, a `per_page` outside 1–100, or a
    ///   `Sort` other than `CreationDate:ASC` / `CreationDate:DESC`.
    public init(page: String?, perPage: String?, sort: String?) throws {
        var rules = FieldRules()
        self.init()
        if let page {
            if let value = Int(page), value >= 1, value <= 1_000_000 {
                self.page = value
            } else {
                rules.fail("page", "The page must be an integer of at least 1.")
            }
        }
        if let perPage {
            if let value = Int(perPage), value >= 1, value <= Self.maximumPerPage {
                self.perPage = value
            } else {
                rules.fail("per_page", "The per_page must be an integer between 1 and \(Self.maximumPerPage).")
            }
        }
        if let sort {
            let parts = sort.split(separator: ":", omittingEmptySubsequences: false)
            if parts.count == 2, parts[0].lowercased() == "creationdate",
                ["asc", "desc"].contains(parts[1].lowercased())
            {
                newestFirst = parts[1].lowercased() == "desc"
            } else {
                rules.fail("Sort", "The Sort must be CreationDate:ASC or CreationDate:DESC.")
            }
        }
        try rules.check()
    }

    /// The requested page of `items`, sorted by `creationDate` (ties by id) in the requested direction.
    public func slice<T>(_ items: [T], creationDate: (T) -> Int64, id: (T) -> String) -> Page<T> {
        let sorted = items.sorted { lhs, rhs in
            let (left, right) = (creationDate(lhs), creationDate(rhs))
            if left != right { return newestFirst ? left > right : left < right }
            return newestFirst ? id(lhs) > id(rhs) : id(lhs) < id(rhs)
        }
        let start = (page - 1) * perPage
        let pageItems = start < sorted.count ? Array(sorted[start..<min(sorted.count, start + perPage)]) : []
        let pages = (sorted.count + perPage - 1) / perPage
        return Page(items: pageItems, totalItems: sorted.count, totalPages: pages)
    }
}

/// One page of a list, with the totals the `X-Number-Of-Items` and `X-Number-Of-Pages` headers carry.
public struct Page<Item: Sendable>: Sendable {
    public var items: [Item]
    public var totalItems: Int
    public var totalPages: Int

    public init(items: [Item], totalItems: Int, totalPages: Int) {
        self.items = items
        self.totalItems = totalItems
        self.totalPages = totalPages
    }
}
