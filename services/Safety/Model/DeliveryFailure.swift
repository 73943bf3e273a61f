import Foundation

/// Why an attempt failed, and whether to try again.
struct DeliveryFailure: Error, Sendable {
    /// Attempts after which a message that keeps failing for a reason that may pass is given
    /// up, but an alarm.
    static let maxAttempts = 12

    /// An alarm email is tried again until its contact's server answers for good (a 5xx) or a
    /// check-in cancels it: an SMTP relay down for a night must delay it, not lose it. Not
    /// one that may have arrived already (an attempt lost its answer): repeated for ever, an
    /// alarm that did arrive would come every hour.
    static func retriesForever(kind: String, mayHaveArrived: Bool) -> Bool {
        kind == MessageKind.alert && !mayHaveArrived
    }

    var message: String
    var isPermanent: Bool
    /// The attempt may have delivered it all the same (no answer came to its content).
    var mayHaveArrived: Bool
    /// The server refused the recipient's address for good: its contact is bounced.
    var addressRefused = false

    /// 30 s, 1 min, 2 min, ... at most 1 h.
    static func backoff(afterAttempts attempts: Int) -> TimeInterval {
        min(30 * pow(2, Double(max(attempts - 1, 0))), 3600)
    }
}
