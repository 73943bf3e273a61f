import Foundation

/// The calls a simulated user makes, as the capacity model names them (SCALING.md). Each is one
/// call through the gateway; what it writes or reads is `SimulatedUsers`' to say.
public enum SimulatedCall: String, Codable, CaseIterable, Sendable, Comparable {
    case recordHeartbeat = "safety.RecordHeartbeat"
    case getStatus = "safety.GetStatus"
    case createCheckIn = "checkins.CreateCheckIn"
    case createPhotoCheckIn = "checkins.CreateCheckIn+photo"
    case listCheckIns = "checkins.ListCheckIns"
    case markViewed = "checkins.MarkViewed"
    case recordTaskCheckIn = "tasks.RecordCheckIn"
    case listPendingPrompts = "tasks.ListPendingPrompts"
    case listTasks = "tasks.ListTasks"
    case setActionDone = "routines.SetActionDone"
    case getProgress = "routines.GetProgress"
    case reportLocationEvent = "activities.ReportLocationEvent"
    case listPendingOffers = "activities.ListPendingOffers"

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// A day of use: how many of each call one user makes a day, and how the day's calls spread over
/// its hours (all users in one time zone: one region's peak, the worst case for one machine).
/// Read from JSON (`deploy/capacity/usage-profile.json`), which the capacity model reads too.
public struct UsageProfile: Codable, Sendable, Equatable {
    /// Calls of each kind one user makes in a day (fractions: some users make one, some none).
    public var callsPerUserPerDay: [SimulatedCall: Double]
    /// The relative weight of each hour of the day, 0 to 23 (any scale; not all zero).
    public var hourlyWeights: [Double]

    public init(callsPerUserPerDay: [SimulatedCall: Double], hourlyWeights: [Double]) {
        self.callsPerUserPerDay = callsPerUserPerDay
        self.hourlyWeights = hourlyWeights
    }

    struct Invalid: Error, CustomStringConvertible {
        var description: String
    }

    enum CodingKeys: String, CodingKey {
        case callsPerUserPerDay, hourlyWeights
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        // Keys by name, so that a misspelled call is an error rather than a call never made.
        let calls = try container.decode([String: Double].self, forKey: .callsPerUserPerDay)
        var byCall: [SimulatedCall: Double] = [:]
        for (name, count) in calls {
            guard let call = SimulatedCall(rawValue: name) else {
                let known = SimulatedCall.allCases.map(\.rawValue).joined(separator: ", ")
                throw Invalid(description: "unknown call \(name) in callsPerUserPerDay (known: \(known))")
            }
            byCall[call] = count
        }
        self.callsPerUserPerDay = byCall
        self.hourlyWeights = try container.decode([Double].self, forKey: .hourlyWeights)
        try self.validate()
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        let calls = Dictionary(uniqueKeysWithValues: self.callsPerUserPerDay.map { ($0.key.rawValue, $0.value) })
        try container.encode(calls, forKey: .callsPerUserPerDay)
        try container.encode(self.hourlyWeights, forKey: .hourlyWeights)
    }

    func validate() throws {
        guard self.hourlyWeights.count == 24 else {
            throw Invalid(description: "hourlyWeights needs 24 values, one an hour; it has \(self.hourlyWeights.count)")
        }
        guard self.hourlyWeights.allSatisfy({ $0 >= 0 && $0.isFinite }), self.hourlyWeights.contains(where: { $0 > 0 })
        else { throw Invalid(description: "hourlyWeights must be finite, none negative, not all zero") }
        for (call, count) in self.callsPerUserPerDay where !(count >= 0 && count.isFinite) {
            throw Invalid(description: "\(call.rawValue): calls a day must be finite and not negative, not \(count)")
        }
    }

    /// The share of a day's calls that falls in `hour` (0-23).
    public func share(ofHour hour: Int) -> Double {
        self.hourlyWeights[hour] / self.hourlyWeights.reduce(0, +)
    }

    /// The busiest hour's rate over the day's mean hourly rate.
    public var peakFactor: Double {
        (self.hourlyWeights.max() ?? 0) * 24 / self.hourlyWeights.reduce(0, +)
    }

    public static func load(path: String) throws -> UsageProfile {
        try JSONDecoder().decode(UsageProfile.self, from: Data(contentsOf: URL(fileURLWithPath: path)))
    }
}
