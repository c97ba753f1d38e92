/// One row of the brand table: the numbers whose first `digits` digits lie in `low...high` belong to `brand`.
public struct BrandRange: Hashable, Sendable {
    /// The brand that issues these numbers.
    public let brand: CardBrand
    /// The lowest prefix, as a number of `digits` digits.
    public let low: UInt32
    /// The highest prefix, as a number of `digits` digits.
    public let high: UInt32
    /// How many leading digits the range compares (1–8): the pattern's length, which decides overlaps.
    public let digits: Int

    /// A range `low...high` of prefixes written with the same number of digits (`"506099"`, `"506127"`).
    ///
    /// The strings are literals from the table, so a malformed one is a programming error and traps.
    public init(_ brand: CardBrand, _ low: String, _ high: String? = nil) {
        let high = high ?? low
        precondition(
            low.utf8.count == high.utf8.count && (1...BrandCatalog.maximumPrefixLength).contains(low.utf8.count),
            "brand range bounds must have the same length, 1-8 digits")
        guard let lowValue = UInt32(low), let highValue = UInt32(high), lowValue <= highValue else {
            preconditionFailure("brand range bounds must be digits, low <= high")
        }
        self.brand = brand
        self.low = lowValue
        self.high = highValue
        self.digits = low.utf8.count
    }

    /// How many prefixes of `digits` digits the range holds; the narrower of two equally long ranges wins.
    public var width: UInt32 { high - low + 1 }
}

/// Finds the brand of a card number from its leading digits, by longest-prefix match over a table of ranges.
///
/// The table is compiled once into a digit trie (ten children per node, at most eight levels), so that detection
/// walks at most eight array slots and allocates nothing. Where ranges overlap, the one that compares more digits
/// wins (an Elo BIN inside the Maestro range is Elo); between two ranges of the same length, the narrower wins
/// (Verve's 506099–506127 inside Maestro's 504176–506698); a full tie goes to the row listed first.
public struct BrandCatalog: Sendable {
    /// The longest prefix a range may compare: ISO/IEC 7812 issuer identification numbers have eight digits.
    public static let maximumPrefixLength = 8

    /// The rows this catalog was built from.
    public let ranges: [BrandRange]

    /// `children[node * 10 + digit]`: the child node, or 0 for none (node 0 is the root, never a child).
    private let children: [Int32]
    /// Per node: the brand that wins for numbers whose walk ends here, or nil for none.
    private let resolved: [CardBrand?]
    /// Per node: the brands (bit = brand index; bit 31 = no brand) of every number that starts with the node's path.
    private let reachable: [UInt32]

    private static let noBrandBit: UInt32 = 1 << 31
    private static let brands = CardBrand.allCases

    /// Compiles `ranges` into a catalog.
    public init(ranges: [BrandRange]) {
        self.ranges = ranges
        var builder = TrieBuilder()
        for (order, range) in ranges.enumerated() {
            builder.insert(range, order: order)
        }
        let compiled = builder.compile()
        children = compiled.children
        resolved = compiled.resolved
        reachable = compiled.reachable
    }

    /// The brand of a card number, or nil when no range matches.
    ///
    /// For inputs shorter than the longest pattern, returns a brand only when every number starting with these
    /// digits has it (`"4111"` is Visa, `"6"` is undecided). The hot path: no allocation.
    /// - Parameter digits: ASCII digits, most significant first; only the first eight are read. A non-digit
    ///   ends the input there, as if it were shorter.
    public func brand(forDigits digits: UnsafeBufferPointer<UInt8>) -> CardBrand? {
        lookup(digits)
    }

    /// The brand of a card number given as ASCII digits, or nil.
    public func brand(forDigits digits: String) -> CardBrand? {
        var copy = digits
        return copy.withUTF8 { lookup($0) }
    }

    /// The brands a number starting with `prefix` may turn out to have, in ``CardBrand`` declaration order, as a
    /// checkout form needs while the shopper types. Spaces and dashes are ignored; an empty prefix gives every brand
    /// in the table; anything else that is not a digit gives none.
    public func candidates(forPrefix prefix: String) -> [CardBrand] {
        var node = 0
        var depth = 0
        for byte in prefix.utf8 {
            if byte == 0x20 || byte == 0x2D { continue }
            let digit = Int(byte &- 0x30)
            guard digit < 10 else { return [] }
            if depth == Self.maximumPrefixLength { break }
            let child = Int(children[node &* 10 &+ digit])
            if child == 0 {
                // Every completion leaves the trie here, so the node's winner decides.
                return resolved[node].map { [$0] } ?? []
            }
            node = child
            depth += 1
        }
        let mask = reachable[node]
        return Self.brands.indices.filter { mask & (1 << UInt32($0)) != 0 }.map { Self.brands[$0] }
    }

    private func lookup(_ digits: UnsafeBufferPointer<UInt8>) -> CardBrand? {
        children.withUnsafeBufferPointer { children in
            var node = 0
            var depth = 0
            let limit = Swift.min(digits.count, Self.maximumPrefixLength)
            var fellOff = false
            while depth < limit {
                let digit = Int(digits[depth] &- 0x30)
                guard digit < 10 else { break }
                let child = Int(children[node &* 10 &+ digit])
                if child == 0 {
                    fellOff = true
                    break
                }
                node = child
                depth &+= 1
            }
            if fellOff || depth == Self.maximumPrefixLength { return resolved[node] }
            // The input ended inside the trie: decided only if every completion has the same brand.
            let mask = reachable[node]
            guard mask.nonzeroBitCount == 1, mask != Self.noBrandBit else { return nil }
            return Self.brands[mask.trailingZeroBitCount]
        }
    }
}

/// Builds the digit trie: each range is split into the fewest whole-prefix nodes that cover it exactly, and each
/// node remembers the strongest range covering it.
private struct TrieBuilder {
    /// A range's strength: more digits wins, then the narrower range, then the earlier row.
    struct Strength: Comparable {
        var digits: Int
        var width: UInt32
        var order: Int
        var brandIndex: Int

        static func < (lhs: Self, rhs: Self) -> Bool {
            if lhs.digits != rhs.digits { return lhs.digits < rhs.digits }
            if lhs.width != rhs.width { return lhs.width > rhs.width }
            return lhs.order > rhs.order
        }
    }

    var children: [Int32] = Array(repeating: 0, count: 10)
    var own: [Strength?] = [nil]

    mutating func insert(_ range: BrandRange, order: Int) {
        let strength = Strength(
            digits: range.digits, width: range.width, order: order,
            brandIndex: CardBrand.allCases.firstIndex(of: range.brand)!)
        cover(node: 0, depth: 0, prefix: 0, range: range, strength: strength)
    }

    /// Marks the nodes under `node` (whose path is `prefix`, `depth` digits) that lie wholly inside `range`.
    private mutating func cover(node: Int, depth: Int, prefix: UInt32, range: BrandRange, strength: Strength) {
        var scale: UInt32 = 1
        for _ in depth..<range.digits { scale *= 10 }
        let first = prefix * scale
        let last = first + scale - 1
        if last < range.low || first > range.high { return }
        if first >= range.low && last <= range.high {
            if own[node].map({ $0 < strength }) ?? true { own[node] = strength }
            return
        }
        for digit in 0..<10 {
            let child = self.child(of: node, digit: digit)
            cover(node: child, depth: depth + 1, prefix: prefix * 10 + UInt32(digit), range: range, strength: strength)
        }
    }

    private mutating func child(of node: Int, digit: Int) -> Int {
        let slot = node * 10 + digit
        if children[slot] != 0 { return Int(children[slot]) }
        let created = own.count
        own.append(nil)
        children.append(contentsOf: repeatElement(0, count: 10))
        children[slot] = Int32(created)
        return created
    }

    /// Resolves, for every node, the strongest range on its path and the set of brands reachable below it.
    func compile() -> (children: [Int32], resolved: [CardBrand?], reachable: [UInt32]) {
        let brands = CardBrand.allCases
        var resolved = [CardBrand?](repeating: nil, count: own.count)
        var reachable = [UInt32](repeating: 0, count: own.count)
        func visit(_ node: Int, depth: Int, inherited: Strength?) {
            var best = inherited
            if let mine = own[node], best.map({ $0 < mine }) ?? true { best = mine }
            resolved[node] = best.map { brands[$0.brandIndex] }
            let here: UInt32 = best.map { 1 << UInt32($0.brandIndex) } ?? (1 << 31)
            var mask: UInt32 = 0
            var hasExit = depth == BrandCatalog.maximumPrefixLength
            for digit in 0..<10 {
                let child = Int(children[node * 10 + digit])
                if child == 0 || depth == BrandCatalog.maximumPrefixLength {
                    hasExit = true
                } else {
                    visit(child, depth: depth + 1, inherited: best)
                    mask |= reachable[child]
                }
            }
            if hasExit { mask |= here }
            reachable[node] = mask
        }
        visit(0, depth: 0, inherited: nil)
        return (children, resolved, reachable)
    }
}
