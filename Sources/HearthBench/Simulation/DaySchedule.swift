import HearthCore

/// One call of the simulated day: when (seconds after the simulated midnight), by whom, what.
public struct ScheduledCall: Sendable, Equatable {
    public var at: Double
    public var user: Int
    public var call: SimulatedCall
}

/// The calls of a simulated day of `users` users under a profile, in order of time: each user
/// makes the whole part of each daily count and one more with the fraction's probability, each
/// at an hour drawn by the profile's weights and a uniform moment in it. The same seed gives the
/// same day. Only the calls inside the window `[fromHour, fromHour + hours)` are kept.
public struct DaySchedule: Sendable {
    public let calls: [ScheduledCall]
    public let window: Range<Double>

    public init(profile: UsageProfile, users: Int, fromHour: Int = 0, hours: Int = 24, seed: UInt64 = 1) {
        precondition((0..<24).contains(fromHour) && (1...24).contains(hours) && fromHour + hours <= 24)
        let window = Double(fromHour * 3600)..<Double((fromHour + hours) * 3600)
        var random = SplitMix64(seed: seed)
        var cumulative: [Double] = []
        var total = 0.0
        for weight in profile.hourlyWeights {
            total += weight
            cumulative.append(total)
        }
        var calls: [ScheduledCall] = []
        // A stable order of kinds, so that a seed gives the same day whatever the dictionary's order.
        let kinds = profile.callsPerUserPerDay.sorted { $0.key < $1.key }
        for user in 0..<users {
            for (call, perDay) in kinds {
                let whole = Int(perDay.rounded(.down))
                let count = whole + (random.nextUnit() < perDay - Double(whole) ? 1 : 0)
                for _ in 0..<count {
                    let pick = random.nextUnit() * total
                    let hour = cumulative.firstIndex { pick < $0 } ?? 23
                    let at = (Double(hour) + random.nextUnit()) * 3600
                    if window.contains(at) { calls.append(ScheduledCall(at: at, user: user, call: call)) }
                }
            }
        }
        calls.sort { ($0.at, $0.user) < ($1.at, $1.user) }
        self.calls = calls
        self.window = window
    }

    /// Calls in each simulated hour of the window, by kind.
    public func counts(perHour hour: Int) -> [SimulatedCall: Int] {
        let range = Double(hour * 3600)..<Double((hour + 1) * 3600)
        return self.calls.filter { range.contains($0.at) }.reduce(into: [:]) { $0[$1.call, default: 0] += 1 }
    }
}
