import CFuzzDriver
import Dispatch

#if canImport(Glibc)
import Glibc
#endif

/// Runs libFuzzer over one fuzz target: `main` of every executable in Fuzz/Targets calls this with its body.
///
/// libFuzzer's own `main` cannot be used (SwiftPM gives each executable a `main` of its own), so ours hands the
/// command line (libFuzzer flags, corpus directories) to `LLVMFuzzerRunDriver`. The body gets each input; it
/// throws nothing and returns normally for any input the code under test handles (an error is a handled
/// input). A crash, a trap, an AddressSanitizer report, a failed ``FuzzCheck/require(_:_:file:line:)`` or a
/// timeout is a finding.
public enum FuzzDriver {
    nonisolated(unsafe) private static var body: ((UnsafeRawBufferPointer) -> Void)?

    public static func run(_ body: @escaping (UnsafeRawBufferPointer) -> Void) -> Never {
        Self.body = body
        var argc = CommandLine.argc
        var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
        let status = LLVMFuzzerRunDriver(&argc, &argv) { data, size in
            FuzzDriver.body?(UnsafeRawBufferPointer(start: data, count: size))
            return 0
        }
        exit(status)
    }
}

/// Property checks inside a fuzz target: a failure prints what was expected and aborts, which libFuzzer
/// records as a crash with the input that caused it.
public enum FuzzCheck {
    public static func require(
        _ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String, file: StaticString = #fileID,
        line: UInt = #line
    ) {
        if !condition() {
            let text = "fuzz property failed at \(file):\(line): \(message())\n"
            _ = text.utf8CString.withUnsafeBufferPointer { write(2, $0.baseAddress, $0.count - 1) }
            abort()
        }
    }
}

/// Runs async code to completion from a fuzz target's synchronous callback (libFuzzer calls it on the main
/// thread, which is not one of the cooperative pool's threads, so waiting here cannot starve the task).
public func runBlocking<T: Sendable>(_ body: @escaping @Sendable () async -> T) -> T {
    let box = ResultBox<T>()
    let done = DispatchSemaphore(value: 0)
    Task {
        box.value = await body()
        done.signal()
    }
    done.wait()
    return box.value!
}

/// Unchecked Sendable: written by the task before it signals, read after the wait (the semaphore orders them).
private final class ResultBox<T>: @unchecked Sendable {
    // Written by the task before it signals, read after the wait: the semaphore orders the two.
    var value: T?
}

/// Replaces every occurrence of each key of `substitutions` in `bytes` (placeholders such as `$USER` in a
/// seed, so that seeds can name objects whose ids are only known at run time).
public func substitute(_ bytes: UnsafeRawBufferPointer, _ substitutions: [(String, [UInt8])]) -> [UInt8] {
    var out: [UInt8] = []
    out.reserveCapacity(bytes.count)
    var index = 0
    outer: while index < bytes.count {
        if bytes[index] == UInt8(ascii: "$") {
            for (key, value) in substitutions {
                let keyBytes = Array(key.utf8)
                if index + keyBytes.count <= bytes.count,
                    keyBytes.indices.allSatisfy({ bytes[index + $0] == keyBytes[$0] })
                {
                    out.append(contentsOf: value)
                    index += keyBytes.count
                    continue outer
                }
            }
        }
        out.append(bytes[index])
        index += 1
    }
    return out
}
