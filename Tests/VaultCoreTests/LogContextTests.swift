import Foundation
import Testing

@testable import VaultCore

/// ``LogContext``: the lines written while a request is handled carry its id, also from child tasks; outside one
/// nothing is added, and an explicit `requestId` wins.
@Test func linesInARequestTaskCarryItsRequestId() async {
    let handler = MemoryLogHandler()
    let logger = Logger(handler: handler)
    logger.info("before")
    await LogContext.$requestID.withValue("req-1") {
        logger.info("card tokenized", ["cardId": "card_1"])
        await withTaskGroup(of: Void.self) { group in
            group.addTask { logger.info("in a child task") }
        }
        logger.info("explicit", ["requestId": "other"])
    }
    logger.info("after")
    let ids = handler.all.map { $0.metadata["requestId"] }
    #expect(ids == [nil, .string("req-1"), .string("req-1"), .string("other"), nil])
    #expect(handler.all[1].metadata["cardId"] == .string("card_1"))
}
