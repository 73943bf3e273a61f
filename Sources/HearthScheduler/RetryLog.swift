public import Logging

/// How loud a failed delivery that will be tried again is logged: its first failure and every
/// tenth at warning, the rest at info, so that one that keeps failing (a webhook URL that is
/// wrong, a service that is down) shows at the default level without a line per attempt.
public enum RetryLog {
    /// `attempts`: the failed attempts before this one.
    public static func level(afterAttempts attempts: Int) -> Logger.Level {
        attempts % 10 == 0 ? .warning : .info
    }
}
