import Foundation
import HearthCore
import HearthRPC

/// The rules of activities and "mark done?" offers, as pure functions: no clock, no storage.
enum OfferRules {
    static let maxTitleCharacters = 200
    /// Activities one user may have.
    static let maxActivities = 200
    static let maxLabelCharacters = 100
    static let maxClientEventIDCharacters = 100
    static let radius = 25...5000
    static let defaultRadius = 150
    static let delayMinutes = 0...120
    static let cooldownMinutes = 1...1440
    static let minDwellMinutes = 0...120
    static let dailyCap = 1...20
    static let minSpacingMinutes = 0...1440
    static let priorities = 1...3
    static let defaultPriority = 2
    static let maxAccuracy = 10_000.0
    static let geofences = 1...100
    static let defaultGeofences = 20
    /// An event older than this (or from the future) is STALE_EVENT.
    static let staleAfter: TimeInterval = 30 * 60
    /// How far inside (arrive) or outside (leave) the radius a position must be.
    static let confirmationMargin = 25.0
    /// An offer not answered within this long after delivery has expired.
    static let offerLifetime: TimeInterval = 24 * 3600
    static let maxStatsDays = 366

    // MARK: Activities and rules

    struct Rule: Sendable, Equatable {
        var label: String
        var latitude: Double
        var longitude: Double
        var radiusMeters: Int
        var trigger: Trigger
        var delayMinutes: Int
        var cooldownMinutes: Int?
        var onlyIfIncomplete: Bool
        var enabled: Bool
        /// ARRIVE only; 0: none.
        var minDwellMinutes = 0
    }

    /// `repeatValue` as sent: 0 (left out) is NONE, as the plan reads an activity with no repeat.
    static func activity(title: String, repeatValue: Int, priority: UInt32) -> Result<
        (title: String, repeat: Recurrence, priority: Int), RPCError
    > {
        var violations: [FieldViolation] = []
        let title = FieldChecks.trimmed(title, field: "title", characters: 1...Self.maxTitleCharacters)
        if case .failure(let violation) = title { violations.append(violation) }
        let `repeat` = repeatValue == 0 ? Recurrence.once : Recurrence(rawValue: repeatValue)
        if `repeat` == nil {
            violations.append(FieldViolation(field: "repeat", description: "must be NONE or DAILY"))
        }
        let priority = priority == 0 ? Self.defaultPriority : Int(priority)
        if !Self.priorities.contains(priority) {
            violations.append(FieldViolation(field: "priority", description: "must be 1 to 3 (is \(priority))"))
        }
        guard violations.isEmpty, case .success(let title) = title, let `repeat` else {
            return .failure(.invalidArgument(violations))
        }
        return .success((title, `repeat`, priority))
    }

    /// Every violation of a SetLocationRule request at once.
    static func rule(_ request: RuleDraft) -> Result<Rule, RPCError> {
        var violations: [FieldViolation] = []
        let place = request.place ?? RuleDraft.Place()
        let label = FieldChecks.trimmed(
            place.label,
            field: "place.label",
            characters: 1...Self.maxLabelCharacters
        )
        if case .failure(let violation) = label { violations.append(violation) }
        violations += Self.coordinateViolations(
            latitude: place.latitude,
            longitude: place.longitude,
            prefix: "place"
        )
        if request.place == nil { violations.append(FieldViolation(field: "place", description: "is required")) }
        let radius = place.radiusMeters == 0 ? Self.defaultRadius : Int(place.radiusMeters)
        if !Self.radius.contains(radius) {
            violations.append(FieldViolation(field: "place.radius_m", description: "must be 25 to 5000 (is \(radius))"))
        }
        if request.trigger == nil {
            violations.append(FieldViolation(field: "trigger", description: "must be ARRIVE or LEAVE"))
        }
        if !Self.delayMinutes.contains(Int(request.delayMinutes)) {
            violations.append(
                FieldViolation(field: "delay_minutes", description: "must be 0 to 120 (is \(request.delayMinutes))")
            )
        }
        if let cooldown = request.cooldownMinutes, !Self.cooldownMinutes.contains(Int(cooldown)) {
            violations.append(
                FieldViolation(
                    field: "cooldown_minutes",
                    description: "must be 1 to 1440 (is \(cooldown))"
                )
            )
        }
        if !Self.minDwellMinutes.contains(Int(request.minDwellMinutes)) {
            violations.append(
                FieldViolation(
                    field: "min_dwell_minutes",
                    description: "must be 0 to 120 (is \(request.minDwellMinutes))"
                )
            )
        } else if request.minDwellMinutes > 0 && request.trigger == .leave {
            violations.append(
                FieldViolation(
                    field: "min_dwell_minutes",
                    description: "applies to ARRIVE only (a stay after arriving)"
                )
            )
        }
        guard violations.isEmpty, case .success(let label) = label, let trigger = request.trigger else {
            return .failure(.invalidArgument(violations))
        }
        return .success(
            Rule(
                label: label,
                latitude: place.latitude,
                longitude: place.longitude,
                radiusMeters: radius,
                trigger: trigger,
                delayMinutes: Int(request.delayMinutes),
                cooldownMinutes: request.cooldownMinutes.map { Int($0) },
                onlyIfIncomplete: request.onlyIfIncomplete ?? true,
                enabled: request.enabled ?? true,
                minDwellMinutes: Int(request.minDwellMinutes)
            )
        )
    }

    static func coordinateViolations(latitude: Double, longitude: Double, prefix: String) -> [FieldViolation] {
        var violations: [FieldViolation] = []
        if !latitude.isFinite || !(-90...90).contains(latitude) {
            violations.append(FieldViolation(field: "\(prefix).latitude", description: "must be -90 to 90"))
        }
        if !longitude.isFinite || !(-180...180).contains(longitude) {
            violations.append(FieldViolation(field: "\(prefix).longitude", description: "must be -180 to 180"))
        }
        return violations
    }

    /// Great-circle distance in metres (haversine, mean Earth radius).
    static func distance(_ a: (latitude: Double, longitude: Double), _ b: (latitude: Double, longitude: Double))
        -> Double
    {
        let earth = 6_371_008.8
        let radians = Double.pi / 180
        let dLat = (b.latitude - a.latitude) * radians
        let dLon = (b.longitude - a.longitude) * radians
        let h =
            sin(dLat / 2) * sin(dLat / 2)
            + cos(a.latitude * radians) * cos(b.latitude * radians) * sin(dLon / 2) * sin(dLon / 2)
        return 2 * earth * asin(min(1, sqrt(h)))
    }

    // MARK: Deciding

    struct Event: Sendable {
        var trigger: Trigger
        var occurredAt: Date
        var position: (latitude: Double, longitude: Double, accuracy: Double)?
        var foreground: Bool
    }

    /// An earlier offer of the same user, as the decision needs it.
    struct PastOffer: Sendable {
        var deliverAt: Date
        /// Delivered, or still to be: not cancelled before its delivery (counts for spacing).
        var seen: Bool
        /// Made by a snooze: spaced like any other, but outside the daily cap.
        var snoozed: Bool
    }

    /// What the store knows when an event arrives.
    struct Ledger: Sendable {
        var eventSeen: Bool
        var repeatKind: Recurrence
        var lastCompletedAt: Date?
        /// The user's offers from two days before the event to two days after its delivery.
        var offers: [PastOffer]
        /// When the activity's nearest events before and after this one happened, of those that
        /// came as far as the cooldown (an offer made, or suppressed by the cooldown or a later
        /// check): the plan's ledger keeps the last event per activity, offered or not.
        var recentEvents: [Date] = []
        /// What the phone allows the app, as last reported.
        var permissions = Permissions()
        /// For an arrival with a minimum dwell: a leave of the activity reported within it (events
        /// can arrive out of order).
        var leftWithinDwell = false
    }

    enum Decision: Sendable, Equatable {
        case offer(deliverAt: Date, channel: OfferChannel)
        case suppressed(SuppressionReason, String)
    }

    /// The checks, in order; the first that fails decides.
    static func decide(
        event: Event,
        rule: Rule?,
        preferences: Preferences,
        ledger: Ledger,
        now: Date
    ) -> Decision {
        guard preferences.enabled else { return .suppressed(.disabled, "offers are turned off") }
        if let missing = Self.missingPermission(ledger.permissions, foreground: event.foreground) {
            return .suppressed(.permissionMissing, missing)
        }
        guard let rule else { return .suppressed(.noRule, "the activity has no location rule") }
        guard rule.enabled else { return .suppressed(.ruleDisabled, "the activity's rule is turned off") }
        guard event.trigger == rule.trigger else {
            return .suppressed(
                .triggerMismatch,
                "the rule offers on \(rule.trigger.name), not \(event.trigger.name)"
            )
        }
        if event.occurredAt > now {
            return .suppressed(.staleEvent, "the event is in the future")
        }
        if now.timeIntervalSince(event.occurredAt) > Self.staleAfter {
            return .suppressed(.staleEvent, "the event occurred more than 30 minutes ago")
        }
        if ledger.eventSeen { return .suppressed(.duplicateEvent, "this client_event_id was reported before") }
        if let position = event.position {
            let distance = Self.distance(
                (position.latitude, position.longitude),
                (rule.latitude, rule.longitude)
            )
            let radius = Double(rule.radiusMeters)
            switch rule.trigger {
            case .arrive where distance + position.accuracy > radius - Self.confirmationMargin:
                return .suppressed(.notConfirmed, "the position is not surely inside the place")
            case .leave where distance - position.accuracy < radius + Self.confirmationMargin:
                return .suppressed(.notConfirmed, "the position is not surely outside the place")
            case .arrive, .leave: break
            }
        }
        if rule.minDwellMinutes > 0 && ledger.leftWithinDwell {
            return .suppressed(
                .dwellNotMet,
                "a leave was reported within the rule's minimum dwell of \(rule.minDwellMinutes) minutes"
            )
        }
        let cooldown = TimeInterval((rule.cooldownMinutes ?? preferences.defaultCooldownMinutes) * 60)
        // From the last event seen, offered or not (an offer's event is one): a boundary that
        // keeps bouncing through quiet hours (or past the cap) makes no offer the moment they end.
        // A stay shorter than the minimum dwell is not one of them.
        if ledger.recentEvents.contains(where: { abs($0.timeIntervalSince(event.occurredAt)) < cooldown }) {
            return .suppressed(
                .eventCooldown,
                "this activity had an event less than \(Int(cooldown / 60)) minutes before, offered or not"
            )
        }
        // Held at least as long as the minimum dwell, so that a short stay can drop it.
        let deliverAt = event.occurredAt.addingTimeInterval(
            TimeInterval(max(rule.delayMinutes, rule.minDwellMinutes) * 60)
        )
        let zone = preferences.zone
        // "Done today" is judged on the day the offer would arrive, like the daily cap.
        let day = LocalDate(deliverAt, in: zone)
        if rule.onlyIfIncomplete,
            Self.isDone(ledger.repeatKind, lastCompletedAt: ledger.lastCompletedAt, on: day, in: zone)
        {
            return .suppressed(.alreadyDone, "the activity is done")
        }
        if let quiet = preferences.quietHours, quiet.contains(TaskRules.minuteOfDay(deliverAt, in: zone)) {
            return .suppressed(.quietHours, "it would arrive in quiet hours")
        }
        let seen = ledger.offers.filter(\.seen)
        let capped = seen.filter { !$0.snoozed && LocalDate($0.deliverAt, in: zone) == day }
        if capped.count >= preferences.dailyCap {
            return .suppressed(.dailyCap, "\(preferences.dailyCap) offers already on \(day)")
        }
        let spacing = TimeInterval(preferences.minSpacingMinutes * 60)
        if seen.contains(where: { abs($0.deliverAt.timeIntervalSince(deliverAt)) < spacing }) {
            return .suppressed(.minSpacing, "another offer is less than \(preferences.minSpacingMinutes) minutes away")
        }
        return .offer(deliverAt: deliverAt, channel: event.foreground ? .inApp : .notification)
    }

    /// Why the phone cannot take an offer, or nil. Background offers are notifications, which need
    /// location "always" (geofences in the background) and notifications allowed; foreground ones
    /// are shown in the app, which needs location and nothing more (the plan's open question,
    /// decided so). A permission never reported is taken as allowed.
    static func missingPermission(_ permissions: Permissions, foreground: Bool) -> String? {
        if permissions.location == .denied { return "location access is denied on the phone" }
        if foreground { return nil }
        if permissions.location == .whenInUse {
            return "background offers need location access \"always\", not only while the app is in use"
        }
        if permissions.notifications == .denied { return "background offers need notifications, denied on the phone" }
        return nil
    }

    /// Whether a leave event may end a stay at `rule`'s place: the rule offers on arriving, with a
    /// minimum dwell, and the leave is as trustworthy as an event that makes an offer: not from
    /// the future, not stale, and, with a position, surely outside the place.
    static func leaveCounts(_ event: Event, rule: Rule, now: Date) -> Bool {
        guard event.trigger == .leave, rule.trigger == .arrive, rule.minDwellMinutes > 0,
            event.occurredAt <= now, now.timeIntervalSince(event.occurredAt) <= Self.staleAfter
        else { return false }
        guard let position = event.position else { return true }
        let distance = Self.distance((position.latitude, position.longitude), (rule.latitude, rule.longitude))
        return distance - position.accuracy >= Double(rule.radiusMeters) + Self.confirmationMargin
    }

    /// Whether a leave at `leftAt` ends a stay begun at `arrivedAt` within `rule`'s minimum dwell,
    /// so that the arrival's held offer is dropped.
    static func endsStayWithinDwell(leftAt: Date, arrivedAt: Date, rule: Rule) -> Bool {
        rule.trigger == .arrive && rule.minDwellMinutes > 0 && arrivedAt <= leftAt
            && leftAt.timeIntervalSince(arrivedAt) < TimeInterval(rule.minDwellMinutes * 60)
    }

    /// Done for good (NONE), or done on `day` in `zone` (DAILY: the last completion fell on it).
    static func isDone(
        _ kind: Recurrence,
        lastCompletedAt: Date?,
        on day: LocalDate,
        in zone: TimeZone
    ) -> Bool {
        guard let lastCompletedAt else { return false }
        return kind == .daily ? LocalDate(lastCompletedAt, in: zone) == day : true
    }

    /// The offer's words, in `language`.
    static func texts(title: String, language: UserLanguage) -> (title: String, body: String) {
        (
            TaskText.catalog.text(.offerTitle, language),
            TaskText.catalog.text(.offerBody, language, ["title": title])
        )
    }

    static let actions = OfferAction.allCases

    /// Whether a place is worth one of the phone's geofences now: its rule is on, and its
    /// activity is not done already (done today, for DAILY) unless the rule offers anyway.
    static func geofenceCanFire(ruleEnabled: Bool, onlyIfIncomplete: Bool, done: Bool) -> Bool {
        ruleEnabled && !(onlyIfIncomplete && done)
    }

    /// What an open offer is at `now`.
    static func offerState(answered: Bool, cancelled: Bool, deliverAt: Date, now: Date) -> OfferState {
        if answered { return .answered }
        if cancelled { return .cancelled }
        if now < deliverAt { return .scheduled }
        return deliverAt > Self.expiredBy(now) ? .pending : .expired
    }

    /// Offers delivered at or before this have expired by `now` (unanswered ones too).
    static func expiredBy(_ now: Date) -> Date {
        now.addingTimeInterval(-Self.offerLifetime)
    }
}
