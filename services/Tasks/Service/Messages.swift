import Foundation
import HearthContracts
import HearthCore
import HearthRPC
import SwiftProtobuf

extension TaskRecord {
    func message(now: Date) -> Hearth_Tasks_V1_Task {
        var task = Hearth_Tasks_V1_Task()
        task.id = self.id
        task.title = self.title
        task.checkInTimes = self.checkInTimes.split(separator: ",").compactMap {
            TaskRules.DailyTime(storedForm: String($0))
        }.map { time in
            .with { message in
                if let preset = time.preset { message.preset = .init(preset) } else { message.custom = time.text }
            }
        }
        task.durationDays = UInt32(self.durationDays)
        task.timeZone = self.timeZone
        task.startDate = self.startDate
        task.endDate = self.endDate
        task.state = .init(TaskRules.taskState(cancelledAt: self.cancelledAt, endsAt: self.endsAt, now: now))
        task.createdAt = Google_Protobuf_Timestamp(millisecondsOf: self.createdAt)
        if let cancelledAt = self.cancelledAt {
            task.cancelledAt = Google_Protobuf_Timestamp(millisecondsOf: cancelledAt)
        }
        return task
    }
}

extension PromptRecord {
    func message(now: Date) -> Hearth_Tasks_V1_Prompt {
        var prompt = Hearth_Tasks_V1_Prompt()
        prompt.id = self.id
        prompt.taskID = self.taskID
        prompt.day = UInt32(self.day)
        prompt.localDate = self.localDate
        prompt.localTime = self.localTime
        prompt.timeOfDay = Hearth_Tasks_V1_TimeOfDay(rawValue: self.timeOfDay) ?? .unspecified
        prompt.scheduledAt = Google_Protobuf_Timestamp(millisecondsOf: self.scheduledAt)
        prompt.expiresAt = Google_Protobuf_Timestamp(millisecondsOf: self.expiresAt)
        prompt.question = self.question
        prompt.context = self.context
        prompt.questionType = self.questionType
        prompt.priority = self.priority
        prompt.state = .init(self.state(now: now))
        if let respondedAt = self.respondedAt {
            prompt.respondedAt = Google_Protobuf_Timestamp(millisecondsOf: respondedAt)
        }
        if let dismissedAt = self.dismissedAt {
            prompt.dismissedAt = Google_Protobuf_Timestamp(millisecondsOf: dismissedAt)
        }
        return prompt
    }

    func state(now: Date) -> PromptState {
        TaskRules.state(self.promptStatus, scheduledAt: self.scheduledAt, expiresAt: self.expiresAt, now: now)
    }

    func timeHasCome(at now: Date) -> Bool {
        TaskRules.timeHasCome(scheduledAt: self.scheduledAt, dismissedAt: self.dismissedAt, now: now)
    }
}

extension CheckInRecord {
    var message: Hearth_Tasks_V1_CheckIn {
        var checkIn = Hearth_Tasks_V1_CheckIn()
        checkIn.id = self.id
        checkIn.taskID = self.taskID
        checkIn.promptID = self.promptID ?? ""
        checkIn.recordedAt = Google_Protobuf_Timestamp(millisecondsOf: self.recordedAt)
        checkIn.localDate = self.localDate
        checkIn.timeOfDay = Hearth_Tasks_V1_TimeOfDay(rawValue: self.timeOfDay) ?? .unspecified
        checkIn.question = self.question
        checkIn.questionType = self.questionType
        checkIn.responseText = self.responseText
        if let energy = self.energy { checkIn.energy = UInt32(energy) }
        if let mood = self.mood { checkIn.mood = UInt32(mood) }
        if let focus = self.focus { checkIn.focus = UInt32(focus) }
        checkIn.insights = self.insightList
        return checkIn
    }
}

extension TaskRules.Summary {
    var message: Hearth_Tasks_V1_TaskSummary {
        var summary = Hearth_Tasks_V1_TaskSummary()
        summary.promptsScheduled = UInt32(self.scheduled)
        summary.answered = UInt32(self.answered)
        summary.missed = UInt32(self.missed)
        summary.dismissed = UInt32(self.dismissed)
        summary.responseRate = self.responseRate
        summary.days = self.days.map { day in
            .with {
                $0.localDate = day.localDate
                $0.checkIns = UInt32(day.checkIns)
                if let energy = day.energy { $0.energy = energy }
                if let mood = day.mood { $0.mood = mood }
                if let focus = day.focus { $0.focus = focus }
            }
        }
        return summary
    }
}

/// The answer fields RespondToPrompt and RecordCheckIn share.
protocol AnswerFields {
    var responseText: String { get }
    var hasEnergy: Bool { get }
    var energy: UInt32 { get }
    var hasMood: Bool { get }
    var mood: UInt32 { get }
    var hasFocus: Bool { get }
    var focus: UInt32 { get }
    var hasQuestionType: Bool { get }
    var questionType: String { get }
    var insights: [String] { get }
}

extension Hearth_Tasks_V1_RespondToPromptRequest: AnswerFields {}
extension Hearth_Tasks_V1_RecordCheckInRequest: AnswerFields {}

extension TaskRules {
    /// A request's answer, checked (every violation at once).
    static func answer(_ request: some AnswerFields) -> Result<Answer, RPCError> {
        Self.answer(
            text: request.responseText,
            energy: request.hasEnergy ? request.energy : nil,
            mood: request.hasMood ? request.mood : nil,
            focus: request.hasFocus ? request.focus : nil,
            questionType: request.hasQuestionType ? request.questionType : nil,
            insights: request.insights
        )
    }
}

// MARK: Between the rules' words and the protobuf messages

extension TaskDraft {
    init(_ request: Hearth_Tasks_V1_CreateTaskRequest, language: UserLanguage) {
        self.init(
            title: request.title,
            checkInTimes: request.checkInTimes.map { time in
                switch time.time {
                case .preset(let preset): .preset(PartOfDay(rawValue: preset.rawValue))
                case .custom(let text): .custom(text)
                case nil: .missing
                }
            },
            durationDays: Int(request.durationDays),
            timeZone: request.timeZone,
            startDate: request.startDate,
            clientRequestID: request.clientRequestID,
            language: language
        )
    }
}

extension Hearth_Tasks_V1_TimeOfDay {
    init(_ part: PartOfDay) {
        // The same numbers: a part of the day is stored by its wire number.
        self = Self(rawValue: part.rawValue) ?? .unspecified
    }
}

extension Hearth_Tasks_V1_TaskState {
    init(_ state: TaskState) {
        self =
            switch state {
            case .active: .active
            case .completed: .completed
            case .cancelled: .cancelled
            }
    }

    /// The state a listing asks for; nil for every state.
    var filter: TaskState? {
        switch self {
        case .active: .active
        case .completed: .completed
        case .cancelled: .cancelled
        default: nil
        }
    }
}

extension Hearth_Tasks_V1_PromptState {
    init(_ state: PromptState) {
        self =
            switch state {
            case .scheduled: .scheduled
            case .due: .due
            case .responded: .responded
            case .missed: .missed
            case .dismissed: .dismissed
            case .cancelled: .cancelled
            }
    }
}
