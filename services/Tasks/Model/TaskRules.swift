import Foundation
import HearthCore
import HearthRPC

/// The rules of tasks and their prompts, as pure functions: no clock, no storage.
enum TaskRules {
    static let maxTitleCharacters = 200
    static let maxCheckInTimes = 8
    static let durationDays = 1...90
    /// How far ahead a task may start.
    static let maxDaysAhead = 365
    static let maxClientRequestIDCharacters = 128
    static let maxResponseCharacters = 5000
    static let scores = 1...5
    static let maxInsights = 10
    static let maxInsightCharacters = 500
    static let maxQuestionTypeCharacters = 50
    /// Extra check-ins (RecordCheckIn) one task may hold.
    static let maxExtraCheckIns = 1000
    /// Tasks not yet ended nor cancelled, per user.
    static let maxActiveTasks = 50
    /// Tasks a user may make in any 24 hours (cancelled ones count): each stores up to 720
    /// prompts, and making and cancelling in a loop would otherwise be bounded only by the
    /// gateway's rate.
    static let maxTasksPerDay = 100
    /// A title's UTF-8 bytes at most (12 a character on average: CJK, most emoji): every
    /// prompt quotes it twice, and ListPrompts answers all of a task's up to 720 prompts in one
    /// frame (4 MiB).
    static let maxTitleBytes = 2_400
    /// A prompt is answerable for this long after its time.
    static let promptLifetime: TimeInterval = 24 * 3600
    static let promptPriority = 0.7
    static let pendingLimit = 1...100
    static let defaultPendingLimit = 10

    /// One daily check-in time: local hour and minute, and the part of the day it falls in.
    struct DailyTime: Hashable, Sendable, Comparable {
        var hour: Int
        var minute: Int
        /// Whether it was asked for as a preset (kept so the task shows what was chosen).
        var preset: PartOfDay?

        var partOfDay: PartOfDay { self.preset ?? TaskRules.partOfDay(hour: self.hour) }
        var text: String { "\(self.hour.zeroPadded(to: 2)):\(self.minute.zeroPadded(to: 2))" }
        var minuteOfDay: Int { self.hour * 60 + self.minute }

        static func < (lhs: DailyTime, rhs: DailyTime) -> Bool {
            (lhs.hour, lhs.minute) < (rhs.hour, rhs.minute)
        }

        static func == (lhs: DailyTime, rhs: DailyTime) -> Bool {
            (lhs.hour, lhs.minute) == (rhs.hour, rhs.minute)
        }

        func hash(into hasher: inout Hasher) {
            hasher.combine(self.hour)
            hasher.combine(self.minute)
        }

        /// How it is stored: the preset's name or "HH:MM".
        var storedForm: String { self.preset.map(TaskRules.presetName) ?? self.text }

        init(hour: Int, minute: Int, preset: PartOfDay? = nil) {
            self.hour = hour
            self.minute = minute
            self.preset = preset
        }

        init?(storedForm: String) {
            if let preset = TaskRules.presets.first(where: { TaskRules.presetName($0.key) == storedForm }) {
                self = preset.value
            } else if let time = TaskRules.clockTime(storedForm) {
                self = time
            } else {
                return nil
            }
        }
    }

    static let presets: [PartOfDay: DailyTime] = [
        .morning: DailyTime(hour: 9, minute: 0, preset: .morning),
        .afternoon: DailyTime(hour: 14, minute: 0, preset: .afternoon),
        .evening: DailyTime(hour: 19, minute: 0, preset: .evening),
        .lateNight: DailyTime(hour: 22, minute: 0, preset: .lateNight),
    ]

    static func presetName(_ part: PartOfDay) -> String {
        switch part {
        case .morning: "MORNING"
        case .afternoon: "AFTERNOON"
        case .evening: "EVENING"
        case .lateNight: "LATE_NIGHT"
        }
    }

    /// The part of the day a local hour belongs to.
    static func partOfDay(hour: Int) -> PartOfDay {
        switch hour {
        case 5..<12: .morning
        case 12..<17: .afternoon
        case 17..<22: .evening
        default: .lateNight
        }
    }

    /// Minutes after local midnight that the clocks in `zone` show at `instant`.
    static func minuteOfDay(_ instant: Date, in zone: TimeZone) -> Int {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        let parts = calendar.dateComponents([.hour, .minute], from: instant)
        return parts.hour! * 60 + parts.minute!
    }

    /// "HH:MM" (two digits each, 00:00-23:59).
    static func clockTime(_ text: String) -> DailyTime? {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, parts.allSatisfy({ $0.count == 2 && $0.isASCIIDigits }),
            let hour = Int(parts[0]), let minute = Int(parts[1]), (0..<24).contains(hour), (0..<60).contains(minute)
        else { return nil }
        return DailyTime(hour: hour, minute: minute)
    }

    // MARK: Creating a task

    struct NewTask: Sendable, Equatable {
        var title: String
        var times: [DailyTime]
        var durationDays: Int
        var timeZone: String
        var zone: TimeZone
        var startDate: LocalDate
        /// The language its prompts are written in.
        var language: UserLanguage

        var endDate: LocalDate { self.startDate.adding(days: self.durationDays - 1) }
        /// When its last day ends in its zone: from then on it is COMPLETED.
        var endsAt: Date { self.endDate.adding(days: 1).start(in: self.zone) }
    }

    /// Whether `request` can be a retry of the CreateTask that made a task with this title,
    /// length and zone (under the same client_request_id): a request that differs in them is a
    /// client reusing an id, not retrying, and gets no task it did not ask for.
    static func canBeRetry(
        _ request: TaskDraft,
        of task: (title: String, durationDays: Int, timeZone: String)
    ) -> Bool {
        request.title.trimmingCharacters(in: .whitespacesAndNewlines) == task.title
            && request.durationDays == task.durationDays && request.timeZone == task.timeZone
    }

    /// Every violation of a CreateTask request at once; `now` gives "today" in its zone.
    static func newTask(_ request: TaskDraft, now: Date) -> Result<NewTask, RPCError> {
        var violations: [FieldViolation] = []
        let title = FieldChecks.trimmed(
            request.title,
            field: "title",
            characters: 1...Self.maxTitleCharacters,
            maxBytes: Self.maxTitleBytes
        )
        if case .failure(let violation) = title { violations.append(violation) }

        var times: [DailyTime] = []
        if request.checkInTimes.isEmpty {
            violations.append(FieldViolation(field: "check_in_times", description: "needs at least one time"))
        } else if request.checkInTimes.count > Self.maxCheckInTimes {
            violations.append(
                FieldViolation(
                    field: "check_in_times",
                    description: "has \(request.checkInTimes.count) times; at most \(Self.maxCheckInTimes)"
                )
            )
        }
        for (index, time) in request.checkInTimes.enumerated() {
            let field = "check_in_times[\(index)]"
            switch Self.dailyTime(time, field: field) {
            case .failure(let violation):
                violations.append(violation)
            case .success(let daily):
                if let earlier = times.firstIndex(of: daily) {
                    violations.append(
                        FieldViolation(field: field, description: "\(daily.text) is already check_in_times[\(earlier)]")
                    )
                }
                times.append(daily)
            }
        }

        let days = request.durationDays
        if !Self.durationDays.contains(days) {
            violations.append(
                FieldViolation(
                    field: "duration_days",
                    description:
                        "must be \(Self.durationDays.lowerBound) to \(Self.durationDays.upperBound) (is \(days))"
                )
            )
        }

        if !FieldChecks.fits(request.clientRequestID, characters: Self.maxClientRequestIDCharacters) {
            violations.append(
                FieldViolation(
                    field: "client_request_id",
                    description: "must have at most \(Self.maxClientRequestIDCharacters) characters"
                )
            )
        }

        let zone = FieldChecks.zone(request.timeZone)
        var start: LocalDate?
        switch zone {
        case .failure(let violation):
            violations.append(violation)
            // Without a zone there is no "today" to compare with, but the date's form is
            // still checked: every bad field is named at once.
            if !request.startDate.isEmpty,
                case .failure(let violation) = FieldChecks.date(request.startDate, field: "start_date")
            {
                violations.append(violation)
            }
        case .success(let zone):
            let today = LocalDate(now, in: zone)
            if request.startDate.isEmpty {
                start = today
            } else {
                switch FieldChecks.date(request.startDate, field: "start_date") {
                case .failure(let violation):
                    violations.append(violation)
                case .success(let date) where date < today:
                    violations.append(
                        FieldViolation(
                            field: "start_date",
                            description: "\(date) is in the past; today is \(today) in \(request.timeZone)"
                        )
                    )
                case .success(let date) where today.days(to: date) > Self.maxDaysAhead:
                    violations.append(
                        FieldViolation(field: "start_date", description: "at most \(Self.maxDaysAhead) days ahead")
                    )
                case .success(let date):
                    start = date
                }
            }
        }
        guard violations.isEmpty, case .success(let title) = title, case .success(let zone) = zone, let start else {
            return .failure(.invalidArgument(violations))
        }
        return .success(
            NewTask(
                title: title,
                times: times,
                durationDays: days,
                timeZone: request.timeZone,
                zone: zone,
                startDate: start,
                language: request.language
            )
        )
    }

    static func dailyTime(_ time: RequestedTime, field: String) -> Result<DailyTime, FieldViolation> {
        switch time {
        case .preset(let preset):
            guard let preset, let daily = Self.presets[preset] else {
                return .failure(
                    FieldViolation(
                        field: field,
                        description: "preset must be MORNING, AFTERNOON, EVENING or LATE_NIGHT"
                    )
                )
            }
            return .success(daily)
        case .custom(let text):
            guard let daily = Self.clockTime(text) else {
                return .failure(FieldViolation(field: field, description: "'\(text)' is not a local time HH:MM"))
            }
            return .success(daily)
        case .missing:
            return .failure(FieldViolation(field: field, description: "needs a preset or a custom HH:MM"))
        }
    }

    // MARK: Prompts

    /// A prompt to store: one per day and time, not yet answered.
    struct PlannedPrompt: Sendable, Equatable {
        var day: Int
        var localDate: LocalDate
        var time: DailyTime
        var scheduledAt: Date
        var expiresAt: Date
        var question: String
        var context: String
        var questionType: String
    }

    /// One prompt per day and time, at that local time on that local day, in time order;
    /// times already past at `now` are skipped. A local time in a DST gap moves to the first
    /// valid minute after it (and is dropped when another of the day's times is already
    /// there); one that occurs twice is its first occurrence.
    static func prompts(for task: NewTask, now: Date) -> [PlannedPrompt] {
        let times = task.times.sorted()
        var prompts: [PlannedPrompt] = []
        prompts.reserveCapacity(task.durationDays * times.count)
        for offset in 0..<task.durationDays {
            let date = task.startDate.adding(days: offset)
            var taken: Set<Date> = []
            for time in times {
                let at = date.instant(hour: time.hour, minute: time.minute, in: task.zone)
                // Two times the clocks skip (02:00 and 02:30 on a spring-forward night) land on
                // the same minute: one prompt, not two at once.
                guard at >= now, taken.insert(at).inserted else { continue }
                let texts = PromptTexts(
                    title: task.title,
                    part: time.partOfDay,
                    day: offset + 1,
                    of: task.durationDays,
                    language: task.language
                )
                prompts.append(
                    PlannedPrompt(
                        day: offset + 1,
                        localDate: date,
                        time: time,
                        scheduledAt: at,
                        expiresAt: at.addingTimeInterval(Self.promptLifetime),
                        question: texts.question,
                        context: texts.context,
                        questionType: texts.questionType
                    )
                )
            }
        }
        return prompts
    }

    /// What a stored prompt has become (only open prompts change with time).
    enum Status: String, Sendable {
        case open, responded, dismissed, cancelled
    }

    static func state(_ status: Status, scheduledAt: Date, expiresAt: Date, now: Date) -> PromptState {
        switch status {
        case .responded: .responded
        case .dismissed: .dismissed
        case .cancelled: .cancelled
        case .open where now < scheduledAt: .scheduled
        case .open where now < expiresAt: .due
        case .open: .missed
        }
    }

    static func taskState(cancelledAt: Date?, endsAt: Date, now: Date) -> TaskState {
        if cancelledAt != nil { return .cancelled }
        return now < endsAt ? .active : .completed
    }
}
