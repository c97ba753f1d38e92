/// What the log lines written while one request is handled share: its request id. The HTTP server binds it
/// around each request's handler task, and ``Logger/log(_:_:_:)`` adds it as `requestId` to every line written
/// in that task (and its child tasks) that does not carry one already: so the lines of the services a handler
/// calls ("card tokenized", "pay-in created") name their request without each service passing it along.
///
/// Read only when a line is written (a task-local lookup); bound once per request by the server.
public enum LogContext {
    /// The id of the request whose handler runs in the current task, or nil outside one.
    @TaskLocal public static var requestID: String?
}
