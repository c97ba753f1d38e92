/// Order statistics over small arrays of measurements.
enum Statistics {
    /// The median (mean of the two middle values for an even count); 0 for no values.
    static func median(_ values: [Double]) -> Double {
        guard !values.isEmpty else { return 0 }
        let sorted = values.sorted()
        let middle = sorted.count / 2
        if sorted.count % 2 == 1 { return sorted[middle] }
        return (sorted[middle - 1] + sorted[middle]) / 2
    }

    /// The nearest-rank percentile (0–100) of ascending `sorted`; 0 for no values.
    static func percentile(_ percentile: Double, ofSorted sorted: [Double]) -> Double {
        guard !sorted.isEmpty else { return 0 }
        let rank = (percentile / 100 * Double(sorted.count - 1)).rounded()
        let index = min(max(Int(rank), 0), sorted.count - 1)
        return sorted[index]
    }
}
