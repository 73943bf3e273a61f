/// A link between two Hearth processes: `caller` calls `callee`'s server. Each link has a
/// credential of its own (``Secrets``), held only by its two ends, and allows its caller only
/// the methods it needs: a process taken over reaches no further than its own links.
public struct ProcessLink: Hashable, Sendable, CustomStringConvertible {
    public let caller: ProcessName
    public let callee: ProcessName

    public init(_ caller: ProcessName, _ callee: ProcessName) {
        self.caller = caller
        self.callee = callee
    }

    /// The file its credential is kept in, in a deployment's secrets folder.
    public var fileName: String { "\(self.caller.rawValue)-\(self.callee.rawValue).key" }

    public var description: String { "\(self.caller.rawValue) -> \(self.callee.rawValue)" }

    /// Every link of a deployment: the gateway forwards to every service; tasks asks the others
    /// for their parts of an export or an erasure; checkins, tasks and routines forward activity
    /// to safety; routines asks checkins for nest roles.
    public static let all: [ProcessLink] =
        ProcessName.services.map { ProcessLink(.gateway, $0) } + [
            ProcessLink(.tasks, .checkins),
            ProcessLink(.tasks, .routines),
            ProcessLink(.tasks, .safety),
            ProcessLink(.checkins, .safety),
            ProcessLink(.routines, .checkins),
            ProcessLink(.routines, .safety),
        ]

    /// The links `process` is an end of: the credentials it holds.
    public static func touching(_ process: ProcessName) -> [ProcessLink] {
        Self.all.filter { $0.caller == process || $0.callee == process }
    }
}
