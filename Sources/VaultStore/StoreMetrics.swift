import Foundation
import VaultCore

/// What the file store's flusher and compactor measured, for `/metrics`: the size of each group commit (records
/// written with one fsync), the fsync latency, and compaction runs. Recorded once per group commit on the flusher
/// thread (never per request), read by the scrape.
public final class StoreMetrics: Sendable {
    /// Upper bounds of the group size histogram (records per group commit).
    public static let groupSizeBounds: [Int] = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512]
    /// Upper bounds of the fsync latency histogram, in seconds.
    public static let fsyncBounds: [Double] = [
        0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1,
    ]

    struct Values: Sendable {
        var groupBuckets = [UInt64](repeating: 0, count: StoreMetrics.groupSizeBounds.count + 1)
        var groupRecords: UInt64 = 0
        var groups: UInt64 = 0
        var fsyncBuckets = [UInt64](repeating: 0, count: StoreMetrics.fsyncBounds.count + 1)
        var fsyncNanos: UInt64 = 0
        var fsyncs: UInt64 = 0
        var compactions: UInt64 = 0
        var compactedSegments: UInt64 = 0
        var compactedBytes: UInt64 = 0
        var compactedRecords: UInt64 = 0
        var readFailures: UInt64 = 0
    }

    private let values = Locked(Values())

    public init() {}

    /// One group commit of `records` writes whose fsync took `nanoseconds`.
    func groupCommitted(records: Int, fsyncNanoseconds nanoseconds: UInt64) {
        let groupBucket = Self.groupSizeBounds.firstIndex { records <= $0 } ?? Self.groupSizeBounds.count
        let seconds = Double(nanoseconds) / 1e9
        let fsyncBucket = Self.fsyncBounds.firstIndex { seconds <= $0 } ?? Self.fsyncBounds.count
        values.withLock { values in
            values.groupBuckets[groupBucket] += 1
            values.groupRecords &+= UInt64(records)
            values.groups += 1
            values.fsyncBuckets[fsyncBucket] += 1
            values.fsyncNanos &+= nanoseconds
            values.fsyncs += 1
        }
    }

    /// A compaction run that removed segments.
    func compacted(_ report: CompactionReport) {
        values.withLock { values in
            values.compactions += 1
            values.compactedSegments += UInt64(report.segmentsRemoved)
            values.compactedBytes += UInt64(report.bytesReclaimed)
            values.compactedRecords += UInt64(report.recordsMoved)
        }
    }

    /// A record that could not be read back (damaged frame or failed authentication).
    func readFailed() { values.withLock { $0.readFailures += 1 } }

    var snapshot: Values { values.withLock { $0 } }
}

extension EncryptedFileStore {
    /// Prometheus text about the store: group commits and fsync latency, segments and their garbage, compaction,
    /// damaged records.
    public func storeMetricsText() -> String {
        let values = metrics.snapshot
        let statistics = statistics
        let damaged = withState { $0.index.corruptedCount + $0.recoveryDamage.count }
        var text = ""
        func histogram(
            _ name: String, _ help: String, _ buckets: [UInt64], _ bounds: [String], sum: String, count: UInt64
        ) {
            text += "# HELP " + name + " " + help + "\n# TYPE " + name + " histogram\n"
            var cumulative: UInt64 = 0
            for (index, bound) in bounds.enumerated() {
                cumulative += buckets[index]
                text += name + "_bucket{le=\"" + bound + "\"} " + String(cumulative) + "\n"
            }
            text += name + "_bucket{le=\"+Inf\"} " + String(count) + "\n"
            text += name + "_sum " + sum + "\n" + name + "_count " + String(count) + "\n"
        }
        histogram(
            "cardvault_store_group_commit_records", "Records written per group commit (one append and one fsync).",
            values.groupBuckets, Self.groupBoundLabels, sum: String(values.groupRecords), count: values.groups)
        histogram(
            "cardvault_store_fsync_seconds", "Time each group commit's fsync took.", values.fsyncBuckets,
            Self.fsyncBoundLabels, sum: String(Double(values.fsyncNanos) / 1e9), count: values.fsyncs)
        text += "# HELP cardvault_store_records Live records in the store.\n# TYPE cardvault_store_records gauge\n"
        text += "cardvault_store_records " + String(statistics.records) + "\n"
        text += "# HELP cardvault_store_segments Segment files of the log.\n# TYPE cardvault_store_segments gauge\n"
        text += "cardvault_store_segments " + String(statistics.segments) + "\n"
        text += "# HELP cardvault_store_log_bytes Bytes of the log, and of the live records in it.\n"
        text += "# TYPE cardvault_store_log_bytes gauge\n"
        text += "cardvault_store_log_bytes{kind=\"total\"} " + String(statistics.logBytes) + "\n"
        text += "cardvault_store_log_bytes{kind=\"live\"} " + String(statistics.liveBytes) + "\n"
        text += "# HELP cardvault_store_checkpoint_bytes Size of the last index checkpoint; the next is written after "
        text += "as much log (or checkpointBytes if more).\n# TYPE cardvault_store_checkpoint_bytes gauge\n"
        text += "cardvault_store_checkpoint_bytes " + String(statistics.lastCheckpointBytes) + "\n"
        text += "# HELP cardvault_store_writable 1 while the store takes writes, 0 after a failed write.\n"
        text += "# TYPE cardvault_store_writable gauge\n"
        text += "cardvault_store_writable " + (statistics.isWritable ? "1" : "0") + "\n"
        text += "# HELP cardvault_store_compactions_total Compaction runs that removed segments, and what they did.\n"
        text += "# TYPE cardvault_store_compactions_total counter\n"
        text += "cardvault_store_compactions_total " + String(values.compactions) + "\n"
        text += "# HELP cardvault_store_compacted_segments_total Segments removed by compaction.\n"
        text += "# TYPE cardvault_store_compacted_segments_total counter\n"
        text += "cardvault_store_compacted_segments_total " + String(values.compactedSegments) + "\n"
        text += "# HELP cardvault_store_compacted_bytes_total Bytes reclaimed by compaction.\n"
        text += "# TYPE cardvault_store_compacted_bytes_total counter\n"
        text += "cardvault_store_compacted_bytes_total " + String(values.compactedBytes) + "\n"
        text += "# HELP cardvault_store_damaged_records Records known damaged (at start-up, by verify or a read) and "
        text += "damaged log regions.\n# TYPE cardvault_store_damaged_records gauge\n"
        text += "cardvault_store_damaged_records " + String(damaged) + "\n"
        text += "# HELP cardvault_store_read_failures_total Reads refused because the record is damaged.\n"
        text += "# TYPE cardvault_store_read_failures_total counter\n"
        text += "cardvault_store_read_failures_total " + String(values.readFailures) + "\n"
        return text
    }

    private static let groupBoundLabels = StoreMetrics.groupSizeBounds.map(String.init)
    private static let fsyncBoundLabels = StoreMetrics.fsyncBounds.map { String($0) }
}

extension EncryptedFileStore {
    /// Remembers that the record at `location` cannot be read back (it failed authentication): its index entry is
    /// flagged damaged, so later reads fail at once with the same error, the next checkpoint keeps the flag (the
    /// next start-up counts it as `damaged`), and `/metrics` shows it. A later write of the record clears it.
    func markDamaged(_ collection: String, _ id: String, at location: RecordLocation) {
        metrics.readFailed()
        withState { state in
            guard let entry = state.index.find(collection, id), state.index[entry].location == location,
                state.index[entry].flags & RecordIndex.corrupted == 0
            else { return }
            state.index.upsert(collection, id, location, corrupted: true)
            state.changedSinceCheckpoint = true
        }
    }
}
