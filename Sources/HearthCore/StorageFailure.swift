/// An error of a service's storage that says nothing about the request: a full disk, an I/O
/// error, a database busy past its timeout. The RPC runtime answers such a failure
/// UNAVAILABLE, which a client may try again later, rather than INTERNAL.
public protocol StorageFailure: Error {
    /// Whether the failure may pass with time (space freed, a lock let go).
    var mayPass: Bool { get }
    /// Whether the store itself is at fault (full, failing, read-only, damaged), not busy with
    /// other work: health checks answer NOT_SERVING for a while after a call fails so.
    var isStoreFault: Bool { get }
}
