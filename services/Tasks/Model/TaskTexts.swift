import HearthCore

/// What tasks writes for people, in the user's language: the prompts' questions and context
/// lines and their push's title (in the language the task was created in), and the "Mark done?"
/// offers (in the language of the call that reads them).
enum TaskText: CaseIterable, Sendable {
    case promptPushTitle
    case morningQuestion
    case afternoonQuestion
    case eveningQuestion
    case lateNightQuestion
    /// "Day 2 of 3: morning check-in for “…”".
    case promptContext
    case morning
    case afternoon
    case evening
    case lateNight
    case offerTitle
    case offerBody

    static let catalog = TextCatalog<TaskText>([
        .promptPushTitle: [
            .english: "Time to check in", .simplifiedChinese: "该记录一下了", .traditionalChinese: "該記錄一下了",
        ],
        .morningQuestion: [
            .english: "Good morning! Let's check in on “{title}”. What feels most important about it today?",
            .simplifiedChinese: "早上好！来看看“{title}”。今天关于它，什么最重要？",
            .traditionalChinese: "早安！來看看「{title}」。今天關於它，什麼最重要？",
        ],
        .afternoonQuestion: [
            .english: "Good afternoon! How is “{title}” sitting with you so far today?",
            .simplifiedChinese: "下午好！到目前为止，你今天对“{title}”感觉如何？",
            .traditionalChinese: "午安！到目前為止，你今天對「{title}」感覺如何？",
        ],
        .eveningQuestion: [
            .english: "Good evening! Looking back on today, what did you notice about “{title}”?",
            .simplifiedChinese: "晚上好！回顾今天，你对“{title}”有什么发现？",
            .traditionalChinese: "晚上好！回顧今天，你對「{title}」有什麼發現？",
        ],
        .lateNightQuestion: [
            .english: "Before you rest: any last thoughts on “{title}” tonight?",
            .simplifiedChinese: "休息之前：今晚对“{title}”还有什么想法吗？",
            .traditionalChinese: "休息之前：今晚對「{title}」還有什麼想法嗎？",
        ],
        .promptContext: [
            .english: "Day {day} of {days}: {part} check-in for “{title}”",
            .simplifiedChinese: "第 {day} 天（共 {days} 天）：“{title}”的{part}记录",
            .traditionalChinese: "第 {day} 天（共 {days} 天）：「{title}」的{part}記錄",
        ],
        .morning: [.english: "morning", .simplifiedChinese: "早间", .traditionalChinese: "早晨"],
        .afternoon: [.english: "afternoon", .simplifiedChinese: "午后", .traditionalChinese: "午後"],
        .evening: [.english: "evening", .simplifiedChinese: "晚间", .traditionalChinese: "晚間"],
        .lateNight: [.english: "late-night", .simplifiedChinese: "深夜", .traditionalChinese: "深夜"],
        .offerTitle: [.english: "Mark done?", .simplifiedChinese: "标记为完成？", .traditionalChinese: "標記為完成？"],
        .offerBody: [
            .english: "Did you finish '{title}'?",
            .simplifiedChinese: "你完成“{title}”了吗？",
            .traditionalChinese: "你完成「{title}」了嗎？",
        ],
    ])
}
