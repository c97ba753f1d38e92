import Foundation

/// Shows what the suite is doing: a live line rewritten in place on a terminal, plain lines
/// otherwise (CI logs, pipes). Everything else the bench prints goes through it too, so the live
/// line never garbles other output.
final class ProgressDisplay {
    private let live: Bool
    private let started = Date()
    private var lineShown = false

    /// A display on standard output; live when it is a terminal and `TERM` is not "dumb".
    init() {
        live = isatty(STDOUT_FILENO) == 1 && ProcessInfo.processInfo.environment["TERM"] != "dumb"
    }

    /// Reports the current step, e.g. "crypto › tokenize › anchor run 2/5 (1.0 s)".
    func step(_ text: String) {
        let elapsed = Int(Date().timeIntervalSince(started))
        let line = "[\(elapsed / 60)m\(pad2(elapsed % 60))s] \(text)"
        if live {
            let width = Self.terminalWidth()
            let shown = line.count > width - 1 ? String(line.prefix(width - 2)) + "…" : line
            write("\r\u{1B}[2K" + shown)
            lineShown = true
        } else {
            write(line + "\n")
        }
    }

    /// Prints a finished line (kept on screen), clearing the live line first.
    func line(_ text: String) {
        clear()
        write(text + "\n")
    }

    /// Removes the live line, if any.
    func clear() {
        if live && lineShown {
            write("\r\u{1B}[2K")
            lineShown = false
        }
    }

    private func pad2(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }

    private func write(_ text: String) {
        FileHandle.standardOutput.write(Data(text.utf8))
    }

    private static func terminalWidth() -> Int {
        var size = winsize()
        if ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 20 { return Int(size.ws_col) }
        return 100
    }
}
