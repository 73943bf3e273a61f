/// One process allowed to call a server: its name (for the log), the credential it presents in
/// `x-hearth-internal`, and the methods it may call with it.
///
/// Each link between two processes has its own credential, held only by its two ends: a
/// process that is taken over can call what its own links allow, and no more (the checkins
/// process, which parses hostile images, cannot act for anyone in tasks or routines).
public struct Caller: Sendable {
    /// Which methods a caller may call.
    public enum Methods: Sendable {
        /// Every method of the server (the gateway, which forwards its clients' calls).
        case all
        /// Only these, by full name (`package.Service/Method`).
        case only(Set<String>)

        func allows(_ method: String) -> Bool {
            switch self {
            case .all: true
            case .only(let names): names.contains(method)
            }
        }
    }

    public let name: String
    let credential: [UInt8]
    public let methods: Methods

    public init(name: String, credential: String, methods: Methods) {
        self.name = name
        self.credential = Array(credential.utf8)
        self.methods = methods
    }
}
