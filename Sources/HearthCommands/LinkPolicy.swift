import HearthCommandLine
import HearthContracts
import HearthRPC

extension ProcessLink {
    /// What the caller may call on this link: the least its work needs. The gateway forwards
    /// its clients' calls, so it may call every method (it refuses clients the internal ones
    /// itself); operators' tools calling one service directly use the gateway's link.
    var methods: Caller.Methods {
        switch (self.caller, self.callee) {
        case (.gateway, _):
            return .all
        // An export or an erasure asks each service for its part.
        case (.tasks, .checkins):
            return .only([
                Hearth_Checkins_V1_Checkins.Method.exportUser.name,
                Hearth_Checkins_V1_Checkins.Method.listOwnedNests.name,
                Hearth_Checkins_V1_Checkins.Method.eraseUser.name,
            ])
        case (.tasks, .routines):
            return .only([
                Hearth_Routines_V1_Routines.Method.exportUser.name,
                Hearth_Routines_V1_Routines.Method.eraseUser.name,
            ])
        case (.tasks, .safety):
            return .only([
                Hearth_Safety_V1_Safety.Method.exportUser.name,
                Hearth_Safety_V1_Safety.Method.eraseUser.name,
                SafetyActivity.method,
            ])
        // Routines asks whether the caller may see a nest's routines.
        case (.routines, .checkins):
            return .only([Hearth_Checkins_V1_Checkins.Method.getNestRole.name])
        // Activity relayed to the safety switch, with the user's opt-in.
        case (.checkins, .safety), (.routines, .safety):
            return .only([SafetyActivity.method])
        default:
            // A link not in ``ProcessLink/all``: nothing is allowed on it.
            return .only([])
        }
    }
}

extension ProcessName {
    /// Who may call this process's server, each with its link's credential and methods.
    func callers(secrets: Secrets) throws -> [Caller] {
        try ProcessLink.all.filter { $0.callee == self }.map { link in
            Caller(
                name: link.caller.rawValue,
                credential: try secrets.credential(link.caller, to: self),
                methods: link.methods
            )
        }
    }
}
