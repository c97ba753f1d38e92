/// A caller's batch as it waits for the flusher: its writes and their keys, hashed once here in
/// the caller's thread rather than by the flusher.
struct QueuedBatch {
    var writes: [RecordWrite]
    var keys: [EncryptedFileStore.RecordKey]

    init(_ writes: [RecordWrite]) {
        self.writes = writes
        keys = writes.map { EncryptedFileStore.RecordKey(collection: $0.collection, id: $0.id) }
    }
}
