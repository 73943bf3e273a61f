/// A command that could not do its work for a reason other than its arguments (a file, a
/// process that did not come up): printed as `Error: ...` and exit status 1, without the usage
/// text that ArgumentParser prints after a ``ValidationError`` (which is for the command line).
public struct CommandFailure: Error, CustomStringConvertible {
    public var description: String

    public init(_ description: String) {
        self.description = description
    }
}
