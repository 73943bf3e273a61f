import Foundation

/// Debian's headless Chromium, driven by headless_browser.py over the DevTools protocol: opens a
/// page as a user's browser would, and can click one of its buttons (a form's submit).
public enum HeadlessBrowser {
    /// The document the browser ended on.
    public struct Page: Sendable {
        public var url: String
        public var title: String
        /// `document.body.innerText`: the text as shown, a line per block.
        public var text: String
        /// The HTTP status of the document's response (after redirects), nil if Chromium gave none.
        public var status: Int?
    }

    private static let chromium = "/usr/bin/chromium"

    /// Whether Chromium is there (scripts/bootstrap installs it).
    public static var isInstalled: Bool { FileManager.default.isExecutableFile(atPath: chromium) }

    /// Opens `url` in headless Chromium; with `clicking`, clicks that element and returns the page it leads to.
    ///
    /// Throws `BrowserFailed` when the page cannot be loaded (nothing listening, connection
    /// reset), no element matches `selector`, the click loads no new document, or it all takes
    /// longer than `timeout` seconds. An HTTP error status is no failure: it is in `status`.
    public static func open(_ url: String, clicking selector: String? = nil, timeout: Int = 30) async throws -> Page {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("headless_browser.py")
        var arguments = [script.path, url, "--timeout", String(timeout)]
        if let selector { arguments += ["--click", selector] }
        // runProcess reads stdout and stderr to the end, off the task pool, stdin closed: the
        // script kills Chromium and removes its profile itself, whether it succeeds or not.
        let run = try await runProcess(URL(fileURLWithPath: "/usr/bin/python3"), arguments)
        let stderr = run.stderr.trimmingCharacters(in: .whitespacesAndNewlines)
        guard run.status == 0 else {
            throw BrowserFailed(description: "headless browser exited \(run.status) opening \(url): \(stderr)")
        }
        let line = run.stdout.split(separator: "\n").last.map(String.init) ?? ""
        guard
            let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)),
            let fields = object as? [String: Any],
            let finalURL = fields["url"] as? String,
            let title = fields["title"] as? String,
            let text = fields["text"] as? String
        else {
            throw BrowserFailed(description: "headless browser printed no page for \(url): \(run.stdout) \(stderr)")
        }
        return Page(url: finalURL, title: title, text: text, status: fields["status"] as? Int)
    }
}

/// The headless browser could not show the page (or click what it was asked to); the
/// description says why, with the script's stderr.
public struct BrowserFailed: Error, CustomStringConvertible {
    public var description: String
}
